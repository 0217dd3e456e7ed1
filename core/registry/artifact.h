// Model artifacts on disk: validation, reading one version directory, and
// publishing a new version.
//
// Layout (docs/models.md, after TensorFlow Serving's base path):
//   <registry>/<name>/<version>/model.pb   binary v1::ModelArtifact
//   <registry>/<name>/<version>/MANIFEST   binary v1::ModelManifest, written
//   last
// where <version> is a positive integer without sign or leading zeros. A
// version directory without MANIFEST is incomplete and never loaded.
#ifndef METAOPT_CORE_REGISTRY_ARTIFACT_H_
#define METAOPT_CORE_REGISTRY_ARTIFACT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/registry/servable.h"
#include "core/space/search_space.h"
#include "metaopt/v1/model.pb.h"

namespace metaopt::registry {

// The artifact layout this build reads and writes
// (v1::ModelArtifact::format_version).
inline constexpr int32_t kCurrentFormatVersion = 1;
inline constexpr char kArtifactFileName[] = "model.pb";
inline constexpr char kManifestFileName[] = "MANIFEST";
// Artifacts larger than this are refused (protobuf parses at most 2 GiB).
inline constexpr int64_t kMaxArtifactBytes = int64_t{1} << 30;
inline constexpr int kMaxModelNameLength = 128;

// INVALID_ARGUMENT unless `name` matches [A-Za-z0-9][A-Za-z0-9._-]{0,127}.
// `field` names the offending input in the message.
absl::Status ValidateModelName(std::string_view name,
                               std::string_view field = "model name");

// The version a version directory is named after: a positive decimal integer
// without sign or leading zeros that fits int64 ("1", "42"; not "0", "01",
// "+1", "1.0"). nullopt otherwise.
std::optional<int64_t> ParseVersionDirName(std::string_view dir_name);

// Validates an artifact. Errors are INVALID_ARGUMENT naming the field path
// below "artifact", e.g. "artifact.tensors[2] \"w\": shape [3, 4] has 12
// elements but 11 values". Rules: format_version is kCurrentFormatVersion; kind
// is set and known; the search space is valid; every tensor has a non-empty
// unique name, non-negative dimensions whose product equals the number of
// values, and finite values; normalization constants are finite; every
// portfolio and catalogue configuration is valid in the search space.
absl::Status ValidateArtifact(const v1::ModelArtifact& artifact);

// One loaded model version, the servable the registry hands out: the
// validated artifact and, decoded from it once, the typed model its policies
// use. Immutable once built; shared as std::shared_ptr<const LoadedModel>, so
// a reader holding one keeps that version alive after a newer one replaces
// it. Thread-safe (const).
struct LoadedModel {
  // Decodes `artifact` (DecodeServable) and builds the model; the decoding
  // error if it does not decode.
  static absl::StatusOr<std::shared_ptr<const LoadedModel>> Create(
      std::string name, int64_t version, v1::ModelArtifact artifact,
      v1::ModelManifest manifest, space::SearchSpace space,
      absl::Time load_time);

  // `servable` is DecodeServable(artifact)'s (Create's); a test may leave it
  // empty for a model that no policy is built from.
  LoadedModel(std::string name, int64_t version, v1::ModelArtifact artifact,
              v1::ModelManifest manifest, space::SearchSpace space,
              absl::Time load_time, Servable servable);

  // "name@version", the form studies are bound to.
  std::string reference() const;

  const std::string name;
  const int64_t version;
  // Validated; its portfolio and catalogue are in canonical form
  // (space::SearchSpace::Canonicalize).
  const v1::ModelArtifact artifact;
  const v1::ModelManifest manifest;
  // artifact.search_space, validated.
  const space::SearchSpace space;
  const absl::Time load_time;
  // The artifact decoded into the model of its kind.
  const Servable servable;
};

// Reads and verifies the version directory `<registry_dir>/<name>/<version>`:
//   - NOT_FOUND "incomplete version: no MANIFEST" if MANIFEST is absent (also
//   if the directory is);
//   - DATA_LOSS if MANIFEST does not parse, names no plain file, the artifact
//   file is missing, its
//     size or SHA-256 differ from the manifest's, or it does not parse;
//   - INVALID_ARGUMENT if the artifact fails ValidateArtifact, does not
//     decode (DecodeServable) or its kind differs from the manifest's, or if
//     `name` / `version` are not a valid model name / version.
// Messages start with the directory path. The artifact's portfolio and
// catalogue are canonicalized.
absl::StatusOr<std::shared_ptr<const LoadedModel>> ReadModelVersion(
    const std::string& registry_dir, std::string_view name, int64_t version);

// As above, for a version directory path `.../<name>/<version>` (name and
// version are taken from the last two path components).
absl::StatusOr<std::shared_ptr<const LoadedModel>> ReadModelVersion(
    const std::string& version_dir);

// Publishes `artifact` as the next version of model `name` under `registry_dir`
// and returns that version: validates the name and the artifact, creates
// `<registry_dir>/<name>/` if needed, picks max(existing versions) + 1 (1 for a
// new model; incomplete versions count, so they are never reused), writes
// model.pb and then MANIFEST (each fsync'd) into
// `<registry_dir>/<name>/.tmp-XXXXXX`, and rename()s that directory to
// `<version>` (then fsyncs `<registry_dir>/<name>/`). Readers thus see either
// no version directory or a complete one. Safe against concurrent writers of
// the same model: a writer that loses the race for a version number retries
// with the next one.
absl::StatusOr<int64_t> WriteModelVersion(const std::string& registry_dir,
                                          std::string_view name,
                                          const v1::ModelArtifact& artifact);

}  // namespace metaopt::registry

#endif  // METAOPT_CORE_REGISTRY_ARTIFACT_H_
