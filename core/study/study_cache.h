// The studies the engine holds in memory: read from storage on first use,
// their parsed trials dropped when idle, the least recently used idle ones
// dropped past a limit.
#ifndef METAOPT_CORE_STUDY_STUDY_CACHE_H_
#define METAOPT_CORE_STUDY_STUDY_CACHE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/common/mutex.h"
#include "core/registry/model_manager.h"
#include "core/storage/storage.h"
#include "core/study/live_study.h"

namespace metaopt::study {

// Thread-safe. One mutex guards the map of loaded studies; it is held only
// for lookups and inserts, never across I/O, and is taken before a study's
// own lock, never after it. Everything a study holds in memory is also in
// storage (the engine writes every change before it applies it), so a study
// that no call holds can be dropped and read again on its next use.
class StudyCache {
 public:
  // `storage` and `models` must outlive the cache; `models` may be null (no
  // registry: studies bind to no model). `max_loaded_studies` 0: no limit
  // (EngineOptions::max_loaded_studies).
  StudyCache(storage::Storage* storage, registry::ModelManager* models,
             int max_loaded_studies);

  StudyCache(const StudyCache&) = delete;
  StudyCache& operator=(const StudyCache&) = delete;

  // The loaded study `key` (the caller's owner and a study id), reading it
  // from storage on first use. NOT_FOUND if absent, also when the id exists
  // under another owner. Past max_loaded_studies, drops least recently used
  // studies that no call holds until at most 7/8 of the limit remain (or none
  // is idle).
  absl::StatusOr<std::shared_ptr<LiveStudy>> Find(const storage::StudyKey& key)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The loaded study `key`, or null if it is not in memory. Never does I/O
  // and does not count as a use.
  std::shared_ptr<LiveStudy> FindLoaded(const storage::StudyKey& key)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Drops `study` (deleted) if it is still the loaded copy of its key.
  void Remove(const std::shared_ptr<LiveStudy>& study) ABSL_LOCKS_EXCLUDED(mu_);

  // What the cache holds now, for monitoring. Never does I/O.
  struct Stats {
    int64_t studies = 0;
    // Studies dropped from memory as least recently used since the start
    // (EngineOptions::max_loaded_studies).
    int64_t unloaded_studies = 0;
    // Trials of the loaded studies, indexed by v1::TrialState.
    std::vector<int64_t> trials_by_state;
  };
  Stats stats() ABSL_LOCKS_EXCLUDED(mu_);

  // A study's parsed trials (StudyTrials::all) are dropped once it has not
  // been used for this many uses of the cache (Find calls); it then holds
  // only the compact form until early stopping reads them again.
  static constexpr int64_t kParsedTrialsIdleUses = 1024;

 private:
  // Drops least recently used studies that no call holds from studies_ until
  // at most 7/8 of max_loaded_studies_ remain (or none is idle), and returns
  // them, for the caller to free after releasing mu_.
  std::vector<std::shared_ptr<LiveStudy>> UnloadIdleStudies()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Advances use_clock_ and returns it; every kParsedTrialsIdleUses ticks,
  // adds to `cooled` the studies whose last use became that old since the
  // previous sweep.
  int64_t Tick(std::vector<std::shared_ptr<LiveStudy>>& cooled)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the parsed trials of `cooled` (each under its lock).
  static void ReleaseParsedTrials(
      const std::vector<std::shared_ptr<LiveStudy>>& cooled);

  storage::Storage* const storage_;
  registry::ModelManager* const models_;
  const int max_loaded_studies_;

  Mutex mu_;
  absl::flat_hash_map<storage::StudyKey, std::shared_ptr<LiveStudy>> studies_
      ABSL_GUARDED_BY(mu_);
  // Ticks once per Find (LiveStudy::last_use).
  int64_t use_clock_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t unloaded_studies_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_STUDY_CACHE_H_
