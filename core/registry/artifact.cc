#include "core/registry/artifact.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/common/file_util.h"
#include "core/common/proto_time.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/registry/sha256.h"
#include "core/registry/task_design.h"

namespace metaopt::registry {
namespace {

namespace fs = std::filesystem;

std::string ErrnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

bool IsModelNameChar(char c) {
  return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
}

bool IsLowerHex(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f');
  });
}

// ---- Artifact validation ----

absl::Status ValidateTensors(const v1::ModelArtifact& artifact) {
  absl::flat_hash_map<std::string, int> seen;
  for (int i = 0; i < artifact.tensors_size(); ++i) {
    const v1::Tensor& tensor = artifact.tensors(i);
    const std::string path = absl::StrCat("artifact.tensors[", i, "]");
    if (tensor.name().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".name: empty (tensors need a name)"));
    }
    auto [it, inserted] = seen.emplace(tensor.name(), i);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ".name: duplicate \"", tensor.name(),
                       "\" (also tensors[", it->second, "])"));
    }
    const std::string named = absl::StrCat(path, " \"", tensor.name(), "\"");
    // Row-major dense: the element count is the product of the dimensions (1
    // for shape []).
    int64_t elements = 1;
    bool overflow = false;
    for (int d = 0; d < tensor.shape_size(); ++d) {
      const int64_t dim = tensor.shape(d);
      if (dim < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(named, ".shape[", d, "]: ", dim, " is negative"));
      }
      if (dim != 0 && elements > std::numeric_limits<int64_t>::max() / dim) {
        overflow = true;
      } else {
        elements *= dim;
      }
    }
    const std::string shape =
        absl::StrCat("[", absl::StrJoin(tensor.shape(), ", "), "]");
    if (overflow) {
      return absl::InvalidArgumentError(
          absl::StrCat(named, ": shape ", shape, " has too many elements"));
    }
    if (elements != tensor.values_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(named, ": shape ", shape, " has ", elements,
                       " elements but ", tensor.values_size(), " values"));
    }
    for (int v = 0; v < tensor.values_size(); ++v) {
      if (!std::isfinite(tensor.values(v))) {
        return absl::InvalidArgumentError(absl::StrCat(
            named, ".values[", v, "]: ", tensor.values(v), " is not finite"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateNormalization(const v1::ModelArtifact& artifact) {
  // Sorted, so that the first error reported does not depend on the map's
  // order.
  std::vector<std::pair<std::string, double>> entries(
      artifact.normalization().begin(), artifact.normalization().end());
  std::sort(entries.begin(), entries.end());
  for (const auto& [key, value] : entries) {
    if (key.empty()) {
      return absl::InvalidArgumentError("artifact.normalization: empty key");
    }
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact.normalization[\"", key, "\"]: ", value, " is not finite"));
    }
  }
  return absl::OkStatus();
}

// Validates `artifact`; on success returns its search space and the artifact
// with canonical portfolio and catalogue.
absl::StatusOr<std::pair<space::SearchSpace, v1::ModelArtifact>>
ValidateAndCanonicalize(const v1::ModelArtifact& artifact) {
  if (artifact.format_version() != kCurrentFormatVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact.format_version: ", artifact.format_version(),
                     " is not supported (this build reads format version ",
                     kCurrentFormatVersion, ")"));
  }
  if (artifact.kind() == v1::MODEL_KIND_UNSPECIFIED ||
      !v1::ModelKind_IsValid(artifact.kind())) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact.kind: ", artifact.kind(),
                     " is not a model kind (must be set)"));
  }
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(artifact.search_space(),
                                                      "artifact.search_space"));
  METAOPT_RETURN_IF_ERROR(ValidateTensors(artifact));
  METAOPT_RETURN_IF_ERROR(ValidateNormalization(artifact));
  v1::ModelArtifact canonical = artifact;
  for (int i = 0; i < artifact.portfolio_size(); ++i) {
    METAOPT_ASSIGN_OR_RETURN(
        *canonical.mutable_portfolio(i),
        space.Canonicalize(artifact.portfolio(i),
                           absl::StrCat("artifact.portfolio[", i, "]")));
  }
  for (int i = 0; i < artifact.catalogue_size(); ++i) {
    METAOPT_ASSIGN_OR_RETURN(
        *canonical.mutable_catalogue(i),
        space.Canonicalize(artifact.catalogue(i),
                           absl::StrCat("artifact.catalogue[", i, "]")));
  }
  if (artifact.has_task_design()) {
    METAOPT_RETURN_IF_ERROR(ValidateTaskDesign(artifact.task_design()));
    METAOPT_RETURN_IF_ERROR(ValidateDesignExtractor(artifact));
    v1::TaskDesign& design = *canonical.mutable_task_design();
    for (int t = 0; t < design.tasks_size(); ++t) {
      v1::DesignTask& task = *design.mutable_tasks(t);
      for (int i = 0; i < task.top_size(); ++i) {
        METAOPT_ASSIGN_OR_RETURN(
            *task.mutable_top(i),
            space.Canonicalize(task.top(i),
                               absl::StrCat("artifact.task_design.tasks[", t,
                                            "].top[", i, "]")));
      }
    }
  }
  return std::make_pair(std::move(space), std::move(canonical));
}

// ---- Files ----

// The bytes of a registry file, at most kMaxArtifactBytes. NOT_FOUND if it is
// missing; any other failure is DATA_LOSS (the registry on disk is damaged).
absl::StatusOr<std::string> ReadRegistryFile(const std::string& path) {
  absl::StatusOr<std::string> bytes =
      ReadFileToString(path, "", kMaxArtifactBytes);
  if (bytes.ok() || absl::IsNotFound(bytes.status())) return bytes;
  return absl::DataLossError(bytes.status().message());
}

// Writes `data` to a new file `path` (which must not exist) and fsyncs it.
absl::Status WriteNewFileSynced(const std::string& path,
                                std::string_view data) {
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create ", path, ": ", ErrnoText(errno)));
  }
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = write(fd, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      close(fd);
      return absl::InternalError(
          absl::StrCat("cannot write ", path, ": ", ErrnoText(error)));
    }
    written += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    const int error = errno;
    close(fd);
    return absl::InternalError(
        absl::StrCat("cannot fsync ", path, ": ", ErrnoText(error)));
  }
  if (close(fd) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot close ", path, ": ", ErrnoText(errno)));
  }
  return absl::OkStatus();
}

absl::Status FsyncDirectory(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open directory ", path, ": ", ErrnoText(errno)));
  }
  const int rc = fsync(fd);
  const int error = errno;
  close(fd);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("cannot fsync directory ", path, ": ", ErrnoText(error)));
  }
  return absl::OkStatus();
}

// rename() that fails with EEXIST/ENOTEMPTY instead of replacing an existing
// (empty) directory, where the platform supports it.
int RenameNoReplace(const std::string& from, const std::string& to) {
#if defined(__linux__) && defined(RENAME_NOREPLACE)
  const int rc =
      renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE);
  if (rc == 0 || (errno != EINVAL && errno != ENOSYS)) return rc;
#endif
  return rename(from.c_str(), to.c_str());
}

// The largest version directory name under `model_dir` (0 if none).
absl::StatusOr<int64_t> MaxVersion(const std::string& model_dir) {
  std::error_code ec;
  fs::directory_iterator it(model_dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot list ", model_dir, ": ", ec.message()));
  }
  int64_t max_version = 0;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (std::optional<int64_t> version =
            ParseVersionDirName(it->path().filename().string())) {
      max_version = std::max(max_version, *version);
    }
  }
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot list ", model_dir, ": ", ec.message()));
  }
  return max_version;
}

absl::StatusOr<v1::ModelManifest> ReadManifest(const std::string& dir) {
  const std::string path = absl::StrCat(dir, "/", kManifestFileName);
  absl::StatusOr<std::string> bytes = ReadRegistryFile(path);
  if (absl::IsNotFound(bytes.status())) {
    return absl::NotFoundError(
        absl::StrCat(dir, ": incomplete version: no ", kManifestFileName));
  }
  if (!bytes.ok()) return bytes.status();
  v1::ModelManifest manifest;
  if (!manifest.ParseFromString(*bytes)) {
    return absl::DataLossError(
        absl::StrCat(dir, ": ", kManifestFileName, " does not parse"));
  }
  const std::string& file = manifest.artifact();
  if (file.empty() || file == "." || file == ".." ||
      file.find('/') != std::string::npos ||
      file.find('\0') != std::string::npos) {
    return absl::DataLossError(
        absl::StrCat(dir, ": ", kManifestFileName, ": artifact \"", file,
                     "\" is not a file name inside the version directory"));
  }
  if (manifest.artifact_bytes() < 0 ||
      manifest.artifact_bytes() > kMaxArtifactBytes) {
    return absl::DataLossError(absl::StrCat(
        dir, ": ", kManifestFileName, ": artifact_bytes ",
        manifest.artifact_bytes(), " is outside [0, ", kMaxArtifactBytes, "]"));
  }
  if (manifest.artifact_sha256().size() != 64 ||
      !IsLowerHex(manifest.artifact_sha256())) {
    return absl::DataLossError(absl::StrCat(
        dir, ": ", kManifestFileName, ": artifact_sha256 \"",
        manifest.artifact_sha256(), "\" is not 64 lower-case hex digits"));
  }
  return manifest;
}

}  // namespace

absl::Status ValidateModelName(std::string_view name, std::string_view field) {
  const bool valid = !name.empty() &&
                     static_cast<int>(name.size()) <= kMaxModelNameLength &&
                     absl::ascii_isalnum(name.front()) &&
                     std::all_of(name.begin(), name.end(), IsModelNameChar);
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(field), ": \"", absl::CEscape(ToAbsl(name)),
                     "\" is not a model name (1-128 characters of "
                     "[A-Za-z0-9._-], starting with a "
                     "letter or digit)"));
  }
  return absl::OkStatus();
}

std::optional<int64_t> ParseVersionDirName(std::string_view dir_name) {
  if (dir_name.empty() || dir_name.front() == '0' ||
      !std::all_of(dir_name.begin(), dir_name.end(), absl::ascii_isdigit)) {
    return std::nullopt;
  }
  int64_t version = 0;
  if (!absl::SimpleAtoi(ToAbsl(dir_name), &version))
    return std::nullopt;  // overflow
  return version;
}

absl::Status ValidateArtifact(const v1::ModelArtifact& artifact) {
  return ValidateAndCanonicalize(artifact).status();
}

absl::StatusOr<std::shared_ptr<const LoadedModel>> LoadedModel::Create(
    std::string name, int64_t version, v1::ModelArtifact artifact,
    v1::ModelManifest manifest, space::SearchSpace space,
    absl::Time load_time) {
  METAOPT_ASSIGN_OR_RETURN(Servable servable, DecodeServable(artifact));
  return std::make_shared<const LoadedModel>(
      std::move(name), version, std::move(artifact), std::move(manifest),
      std::move(space), load_time, std::move(servable));
}

LoadedModel::LoadedModel(std::string name, int64_t version,
                         v1::ModelArtifact artifact, v1::ModelManifest manifest,
                         space::SearchSpace space, absl::Time load_time,
                         Servable servable)
    : name(std::move(name)),
      version(version),
      artifact(std::move(artifact)),
      manifest(std::move(manifest)),
      space(std::move(space)),
      load_time(load_time),
      servable(std::move(servable)) {}

std::string LoadedModel::reference() const {
  return absl::StrCat(name, "@", version);
}

absl::StatusOr<std::shared_ptr<const LoadedModel>> ReadModelVersion(
    const std::string& registry_dir, std::string_view name, int64_t version) {
  METAOPT_RETURN_IF_ERROR(ValidateModelName(name));
  if (version <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model version: ", version, " is not a positive integer"));
  }
  const std::string dir =
      absl::StrCat(registry_dir, "/", ToAbsl(name), "/", version);
  METAOPT_ASSIGN_OR_RETURN(v1::ModelManifest manifest, ReadManifest(dir));

  const std::string artifact_path = absl::StrCat(dir, "/", manifest.artifact());
  absl::StatusOr<std::string> bytes = ReadRegistryFile(artifact_path);
  if (absl::IsNotFound(bytes.status())) {
    return absl::DataLossError(
        absl::StrCat(dir, ": ", kManifestFileName, " names artifact \"",
                     manifest.artifact(), "\" but it is missing"));
  }
  if (!bytes.ok()) return Annotate(bytes.status(), dir);
  if (static_cast<int64_t>(bytes->size()) != manifest.artifact_bytes()) {
    return absl::DataLossError(absl::StrCat(
        dir, ": artifact ", manifest.artifact(), " has ", bytes->size(),
        " bytes, ", kManifestFileName, " says ", manifest.artifact_bytes()));
  }
  const std::string sha256 = Sha256Hex(*bytes);
  if (sha256 != manifest.artifact_sha256()) {
    return absl::DataLossError(
        absl::StrCat(dir, ": checksum mismatch: artifact ", manifest.artifact(),
                     " has SHA-256 ", sha256, ", ", kManifestFileName, " says ",
                     manifest.artifact_sha256()));
  }
  v1::ModelArtifact artifact;
  if (!artifact.ParseFromString(*bytes)) {
    return absl::DataLossError(
        absl::StrCat(dir, ": artifact ", manifest.artifact(),
                     " does not parse as a ModelArtifact"));
  }
  bytes->clear();
  auto validated = ValidateAndCanonicalize(artifact);
  if (!validated.ok()) return Annotate(validated.status(), dir);
  if (manifest.kind() != v1::MODEL_KIND_UNSPECIFIED &&
      manifest.kind() != artifact.kind()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": ", kManifestFileName, " says kind ",
                     v1::ModelKind_Name(manifest.kind()), ", the artifact ",
                     v1::ModelKind_Name(artifact.kind())));
  }
  // Decoded here, so that a version whose model does not decode is broken
  // like any other: the registry skips it and keeps serving the older one.
  absl::StatusOr<std::shared_ptr<const LoadedModel>> model =
      LoadedModel::Create(std::string(name), version,
                          std::move(validated->second), std::move(manifest),
                          std::move(validated->first), absl::Now());
  if (!model.ok()) return Annotate(model.status(), dir);
  return model;
}

absl::StatusOr<std::shared_ptr<const LoadedModel>> ReadModelVersion(
    const std::string& version_dir) {
  fs::path path = fs::path(version_dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // trailing '/'
  const std::string version_name = path.filename().string();
  const std::optional<int64_t> version = ParseVersionDirName(version_name);
  if (!version.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(version_dir, ": \"", absl::CEscape(version_name),
                     "\" is not a version (a positive integer without sign or "
                     "leading zeros)"));
  }
  const fs::path model_dir = path.parent_path();
  return ReadModelVersion(model_dir.parent_path().string(),
                          model_dir.filename().string(), *version);
}

absl::StatusOr<int64_t> WriteModelVersion(const std::string& registry_dir,
                                          std::string_view name,
                                          const v1::ModelArtifact& artifact) {
  METAOPT_RETURN_IF_ERROR(ValidateModelName(name));
  METAOPT_RETURN_IF_ERROR(ValidateArtifact(artifact));
  std::string bytes;
  if (!artifact.SerializeToString(&bytes)) {
    return absl::InternalError("artifact does not serialize");
  }
  if (static_cast<int64_t>(bytes.size()) > kMaxArtifactBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact: ", bytes.size(),
                     " bytes is larger than the limit of ", kMaxArtifactBytes));
  }
  v1::ModelManifest manifest;
  manifest.set_kind(artifact.kind());
  manifest.set_artifact(kArtifactFileName);
  manifest.set_artifact_bytes(static_cast<int64_t>(bytes.size()));
  manifest.set_artifact_sha256(Sha256Hex(bytes));
  *manifest.mutable_create_time() = ToProtoTimestamp(absl::Now());
  std::string manifest_bytes;
  if (!manifest.SerializeToString(&manifest_bytes)) {
    return absl::InternalError("manifest does not serialize");
  }

  const std::string model_dir = absl::StrCat(registry_dir, "/", ToAbsl(name));
  std::error_code ec;
  fs::create_directories(model_dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", model_dir, ": ", ec.message()));
  }

  std::string tmp_pattern = absl::StrCat(model_dir, "/.tmp-XXXXXX");
  if (mkdtemp(tmp_pattern.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create a temporary directory in ", model_dir, ": ",
                     ErrnoText(errno)));
  }
  const std::string tmp_dir = tmp_pattern;
  auto fail = [&tmp_dir](absl::Status status) {
    std::error_code ignored;
    fs::remove_all(tmp_dir, ignored);
    return status;
  };
  chmod(tmp_dir.c_str(),
        0755);  // mkdtemp creates 0700; readers may run as another user.
  absl::Status status =
      WriteNewFileSynced(absl::StrCat(tmp_dir, "/", kArtifactFileName), bytes);
  // The manifest goes last: its presence marks the version complete.
  if (status.ok()) {
    status = WriteNewFileSynced(absl::StrCat(tmp_dir, "/", kManifestFileName),
                                manifest_bytes);
  }
  if (status.ok()) status = FsyncDirectory(tmp_dir);
  if (!status.ok()) return fail(status);

  // Another writer may take the version we picked between listing and renaming;
  // then pick again.
  constexpr int kMaxAttempts = 100;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    absl::StatusOr<int64_t> max_version = MaxVersion(model_dir);
    if (!max_version.ok()) return fail(max_version.status());
    const int64_t version = *max_version + 1;
    const std::string version_dir = absl::StrCat(model_dir, "/", version);
    if (RenameNoReplace(tmp_dir, version_dir) == 0) {
      const absl::Status synced = FsyncDirectory(model_dir);
      if (!synced.ok()) {
        return absl::Status(synced.code(),
                            absl::StrCat(version_dir,
                                         " was published but may not "
                                         "survive a crash: ",
                                         synced.message()));
      }
      return version;
    }
    const int error = errno;
    if (error != EEXIST && error != ENOTEMPTY) {
      return fail(absl::InternalError(absl::StrCat("cannot rename ", tmp_dir,
                                                   " to ", version_dir, ": ",
                                                   ErrnoText(error))));
    }
  }
  return fail(absl::AbortedError(
      absl::StrCat("could not claim a version number in ", model_dir, " after ",
                   kMaxAttempts, " attempts")));
}

}  // namespace metaopt::registry
