// Background preparation of policy fits: after an Observe, the study's
// policy fits its surrogate (policy::Policy::PrepareFit) on a small pool of
// low-priority threads, so that the next Suggest finds it done.
#ifndef METAOPT_CORE_STUDY_FIT_PREPARER_H_
#define METAOPT_CORE_STUDY_FIT_PREPARER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/common/mutex.h"
#include "core/study/live_study.h"

namespace metaopt::study {

// Thread-safe. Suggestions do not depend on it: a fit is a pure function of
// the study's observations, the policy's state and the Suggest's random
// stream, and a policy uses a prepared fit only if it is exactly what it would
// compute inline (policy::Policy::SuggestPrepared). The pool only moves the
// fit's time from the Suggest into the client's evaluation time.
//
// Work is queued per study (one queued prepare per study; the latest state
// wins), never holds a study's lock while fitting, and holds a study only
// weakly while queued: an unloaded or deleted study's prepare is dropped.
// The pool is bounded (Options::threads); its threads may run at a lower
// priority (Options::nice).
class FitPreparer {
 public:
  struct Options {
    // Threads; 0: nothing is prepared in the background (Suggests compute
    // their fits inline and still keep them for the next Suggest).
    int threads = 1;
    // Studies with a queued prepare; beyond it new requests are dropped.
    int max_queued = 4096;
    // Studies that keep a fit in memory at once (a fit holds the n x n
    // Cholesky factor: 8 MB at n = 1,000); the oldest kept are dropped.
    int max_kept = 64;
    // Nice value of the threads (Linux; 0: the process's priority).
    int nice = 0;
  };
  struct Stats {
    int64_t prepared = 0;  // background prepares run to the end
    int64_t skipped = 0;   // dropped: study gone, deleted, or already done
    int64_t hits = 0;      // Suggests that used a kept fit
    int64_t misses = 0;    // Suggests that computed their fit inline
    int64_t waits = 0;     // Suggests that waited for a running prepare
    // Now: studies queued (some may be skipped when their turn comes) and
    // prepares running.
    int64_t queued = 0;
    int64_t running = 0;
  };

  explicit FitPreparer(Options options);
  // Stops the threads after their current prepare; queued work is dropped.
  ~FitPreparer();
  FitPreparer(const FitPreparer&) = delete;
  FitPreparer& operator=(const FitPreparer&) = delete;

  // Queues a prepare of `study`'s current state, if its policy prepares fits.
  void Schedule(LiveStudy& study) ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu);

  // For a Suggest about to run the policy on `study` at its current version:
  // waits (without `study.mu`, which it releases and takes again) while a
  // background prepare of that version and policy runs, cancels a queued one
  // (the Suggest computes it), and returns the kept fit (null if none; the
  // policy checks that it matches).
  std::shared_ptr<const policy::PreparedFit> TakeForSuggest(LiveStudy& study)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu);

  // After a Suggest on the snapshot of `version` with `policy`: keeps `fit`
  // (the fit it used) unless a newer one is kept, and counts a hit or miss.
  void KeepAfterSuggest(LiveStudy& study,
                        std::shared_ptr<const policy::Policy> policy,
                        int64_t version,
                        std::shared_ptr<const policy::PreparedFit> fit,
                        bool hit) ABSL_LOCKS_EXCLUDED(study.prepare_mu);

  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Work();
  void Prepare(LiveStudy& study);
  // Stores a fit computed on the snapshot of `version`, then applies the
  // limit on kept fits.
  void Keep(LiveStudy& study, std::shared_ptr<const policy::Policy> policy,
            int64_t version, std::shared_ptr<const policy::PreparedFit> fit)
      ABSL_LOCKS_EXCLUDED(study.prepare_mu, mu_);

  const Options options_;
  // Taken alone or after a study's prepare_mu, never before one.
  mutable Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::weak_ptr<LiveStudy>> queue_ ABSL_GUARDED_BY(mu_);
  // Studies keeping a fit, oldest first.
  std::deque<std::weak_ptr<LiveStudy>> kept_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_FIT_PREPARER_H_
