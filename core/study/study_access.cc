#include "core/study/study_access.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/proto_time.h"
#include "core/common/status_macros.h"

namespace metaopt::study {
namespace {

void LogExpired(const LiveStudy& study, const std::vector<v1::Trial>& expired) {
  LogInfo(absl::StrCat("study \"", study.stored.study_id(),
                       "\": ", expired.size(),
                       " trial(s) turned STALE (lease expired), first id ",
                       expired.front().id()));
}

}  // namespace

absl::Status TooManyConflicts(const LiveStudy& study,
                              const absl::Status& last) {
  return absl::UnavailableError(absl::StrCat(
      "study \"", study.key.study_id,
      "\" is being changed by other servers "
      "faster than this one could apply its change (",
      kMaxWriteConflicts, " attempts; last: ", last.message(), "); retry"));
}

StudyAccess::StudyAccess(storage::Storage* storage,
                         registry::ModelManager* models, StudyCache* studies,
                         const EngineOptions& options)
    : storage_(storage),
      models_(models),
      studies_(studies),
      options_(options) {}

absl::Status StudyAccess::WithLiveStudy(
    const storage::StudyKey& key,
    absl::FunctionRef<absl::Status(LiveStudy& study, absl::Time now)> fn) {
  for (bool reloaded = false;; reloaded = true) {
    METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<LiveStudy> study,
                             studies_->Find(key));
    const absl::Status status = WithLiveStudy(*study, fn);
    // Deleted by another process since it was loaded: it may exist again.
    if (!absl::IsNotFound(status) || !study->dropped || reloaded) return status;
  }
}

absl::Status StudyAccess::WithLiveStudy(
    LiveStudy& study,
    absl::FunctionRef<absl::Status(LiveStudy& study, absl::Time now)> fn) {
  for (int conflicts = 0;; ++conflicts) {
    std::shared_ptr<storage::PendingWrite> pending;
    bool wrote = false;
    absl::Status status;
    {
      MutexLock lock(&study.mu);
      const std::shared_ptr<storage::PendingWrite> before = study.last_write;
      status = [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
        for (;; ++conflicts) {
          if (study.deleted) {
            return StudyNotFound(study.key.study_id);
          }
          METAOPT_RETURN_IF_ERROR(Refresh(study));
          const absl::Time now = options_.clock();
          absl::Status status = ExpireLeases(study, now);
          if (status.ok()) status = fn(study, now);
          // ABORTED: another process changed the study between the refresh
          // and the write, which stored nothing; redo it on the refreshed
          // study.
          if (!absl::IsAborted(status)) return status;
          if (conflicts + 1 >= kMaxWriteConflicts)
            return TooManyConflicts(study, status);
        }
      }();
      // What the call saw (and wrote) is acknowledged only once stored.
      pending = study.last_write;
      wrote = pending != nullptr && pending != before;
    }
    if (pending == nullptr) return status;
    const absl::Status stored = pending->Wait();
    if (stored.ok()) return status;
    // A write this call made or saw was not stored: redo the call on the
    // study as stored. A write of its own that failed for another reason
    // than a conflict (ABORTED: another process changed the study) is the
    // call's error; another call's failed write is not.
    if (wrote && !absl::IsAborted(stored)) return stored;
    if (conflicts + 1 >= kMaxWriteConflicts)
      return TooManyConflicts(study, stored);
  }
}

absl::Status StudyAccess::Refresh(LiveStudy& study) {
  if (study.last_write != nullptr) {
    const std::optional<absl::Status> outcome = study.last_write->Poll();
    // Writes of this process are pending: the copy is ahead of storage, and
    // if another process changed the study they fail, and the copy is read
    // again below once they are done.
    if (!outcome.has_value()) return absl::OkStatus();
    study.last_write = nullptr;
    // The copy holds changes that were not stored.
    if (!outcome->ok()) return ReloadStudy(*storage_, models_, study);
  }
  return RefreshStudy(*storage_, models_, study);
}

absl::Status StudyAccess::Store(LiveStudy& study,
                                absl::Span<const v1::Trial> trials,
                                std::optional<std::string_view> policy_state,
                                const v1::Study* record,
                                absl::Span<const storage::TrialValue> values) {
  // A trial written without its intermediate values keeps the stored ones.
  std::vector<v1::Trial> without_values;
  if (std::any_of(trials.begin(), trials.end(), [](const v1::Trial& trial) {
        return !trial.intermediate_values().empty();
      })) {
    without_values.assign(trials.begin(), trials.end());
    for (v1::Trial& trial : without_values) trial.clear_intermediate_values();
    trials = without_values;
  }
  METAOPT_ASSIGN_OR_RETURN(
      std::shared_ptr<storage::PendingWrite> pending,
      storage_->StartWriteStudy(study.key,
                                {trials, policy_state, study.stored_version,
                                 record, values},
                                study.last_write));
  if (pending != nullptr) study.last_write = std::move(pending);
  ++study.stored_version;
  return absl::OkStatus();
}

absl::Status StudyAccess::ExpireLeases(LiveStudy& study, absl::Time now) {
  std::vector<v1::Trial> expired =
      study.trials.ExpiredLeases(now, options_.trial_lease);
  if (expired.empty()) return absl::OkStatus();
  METAOPT_RETURN_IF_ERROR(Store(study, expired, std::nullopt));
  LogExpired(study, expired);
  for (v1::Trial& trial : expired) study.trials.Put(std::move(trial));
  ++study.version;
  return absl::OkStatus();
}

std::vector<int64_t> StudyAccess::StageLeaseChanges(
    LiveStudy& study, absl::Time now, const std::string& client_id,
    StagedTrials& staged) {
  for (v1::Trial& trial :
       study.trials.ExpiredLeases(now, options_.trial_lease)) {
    staged.Put(std::move(trial));
  }
  std::vector<int64_t> held;
  if (client_id.empty()) return held;
  for (const int64_t id : study.trials.active_ids()) {
    if (study.trials.GetActive(id).client_id() == client_id) {
      held.push_back(id);
    }
  }
  for (const int64_t id : held) {
    v1::Trial renewed = study.trials.GetActive(id);
    *renewed.mutable_lease_expire_time() =
        ToProtoTimestamp(now + options_.trial_lease);
    staged.Put(std::move(renewed));
  }
  return held;
}

absl::Status StudyAccess::CommitSuggest(
    LiveStudy& study, StagedTrials& staged,
    const std::vector<v1::Trial>& created,
    const std::optional<policy::PolicyUpdate>& update) {
  std::vector<v1::Trial> expired;
  for (const v1::Trial& trial : staged.changed()) {
    if (trial.state() == v1::TRIAL_STATE_STALE) expired.push_back(trial);
  }
  std::vector<v1::Trial> write = staged.changed();
  write.insert(write.end(), created.begin(), created.end());
  std::optional<std::string_view> policy_state;
  if (update.has_value()) policy_state = update->state;
  if (!write.empty() || policy_state.has_value()) {
    METAOPT_RETURN_IF_ERROR(Store(study, write, policy_state));
  }
  staged.Commit();
  if (!expired.empty()) LogExpired(study, expired);
  if (update.has_value()) study.policy = update->policy;
  for (const v1::Trial& trial : created) study.trials.Put(trial);
  // Lease renewals alone change nothing a policy sees.
  if (!expired.empty() || update.has_value() || !created.empty()) {
    ++study.version;
  }
  return absl::OkStatus();
}

}  // namespace metaopt::study
