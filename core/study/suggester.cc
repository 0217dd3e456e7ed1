#include "core/study/suggester.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/policy/random_policy.h"
#include "core/study/suggestion.h"

namespace metaopt::study {
namespace {

// The view of `study` a policy is given, with `trials` and `held_keys`.
policy::StudyView ViewOf(const LiveStudy& study,
                         const std::vector<v1::Trial>& trials,
                         const policy::HeldKeys& held_keys) {
  return policy::StudyView{&study.stored.spec(), study.space.get(), &trials,
                           &study.candidate_key_list, &held_keys};
}

// The trials of a view that reads the held keys only.
const std::vector<v1::Trial>& NoTrials() {
  static const auto* const kNoTrials = new std::vector<v1::Trial>();
  return *kNoTrials;
}

// The trials a policy's view shows: every trial with the fields policies
// read (StudyTrials::PolicyTrials, built for the call), or none for a
// policy that does not read them (Policy::ReadsTrials).
std::vector<v1::Trial> PolicyTrials(LiveStudy& study,
                                    const policy::Policy& policy)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu) {
  if (!policy.ReadsTrials()) return {};
  return study.trials.PolicyTrials();
}

void RecordSuggestCost(LiveStudy& study, absl::Duration elapsed)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu) {
  study.suggest_cost = NextSuggestCost(study.suggest_cost, elapsed);
  study.suggest_cost_measured = true;
}

// The deadline fallback: `need` random untried configurations, computed under
// the lock (they are cheap).
policy::SuggestResult RandomFallback(LiveStudy& study, int need)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu) {
  space::Rng rng = SuggestRng(study.stored.spec(), study.trials.size());
  policy::SuggestResult fallback;
  // Sample reads the held keys, not the trials.
  fallback.configurations = policy::RandomPolicy::Sample(
      ViewOf(study, NoTrials(), study.trials.held_keys()), need, rng);
  fallback.source = "random";
  return fallback;
}

// The answer: the client's `held` trials (at most `count`), then `created`.
v1::SuggestResponse SuggestResponseOf(const LiveStudy& study,
                                      const std::vector<int64_t>& held,
                                      int count, std::vector<v1::Trial> created)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu) {
  v1::SuggestResponse response;
  for (const int64_t id : held) {
    if (response.trials_size() >= count) break;
    *response.add_trials() = study.trials.Get(id);
  }
  for (v1::Trial& trial : created) *response.add_trials() = std::move(trial);
  return response;
}

}  // namespace

// What one Suggest attempt works out under the study's lock before the
// policy runs.
struct Suggester::SuggestAttempt {
  int number = 0;  // 0 for the first attempt
  absl::Time now;
  // The client's ACTIVE trials (StudyAccess::StageLeaseChanges), which come
  // back first, and how many new trials the call still needs.
  std::vector<int64_t> held;
  int need = 0;
  // Non-empty: too little time is left for the policy (the deadline
  // fallback).
  std::string fallback_reason;
  // The fit prepared in the background for this state; the policy uses it
  // only if it is exactly what it would fit.
  std::shared_ptr<const policy::PreparedFit> prepared;
};

// The policy's trials (StudyTrials::PolicyTrials) and held keys, copied for a
// policy that runs on them. Declared before the study's lock, so that it is
// freed after the lock is released.
struct Suggester::SuggestSnapshot {
  std::vector<v1::Trial> trials;
  policy::HeldKeys held_keys;
};

Suggester::Suggester(StudyAccess* access, FitPreparer* preparer,
                     const EngineOptions& options)
    : access_(access), preparer_(preparer), options_(options) {}

absl::StatusOr<v1::SuggestResponse> Suggester::SuggestOn(
    const std::shared_ptr<LiveStudy>& entry, const v1::SuggestRequest& request,
    const CallContext& context,
    std::shared_ptr<storage::PendingWrite>& pending) {
  const int count = request.count() == 0 ? 1 : request.count();
  for (int number = 0;; ++number) {
    SuggestSnapshot snapshot;
    MutexLock lock(&entry->mu);
    // Declared after the lock: takes the study's last write as the lock is
    // released, however the attempt ends.
    const TakeLastWrite take_last_write(*entry, pending);
    // Waits (without the study's lock) if the fit is being prepared now.
    std::shared_ptr<const policy::PreparedFit> prepared;
    if (!entry->deleted && entry->policy->PreparesFits()) {
      prepared = preparer_->TakeForSuggest(*entry);
    }
    if (entry->deleted) {
      return StudyNotFound(request.study_id());
    }
    // Another process sharing the database may have changed the study.
    METAOPT_RETURN_IF_ERROR(access_->Refresh(*entry));
    // Expired leases and the renewed leases of the client's trials are
    // applied now (the policy sees them) and stored with the new trials, in
    // one write; until then `staged` can take them back.
    StagedTrials staged(&entry->trials);
    const SuggestAttempt attempt = StartAttempt(
        *entry, request, context, count, number, std::move(prepared), staged);
    std::optional<absl::StatusOr<policy::SuggestResult>> proposed =
        Propose(*entry, request, attempt, staged, snapshot);
    if (!proposed.has_value()) continue;  // the study changed: recompute
    METAOPT_RETURN_IF_ERROR(proposed->status());
    policy::SuggestResult& result = **proposed;
    std::vector<v1::Trial> created =
        NewSuggestedTrials(*entry, request, attempt.fallback_reason, result);
    const absl::Status committed =
        access_->CommitSuggest(*entry, staged, created, result.update);
    if (absl::IsAborted(committed)) {
      // Another process changed the study after the refresh; nothing was
      // stored. Recompute on the refreshed study.
      if (number + 1 >= kMaxWriteConflicts)
        return TooManyConflicts(*entry, committed);
      continue;
    }
    METAOPT_RETURN_IF_ERROR(committed);
    // A new policy state: prepare its fit for the next Suggest.
    if (result.update.has_value()) preparer_->Schedule(*entry);
    if (!attempt.fallback_reason.empty()) {
      LogInfo(
          absl::StrCat("study \"", request.study_id(), "\": ", created.size(),
                       " random suggestion(s) instead of ",
                       entry->policy->name(), ": ", attempt.fallback_reason));
    }
    return SuggestResponseOf(*entry, attempt.held, count, std::move(created));
  }
}

Suggester::SuggestAttempt Suggester::StartAttempt(
    LiveStudy& study, const v1::SuggestRequest& request,
    const CallContext& context, int count, int number,
    std::shared_ptr<const policy::PreparedFit> prepared, StagedTrials& staged) {
  SuggestAttempt attempt;
  attempt.number = number;
  attempt.prepared = std::move(prepared);
  attempt.now = options_.clock();
  // Idempotent retries: the client's ACTIVE trials come back first. The
  // client is alive, so all of them (also those beyond `count`) get a fresh
  // lease.
  attempt.held = access_->StageLeaseChanges(study, attempt.now,
                                            request.client_id(), staged);
  attempt.need =
      count - static_cast<int>(std::min<size_t>(attempt.held.size(), count));
  if (attempt.need > 0) {
    attempt.fallback_reason = DeadlineFallbackReason(
        context.deadline - attempt.now, study.suggest_cost,
        options_.deadline_margin, study.policy->name());
  }
  return attempt;
}

std::optional<absl::StatusOr<policy::SuggestResult>> Suggester::Propose(
    LiveStudy& study, const v1::SuggestRequest& request,
    const SuggestAttempt& attempt, StagedTrials& staged,
    SuggestSnapshot& snapshot) {
  // The client's trials are the answer.
  if (attempt.need == 0) return policy::SuggestResult();
  if (!attempt.fallback_reason.empty()) {
    return RandomFallback(study, attempt.need);
  }
  // A policy that recently ran faster than a snapshot of the study could be
  // copied runs under the lock, on the live held keys, as does the last
  // attempt.
  const bool under_lock =
      attempt.number >= options_.optimistic_attempts ||
      (study.suggest_cost_measured &&
       study.suggest_cost < options_.max_locked_policy_cost);
  if (!under_lock) {
    return ProposeOnSnapshot(study, request, attempt, staged, snapshot);
  }
  snapshot.trials = PolicyTrials(study, *study.policy);
  absl::Duration elapsed;
  absl::StatusOr<policy::SuggestResult> proposed =
      RunPolicy(study, study.policy,
                ViewOf(study, snapshot.trials, study.trials.held_keys()),
                study.version, study.trials.size(), attempt, &elapsed);
  RecordSuggestCost(study, elapsed);
  return proposed;
}

std::optional<absl::StatusOr<policy::SuggestResult>>
Suggester::ProposeOnSnapshot(LiveStudy& study,
                             const v1::SuggestRequest& request,
                             const SuggestAttempt& attempt,
                             StagedTrials& staged, SuggestSnapshot& snapshot) {
  snapshot.trials = PolicyTrials(study, *study.policy);
  snapshot.held_keys = study.trials.held_keys();
  const std::shared_ptr<const policy::Policy> policy = study.policy;
  const int64_t version = study.version;
  const int64_t trial_count = study.trials.size();
  staged.Undo();
  study.mu.Unlock();
  absl::Duration elapsed;
  absl::StatusOr<policy::SuggestResult> proposed = RunPolicy(
      study, policy, ViewOf(study, snapshot.trials, snapshot.held_keys),
      version, trial_count, attempt, &elapsed);
  study.mu.Lock();
  RecordSuggestCost(study, elapsed);
  if (study.deleted) {
    return StudyNotFound(request.study_id());
  }
  METAOPT_RETURN_IF_ERROR(access_->Refresh(study));
  if (study.version != version) return std::nullopt;
  // Nothing a policy sees changed: the same lease changes apply.
  access_->StageLeaseChanges(study, attempt.now, request.client_id(), staged);
  return proposed;
}

absl::StatusOr<policy::SuggestResult> Suggester::RunPolicy(
    LiveStudy& study, std::shared_ptr<const policy::Policy> policy,
    const policy::StudyView& view, int64_t version, int64_t trial_count,
    const SuggestAttempt& attempt, absl::Duration* elapsed) {
  space::Rng rng = SuggestRng(study.stored.spec(), trial_count);
  const absl::Time start = options_.clock();
  absl::StatusOr<policy::SuggestResult> result =
      policy->SuggestPrepared(view, attempt.need, rng, attempt.prepared);
  *elapsed = options_.clock() - start;
  if (result.ok() && policy->PreparesFits()) {
    preparer_->KeepAfterSuggest(study, policy, version, result->fit,
                                result->used_prepared_fit);
  }
  return result;
}

std::vector<v1::Trial> Suggester::NewSuggestedTrials(
    LiveStudy& study, const v1::SuggestRequest& request,
    const std::string& fallback_reason, policy::SuggestResult& proposed) {
  NewTrialInfo info;
  info.client_id = request.client_id();
  info.create_time = options_.clock();
  info.lease = options_.trial_lease;
  const policy::Policy& producer =
      proposed.update.has_value() ? *proposed.update->policy : *study.policy;
  info.source = proposed.source.empty() ? producer.name() : proposed.source;
  info.fallback_reason = fallback_reason;
  info.study_incarnation = StudyIncarnation(study.stored);
  // DropHeldAndRepeated and Sample read the held keys, not the trials.
  const policy::StudyView live =
      ViewOf(study, NoTrials(), study.trials.held_keys());
  int dropped = 0;
  std::vector<v1::Trial> created =
      SuggestedTrials(live, study.trials.size(),
                      std::move(proposed.configurations), info, &dropped);
  if (dropped > 0) {
    LogWarning(
        absl::StrCat("study \"", request.study_id(), "\": ", info.source,
                     " proposed ", dropped,
                     " configuration(s) held or repeated; replaced by random "
                     "untried ones"));
  }
  return created;
}

}  // namespace metaopt::study
