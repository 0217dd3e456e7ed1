#include "core/study/live_study.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/objective/objective.h"
#include "core/policy/policy_factory.h"
#include "core/policy/model_binding.h"
#include "core/study/intermediate.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"

namespace metaopt::study {
absl::Status StudyNotFound(const std::string& study_id) {
  return absl::NotFoundError(
      absl::StrCat("study \"", study_id, "\" does not exist"));
}

uint64_t StudyIncarnation(const v1::Study& stored) {
  if (stored.incarnation() != 0) return stored.incarnation();
  const int64_t micros =
      google::protobuf::util::TimeUtil::TimestampToMicroseconds(
          stored.create_time());
  return micros > 0 ? static_cast<uint64_t>(micros) : 1;
}

absl::Status CheckIncarnation(const LiveStudy& live, uint64_t claimed,
                              const std::string& field) {
  const uint64_t incarnation = StudyIncarnation(live.stored);
  if (claimed == 0 || claimed == incarnation) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat(
      field, ": ", claimed, " is not the incarnation of study \"",
      live.key.study_id, "\" (", incarnation,
      "): the trial belongs to a study of that id that was deleted; the "
      "study was created again since"));
}

namespace {

// Marks trials read from storage with their study's incarnation (trials
// stored before incarnations existed have none).
void StampIncarnation(const LiveStudy& live, std::vector<v1::Trial>& trials) {
  const uint64_t incarnation = StudyIncarnation(live.stored);
  for (v1::Trial& trial : trials) trial.set_study_incarnation(incarnation);
}

// The study's policy from its stored state and bound model.
absl::StatusOr<std::shared_ptr<const policy::Policy>> BuildPolicy(
    registry::ModelManager* models, const LiveStudy& live,
    const std::optional<std::string>& policy_state) {
  METAOPT_ASSIGN_OR_RETURN(policy::ModelBinding binding,
                           policy::StoredBinding(models, live.stored));
  return policy::CreatePolicy(live.stored.spec(), policy_state,
                              std::move(binding.model));
}

// True if `changed` (by increasing id) can be applied to `trials`: each one
// replaces a trial or appends the next id.
bool AppliesTo(const std::vector<v1::Trial>& changed,
               const StudyTrials& trials) {
  int64_t next = trials.size() + 1;
  for (const v1::Trial& trial : changed) {
    if (trial.id() < 1 || trial.id() > next) return false;
    if (trial.id() == next) ++next;
  }
  return true;
}

// Takes the FineTune runs of `record` (the study's stored record, read at
// least as late as its storage version) into `live`. False, changing nothing,
// if the record is otherwise not live.stored: the study was deleted and
// created again, perhaps with another spec.
bool TakeRunsOf(v1::Study record, LiveStudy& live)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(live.mu) {
  google::protobuf::RepeatedPtrField<v1::FineTuneRun> runs;
  runs.Swap(record.mutable_fine_tune_runs());
  if (!google::protobuf::util::MessageDifferencer::Equals(record,
                                                          live.stored)) {
    return false;
  }
  live.fine_tune_runs = std::move(runs);
  return true;
}

// Reads the study's storage version, then its record, trials and policy state
// (in that order: the copy is then at least as new as the version it records,
// and a write conditional on that version fails if it is older), and rebuilds
// its policy.
absl::Status ReadStudyState(storage::Storage& storage,
                            registry::ModelManager* models, LiveStudy& live)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(live.mu) {
  const storage::StudyKey& key = live.key;
  auto version = storage.GetStudyVersion(key);
  if (absl::IsNotFound(version.status())) {
    live.deleted = true;
    live.dropped = true;
    return StudyNotFound(key.study_id);
  }
  METAOPT_RETURN_IF_ERROR(version.status());
  absl::StatusOr<v1::Study> record = storage.GetStudy(key);
  if (absl::IsNotFound(record.status()) ||
      (record.ok() && !TakeRunsOf(*std::move(record), live))) {
    live.deleted = true;
    live.dropped = true;
    return StudyNotFound(key.study_id);
  }
  METAOPT_RETURN_IF_ERROR(record.status());
  METAOPT_ASSIGN_OR_RETURN(std::vector<v1::Trial> stored_trials,
                           storage.LoadTrials(key));
  StampIncarnation(live, stored_trials);
  METAOPT_ASSIGN_OR_RETURN(
      StudyTrials trials,
      StudyTrials::Load(std::move(stored_trials), key.study_id,
                        live.objectives->multiple() ||
                            live.objectives->constrained()));
  METAOPT_ASSIGN_OR_RETURN(std::optional<std::string> policy_state,
                           storage.GetPolicyState(key));
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<const policy::Policy> policy,
                           BuildPolicy(models, live, policy_state));
  live.trials = std::move(trials);
  live.policy = std::move(policy);
  live.stored_version = *version;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<LiveStudy>> LoadStudy(
    storage::Storage& storage, registry::ModelManager* models,
    const storage::StudyKey& key) {
  const std::string& study_id = key.study_id;
  auto stored = storage.GetStudy(key);
  if (absl::IsNotFound(stored.status())) {
    return StudyNotFound(study_id);
  }
  METAOPT_RETURN_IF_ERROR(stored.status());
  auto live = std::make_shared<LiveStudy>();
  live->key = key;
  live->stored = *std::move(stored);
  live->stored.clear_fine_tune_runs();  // ReadStudyState reads them
  METAOPT_ASSIGN_OR_RETURN(
      space::SearchSpace space,
      space::SearchSpace::Create(live->stored.spec().search_space()));
  live->space = std::make_unique<const space::SearchSpace>(std::move(space));
  live->objectives = std::make_unique<const objective::StudyObjectives>(
      live->stored.spec());
  for (const v1::Configuration& candidate : live->stored.spec().candidates()) {
    live->candidate_key_list.push_back(space::ConfigurationKey(candidate));
    live->candidate_keys.insert(live->candidate_key_list.back());
  }
  if (live->stored.spec().has_early_stopping() &&
      live->objectives->multiple()) {
    METAOPT_ASSIGN_OR_RETURN(live->pareto_stopping_rule,
                             early_stopping::CreateParetoRule(
                                 live->stored.spec().early_stopping()));
  } else if (live->stored.spec().has_early_stopping()) {
    METAOPT_ASSIGN_OR_RETURN(
        live->stopping_rule,
        early_stopping::CreateRule(live->stored.spec().early_stopping()));
  }
  MutexLock lock(&live->mu);
  METAOPT_RETURN_IF_ERROR(ReadStudyState(storage, models, *live));
  return live;
}

absl::Status RefreshStudy(storage::Storage& storage,
                          registry::ModelManager* models, LiveStudy& live) {
  const absl::StatusOr<int64_t> version = storage.GetStudyVersion(live.key);
  if (absl::IsNotFound(version.status())) {
    live.deleted = true;
    live.dropped = true;
    return StudyNotFound(live.key.study_id);
  }
  METAOPT_RETURN_IF_ERROR(version.status());
  if (*version == live.stored_version) return absl::OkStatus();
  // Deleted and created again (by another process), perhaps with another
  // spec: this copy is of a study that is gone.
  absl::StatusOr<v1::Study> stored = storage.GetStudy(live.key);
  if (absl::IsNotFound(stored.status()) ||
      (stored.ok() && !TakeRunsOf(*std::move(stored), live))) {
    live.deleted = true;
    live.dropped = true;
    return StudyNotFound(live.key.study_id);
  }
  METAOPT_RETURN_IF_ERROR(stored.status());
  // Only what changed since the copy's version, read in one snapshot.
  METAOPT_ASSIGN_OR_RETURN(
      storage::Storage::Changes changes,
      storage.LoadChangesSince(live.key, live.stored_version));
  if (changes.version < live.stored_version ||
      !AppliesTo(changes.trials, live.trials)) {
    // Not a continuation of this copy: read the whole study.
    METAOPT_RETURN_IF_ERROR(ReadStudyState(storage, models, live));
    ++live.version;
    return absl::OkStatus();
  }
  if (changes.policy_state.has_value()) {
    METAOPT_ASSIGN_OR_RETURN(live.policy,
                             BuildPolicy(models, live, changes.policy_state));
  }
  StampIncarnation(live, changes.trials);
  for (v1::Trial& trial : changes.trials) live.trials.Put(std::move(trial));
  live.stored_version = changes.version;
  ++live.version;
  return absl::OkStatus();
}

absl::Status ReloadStudy(storage::Storage& storage,
                         registry::ModelManager* models, LiveStudy& live) {
  METAOPT_RETURN_IF_ERROR(ReadStudyState(storage, models, live));
  ++live.version;
  return absl::OkStatus();
}

v1::Study StudyRecord(const LiveStudy& live) {
  v1::Study record = live.stored;
  *record.mutable_fine_tune_runs() = live.fine_tune_runs;
  return record;
}

ParetoFrontOf DescribeParetoFront(const LiveStudy& live) {
  if (live.pareto_front_version == live.version) return live.pareto_front;
  const objective::StudyObjectives& objectives = *live.objectives;
  // The policies' view holds every trial's value, metrics and feasibility.
  const std::vector<v1::Trial> trials = live.trials.PolicyTrials();
  const objective::StudyObjectives::FeasibleTargets feasible =
      objectives.FeasibleOf(trials);
  ParetoFrontOf front;
  std::vector<objective::Point> front_points;
  for (const int kept : objective::NonDominated(feasible.targets)) {
    front.ids.push_back(trials[feasible.index[kept]].id());
    front_points.push_back(feasible.targets[kept]);
  }
  front.summary = objectives.Summarize(front_points, feasible.targets);
  live.pareto_front = front;
  live.pareto_front_version = live.version;
  return front;
}

v1::Study DescribeStudy(const LiveStudy& live) {
  v1::Study study = StudyRecord(live);
  study.set_incarnation(StudyIncarnation(live.stored));
  study.set_trial_count(live.trials.size());
  const v1::Goal goal = live.stored.spec().objective().goal();
  // From the trials' summaries: no trial is parsed but the best.
  int64_t best = 0;
  objective::Best best_value(goal);
  // Timestamps compare as (seconds, nanos).
  google::protobuf::Timestamp latest = live.stored.create_time();
  const auto later = [&latest](int64_t seconds, int32_t nanos) {
    if (seconds > latest.seconds() ||
        (seconds == latest.seconds() && nanos > latest.nanos())) {
      latest.set_seconds(seconds);
      latest.set_nanos(nanos);
    }
  };
  for (const v1::FineTuneRun& run : live.fine_tune_runs) {
    later(run.time().seconds(), run.time().nanos());
  }
  for (int64_t id = 1; id <= live.trials.size(); ++id) {
    const TrialSummary& trial = live.trials.summary(id);
    later(trial.latest_seconds, trial.latest_nanos);
    if (trial.state == v1::TRIAL_STATE_COMPLETED && trial.has_value &&
        trial.feasible && best_value.Offer(trial.value)) {
      best = id;
    }
  }
  if (live.objectives->multiple()) {
    // The best is the front's best in the first objective (a trial another
    // dominates is not best, even if it ties the first objective).
    ParetoFrontOf front = DescribeParetoFront(live);
    best = 0;
    objective::Best front_best(goal);
    for (const int64_t id : front.ids) {
      if (front_best.Offer(live.trials.summary(id).value)) best = id;
    }
    *study.mutable_pareto_front() = std::move(front.summary);
  }
  // Distinct configurations held (in a catalogue study every trial's
  // configuration is a catalogue entry).
  const size_t held = live.trials.held_keys().size();
  if (best != 0) {
    *study.mutable_best_trial() = live.trials.Get(best);
    // A study's summary: the curve is GetTrial's (it may be large).
    OmitIntermediateValues(*study.mutable_best_trial());
  }
  *study.mutable_update_time() = latest;
  study.set_state(!live.candidate_keys.empty() &&
                          held >= live.candidate_keys.size()
                      ? v1::STUDY_STATE_EXHAUSTED
                      : v1::STUDY_STATE_ACTIVE);
  return study;
}

}  // namespace metaopt::study
