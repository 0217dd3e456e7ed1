// The model registry served by this process: polls
// `<base_path>/<name>/<version>/`, loads the newest complete version of each
// model, and hands out immutable snapshots (docs/models.md; after TensorFlow
// Serving's FileSystemStoragePathSource + AspiredVersionsManager with the
// availability-preserving policy).
#ifndef METAOPT_CORE_REGISTRY_MODEL_MANAGER_H_
#define METAOPT_CORE_REGISTRY_MODEL_MANAGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/common/mutex.h"
#include "core/registry/artifact.h"
#include "metaopt/v1/model.pb.h"

namespace metaopt::registry {

// A parsed `spec.algorithm.model`: "name" (the served version) or
// "name@version".
struct ModelReference {
  std::string name;
  // 0: whichever version is served.
  int64_t version = 0;

  // "name" or "name@version".
  std::string ToString() const;
};

// Parses "name" or "name@version" (version: a positive integer without sign or
// leading zeros). INVALID_ARGUMENT naming `field` otherwise, e.g.
// `spec.algorithm.model: "m@0": version "0" is not a positive integer ...`.
absl::StatusOr<ModelReference> ParseModelReference(
    std::string_view spec, std::string_view field = "spec.algorithm.model");

// What ListModels reports about `model`: name, version, kind, the search space
// summary, training data such as "oboe (train, 233 tasks)", creation time (the
// provenance's, else the manifest's), validation metrics and the portfolio
// size.
v1::Model Describe(const LoadedModel& model);

// Thread-safe. Serves the models of a registry directory.
//
// Polling (PollOnce(), or a background thread every `poll_interval`): for each
// model directory, the newest version newer than the served one that loads
// successfully (complete, checksums matching, valid artifact that decodes
// into its typed model, registry::Servable) replaces the served one. A
// version is loaded and decoded fully before the swap, and readers hold
// std::shared_ptr<const LoadedModel>, so requests never see a half-loaded model
// and in-flight requests keep the old version alive. Broken and incomplete
// versions are logged once per state of their files and skipped (falling back
// to the next older loadable one). Polling never unloads: a registry outage
// (base path missing or unreadable, a model directory removed) must not take
// live models down; likewise a served version is never replaced by an older
// one.
//
// Every version served (or loaded by Get(name, version)) stays in memory for
// the life of the manager, so studies bound to "name@version" keep working
// after newer versions arrive.
//
// Locking: `poll_mu_` serializes polls and guards their bookkeeping; `mu_`
// guards the maps readers see and is never held across I/O. Lock order:
// poll_mu_, then mu_.
class ModelManager {
 public:
  struct Options {
    // The registry directory: <base_path>/<name>/<version>/.
    std::string base_path;
    // Period of the background poll thread; zero: no thread (call PollOnce()).
    absl::Duration poll_interval = absl::ZeroDuration();
  };

  // Creates the manager and polls once. A missing or unreadable base path is
  // not an error here (it is logged; the registry may appear later): an empty
  // `base_path` or a negative interval is.
  static absl::StatusOr<std::unique_ptr<ModelManager>> Create(
      const Options& options);

  // Stops the poll thread (promptly, without waiting for the interval).
  ~ModelManager();
  ModelManager(const ModelManager&) = delete;
  ModelManager& operator=(const ModelManager&) = delete;

  // Scans the registry once and swaps in new versions. Returns an error (and
  // changes nothing) if the base path is missing or unreadable; problems with
  // single models or versions are logged and skipped, not returned.
  absl::Status PollOnce() ABSL_LOCKS_EXCLUDED(poll_mu_, mu_);

  // The served version of `name`, or nullptr if none.
  std::shared_ptr<const LoadedModel> Get(std::string_view name) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Version `version` of `name`: from memory if it was ever served or loaded,
  // else loaded from disk now (and then kept). NOT_FOUND if it does not exist
  // or is incomplete; DATA_LOSS or INVALID_ARGUMENT if it is broken (see
  // ReadModelVersion).
  absl::StatusOr<std::shared_ptr<const LoadedModel>> Get(std::string_view name,
                                                         int64_t version)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Resolves a reference: the served version for "name" (NOT_FOUND if none is
  // served), else Get(name, version).
  absl::StatusOr<std::shared_ptr<const LoadedModel>> Resolve(
      const ModelReference& reference) ABSL_LOCKS_EXCLUDED(mu_);

  // The served versions, ordered by name.
  std::vector<std::shared_ptr<const LoadedModel>> List() const
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::string& base_path() const { return options_.base_path; }

 private:
  explicit ModelManager(Options options);

  // Brings one model up to date (directory `model_dir`). Logs problems.
  void PollModel(const std::string& name, const std::string& model_dir)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(poll_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  // Logs `message` at warning level unless it was logged for `key` before.
  void WarnOnce(const std::string& key, const std::string& message)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(poll_mu_);
  void PollLoop() ABSL_LOCKS_EXCLUDED(thread_mu_);

  const Options options_;

  Mutex poll_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  // Version directory path -> fingerprint (inode, sizes, mtimes) of its files
  // when it last failed to load; it is retried (and logged again) only when the
  // fingerprint changes.
  absl::flat_hash_map<std::string, std::string> failed_versions_
      ABSL_GUARDED_BY(poll_mu_);
  // Keys of warnings already logged (skipped entries, unreadable model
  // directories).
  absl::flat_hash_set<std::string> warned_ ABSL_GUARDED_BY(poll_mu_);

  mutable Mutex mu_;
  // name -> served version. std::map: List() goes by name.
  std::map<std::string, std::shared_ptr<const LoadedModel>, std::less<>> served_
      ABSL_GUARDED_BY(mu_);
  // name -> version -> every version served or loaded on demand.
  std::map<std::string, std::map<int64_t, std::shared_ptr<const LoadedModel>>,
           std::less<>>
      loaded_ ABSL_GUARDED_BY(mu_);

  Mutex thread_mu_;
  bool stop_ ABSL_GUARDED_BY(thread_mu_) = false;
  // Last error of a background poll (logged when it changes).
  std::string last_poll_error_ ABSL_GUARDED_BY(thread_mu_);
  std::thread poll_thread_;
};

}  // namespace metaopt::registry

#endif  // METAOPT_CORE_REGISTRY_MODEL_MANAGER_H_
