#include "core/study/fit_preparer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/study/suggestion.h"

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace metaopt::study {
namespace {

// On Linux, setpriority on a thread id sets that thread's nice value alone.
void SetThisThreadsNice(int nice) {
#ifdef __linux__
  if (nice <= 0) return;
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  (void)setpriority(PRIO_PROCESS, tid, nice);
#else
  (void)nice;
#endif
}

}  // namespace

FitPreparer::FitPreparer(Options options) : options_(options) {
  for (int i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this] { Work(); });
  }
}

FitPreparer::~FitPreparer() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    queue_.clear();
  }
  for (std::thread& thread : threads_) thread.join();
}

void FitPreparer::Schedule(LiveStudy& study) {
  if (options_.threads == 0 || study.deleted || study.policy == nullptr ||
      !study.policy->PreparesFits()) {
    return;
  }
  {
    MutexLock lock(&study.prepare_mu);
    PreparedFitSlot& slot = study.prepared;
    if (slot.queued) return;  // the queued prepare will see this state
    if (slot.fit != nullptr && slot.version == study.version &&
        slot.policy == study.policy) {
      return;  // done already
    }
    slot.queued = true;
  }
  MutexLock lock(&mu_);
  if (static_cast<int>(queue_.size()) >= options_.max_queued) {
    ++stats_.skipped;  // its Suggest computes the fit inline
    MutexLock slot_lock(&study.prepare_mu);
    study.prepared.queued = false;
    return;
  }
  queue_.push_back(study.weak_from_this());
}

void FitPreparer::Work() {
  SetThisThreadsNice(options_.nice);
  for (;;) {
    std::weak_ptr<LiveStudy> next;
    {
      MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](FitPreparer* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return self->stopping_ || !self->queue_.empty();
          },
          this));
      if (stopping_) return;
      next = std::move(queue_.front());
      queue_.pop_front();
      ++stats_.running;
    }
    // Held only while preparing: an unloaded or deleted study is gone.
    const std::shared_ptr<LiveStudy> study = next.lock();
    if (study == nullptr) {
      MutexLock lock(&mu_);
      ++stats_.skipped;
    } else {
      Prepare(*study);
    }
    MutexLock lock(&mu_);
    --stats_.running;
  }
}

void FitPreparer::Prepare(LiveStudy& study) {
  std::vector<v1::Trial> snapshot;
  std::shared_ptr<const policy::Policy> policy;
  int64_t version = 0;
  {
    MutexLock lock(&study.mu);
    MutexLock slot_lock(&study.prepare_mu);
    PreparedFitSlot& slot = study.prepared;
    const bool wanted =
        slot.queued && !study.deleted &&
        !(slot.fit != nullptr && slot.version == study.version &&
          slot.policy == study.policy);
    slot.queued = false;
    if (!wanted) {
      MutexLock stats_lock(&mu_);
      ++stats_.skipped;
      return;
    }
    snapshot = study.trials.PolicyTrials();
    policy = study.policy;
    version = study.version;
    slot.running = true;
    slot.running_version = version;
    slot.running_policy = policy.get();
  }
  // The fit runs on the snapshot, without the study's lock.
  const v1::StudySpec& spec = study.stored.spec();
  const policy::StudyView view{&spec, study.space.get(), &snapshot,
                               &study.candidate_key_list, nullptr};
  absl::StatusOr<std::shared_ptr<const policy::PreparedFit>> fit =
      policy->PrepareFit(view, SuggestRng(spec, snapshot.size()));
  if (!fit.ok()) {
    LogWarning(absl::StrCat("study \"", study.key.study_id,
                            "\": preparing the ", policy->name(),
                            " fit failed: ", fit.status().ToString()));
  }
  // Kept before `running` clears, so that a Suggest waiting for it finds it.
  if (fit.ok() && *fit != nullptr) {
    Keep(study, std::move(policy), version, *std::move(fit));
  }
  {
    MutexLock slot_lock(&study.prepare_mu);
    study.prepared.running = false;
  }
  MutexLock lock(&mu_);
  ++stats_.prepared;
}

std::shared_ptr<const policy::PreparedFit> FitPreparer::TakeForSuggest(
    LiveStudy& study) {
  const int64_t version = study.version;
  const policy::Policy* const policy = study.policy.get();
  bool waited = false;
  std::shared_ptr<const policy::PreparedFit> fit;
  {
    MutexLock slot_lock(&study.prepare_mu);
    PreparedFitSlot& slot = study.prepared;
    auto preparing_this = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return slot.running && slot.running_version == version &&
             slot.running_policy == policy;
    };
    if (preparing_this()) {
      // Wait without the study's lock, so that its other RPCs go on. (Lock
      // order: prepare_mu after mu, hence released and taken again.)
      waited = true;
      study.prepare_mu.Unlock();
      study.mu.Unlock();
      study.prepare_mu.Lock();
      study.prepare_mu.Await(absl::Condition(
          +[](PreparedFitSlot* s)
               ABSL_NO_THREAD_SAFETY_ANALYSIS { return !s->running; },
          &slot));
      study.prepare_mu.Unlock();
      study.mu.Lock();
      study.prepare_mu.Lock();
    }
    // A queued prepare of this state is the Suggest's own work now.
    slot.queued = false;
    if (slot.policy == study.policy) fit = slot.fit;
  }
  if (waited) {
    MutexLock lock(&mu_);
    ++stats_.waits;
  }
  return fit;
}

void FitPreparer::KeepAfterSuggest(
    LiveStudy& study, std::shared_ptr<const policy::Policy> policy,
    int64_t version, std::shared_ptr<const policy::PreparedFit> fit, bool hit) {
  {
    MutexLock lock(&mu_);
    ++(hit ? stats_.hits : stats_.misses);
  }
  if (!hit && fit != nullptr) {
    Keep(study, std::move(policy), version, std::move(fit));
  }
}

void FitPreparer::Keep(LiveStudy& study,
                       std::shared_ptr<const policy::Policy> policy,
                       int64_t version,
                       std::shared_ptr<const policy::PreparedFit> fit) {
  std::shared_ptr<const policy::PreparedFit> replaced;  // freed unlocked
  bool newly_kept = false;
  {
    MutexLock slot_lock(&study.prepare_mu);
    PreparedFitSlot& slot = study.prepared;
    if (slot.fit != nullptr && slot.version > version) return;
    replaced = std::move(slot.fit);
    slot.policy = std::move(policy);
    slot.fit = std::move(fit);
    slot.version = version;
    newly_kept = !slot.kept;
    slot.kept = true;
  }
  if (!newly_kept) return;
  std::vector<std::shared_ptr<LiveStudy>> evicted;
  {
    MutexLock lock(&mu_);
    kept_.push_back(study.weak_from_this());
    while (static_cast<int>(kept_.size()) > options_.max_kept) {
      std::shared_ptr<LiveStudy> oldest = kept_.front().lock();
      kept_.pop_front();
      if (oldest != nullptr) evicted.push_back(std::move(oldest));
    }
  }
  for (const std::shared_ptr<LiveStudy>& other : evicted) {
    std::shared_ptr<const policy::PreparedFit> dropped;
    MutexLock slot_lock(&other->prepare_mu);
    dropped = std::move(other->prepared.fit);
    other->prepared.policy = nullptr;
    other->prepared.kept = false;
  }
}

FitPreparer::Stats FitPreparer::stats() const {
  MutexLock lock(&mu_);
  Stats stats = stats_;
  stats.queued = static_cast<int64_t>(queue_.size());
  return stats;
}

}  // namespace metaopt::study
