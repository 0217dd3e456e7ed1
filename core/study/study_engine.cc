#include "core/study/study_engine.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/proto_time.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/policy/catalogue.h"
#include "core/policy/policy_factory.h"
#include "core/policy/model_binding.h"
#include "core/study/intermediate.h"
#include "core/study/page_token.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"

namespace metaopt::study {
namespace {

// A list response's bytes for one entry beyond the entry's own: its field tag
// and length.
constexpr int64_t kEntryOverhead = 1 + 5;

// A page of a list of trials: at most `size` trials and about `max_bytes`
// serialized (the first trial always fits), each FitForResponse.
class TrialPage {
 public:
  TrialPage(int size, int64_t max_bytes,
            google::protobuf::RepeatedPtrField<v1::Trial>* out)
      : size_(size), max_bytes_(max_bytes), out_(out) {}

  // Adds trial `id`; false (adding nothing) when the page is full, and the
  // trial then starts the next one.
  bool Add(const StudyTrials& trials, int64_t id) {
    if (out_->size() == size_) return false;
    v1::Trial trial = trials.Get(id);
    FitForResponse(trial, max_bytes_);
    const int64_t bytes =
        static_cast<int64_t>(trial.ByteSizeLong()) + kEntryOverhead;
    if (out_->size() > 0 && bytes_ + bytes > max_bytes_) return false;
    bytes_ += bytes;
    *out_->Add() = std::move(trial);
    return true;
  }

 private:
  const int size_;
  const int64_t max_bytes_;
  google::protobuf::RepeatedPtrField<v1::Trial>* out_;
  int64_t bytes_ = 0;
};

// A fresh Study.incarnation: random and nonzero, so that a study created again
// under a deleted one's id (by this or another process) tells their trials
// apart with overwhelming probability.
uint64_t NewIncarnation() {
  absl::BitGen gen;
  return absl::Uniform<uint64_t>(gen, 1, std::numeric_limits<uint64_t>::max());
}

// A study keeps its most recent FineTune runs, so that its record stays small
// however often it is fine-tuned (v1::Study::fine_tune_runs).
constexpr int kMaxFineTuneRuns = 20;

// RESOURCE_EXHAUSTED when `trial` would not fit a response (see
// EngineOptions::max_page_bytes): checked before a change is stored.
// `extra_bytes`: what the trial adds to its serialized size beyond `trial`
// (intermediate values not in the message).
absl::Status CheckTrialFits(const v1::Trial& trial, const std::string& study_id,
                            const EngineOptions& options,
                            int64_t extra_bytes = 0) {
  const int64_t bytes =
      static_cast<int64_t>(trial.ByteSizeLong()) + extra_bytes;
  if (bytes <= options.max_page_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "trial ", trial.id(), " of study \"", study_id, "\" would serialize to ",
      bytes, " bytes, over this server's largest response of ",
      options.max_page_bytes,
      " bytes (--max-message-bytes); nothing was stored: send fewer or "
      "shorter metrics"));
}

// The record of a new study: its id, owner, canonical spec, the model it is
// bound to and what the model and the binding record about it, created now.
absl::StatusOr<v1::Study> NewStudyRecord(
    const std::string& study_id, const std::string& owner,
    const v1::StudySpec& spec, const policy::ModelBinding& binding,
    const std::function<absl::Time()>& clock) {
  v1::Study study;
  study.set_study_id(study_id);
  study.set_owner(owner);
  *study.mutable_spec() = spec;
  if (binding.model != nullptr) {
    study.set_bound_model(binding.model->reference());
    METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                             space::SearchSpace::Create(spec.search_space()));
    for (auto& [key, value] :
         policy::StudyMetadata(binding.model->artifact, spec, space)) {
      (*study.mutable_metadata())[key] = std::move(value);
    }
  }
  for (auto& [key, value] : binding.Metadata()) {
    (*study.mutable_metadata())[key] = std::move(value);
  }
  *study.mutable_create_time() = ToProtoTimestamp(clock());
  study.set_incarnation(NewIncarnation());
  study.set_state(v1::STUDY_STATE_ACTIVE);
  return study;
}

// RESOURCE_EXHAUSTED naming the quota if `created` (Storage::CreateStudy's
// status) failed because `owner` holds `max_studies` studies; OK otherwise.
// RESOURCE_EXHAUSTED is also a full disk; the quota is the reason only if the
// owner holds that many studies.
absl::Status QuotaExhausted(storage::Storage& storage,
                            const absl::Status& created,
                            const std::string& owner, int max_studies) {
  if (!absl::IsResourceExhausted(created) || max_studies <= 0) {
    return absl::OkStatus();
  }
  const absl::StatusOr<int64_t> owned = storage.CountStudies(owner);
  if (!owned.ok() || *owned < max_studies) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("study quota exhausted: ",
                   owner.empty() ? std::string("the server")
                                 : absl::StrCat("owner \"", owner, "\""),
                   " holds ", *owned,
                   " studies and the limit per owner "
                   "(max_studies_per_owner) is ",
                   max_studies, "; delete a study first"));
}

// FAILED_PRECONDITION for `trial` of study `study_id`, which is not ACTIVE:
// `prefix` names the request field, `note` says what only ACTIVE trials do
// (a STALE trial's message says when its lease expired instead).
absl::Status NotActive(const v1::Trial& trial, const std::string& study_id,
                       const std::string& prefix, const char* note) {
  const std::string why =
      trial.state() == v1::TRIAL_STATE_STALE
          ? absl::StrCat(" (its lease expired at ",
                         google::protobuf::util::TimeUtil::ToString(
                             trial.lease_expire_time()),
                         "); observe its result, or Suggest for new work")
          : std::string(note);
  return absl::FailedPreconditionError(
      absl::StrCat(prefix, "trial ", trial.id(), " of study \"", study_id,
                   "\" is ", v1::TrialState_Name(trial.state()), why));
}

// Marks `trial` (the reported trial `active` without its intermediate values)
// stopped at the report's step when its client asks for it or, for a report
// that extends its curve by `value`, when the study's early-stopping rule
// decides so (by `metric`, or the value); a trial already marked keeps its
// mark.
void MarkStopIfDue(LiveStudy& study,
                   const v1::ReportIntermediateRequest& request,
                   Recorded recorded, const std::string& metric,
                   const v1::Trial& active, const v1::IntermediateValue& value,
                   v1::Trial& trial) ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu) {
  if (GetStopMark(trial).has_value()) return;
  const int64_t id = trial.id();
  if (!request.client_stop_reason().empty()) {
    // The client's own rule stops the trial (docs/api.md).
    const std::string reason =
        absl::StrCat("client: ", SanitizeText(request.client_stop_reason()));
    SetStopMark(trial, request.step(), reason);
    LogInfo(absl::StrCat("study \"", request.study_id(), "\": trial ", id,
                         " stopped by its client at step ", request.step(),
                         ": ", reason));
    return;
  }
  if (recorded != Recorded::kExtends) return;
  early_stopping::Decision decision;
  if (study.pareto_stopping_rule != nullptr) {
    // Several objectives: the reports' targets and constraint violations.
    std::vector<early_stopping::ParetoCurve> others;
    for (const v1::Trial& other : study.trials.all()) {
      if (other.id() == id || other.intermediate_values().empty()) continue;
      others.push_back(ParetoCurveOf(other, *study.objectives));
    }
    decision = study.pareto_stopping_rule->ShouldStop(
        ParetoCurveOf(active, *study.objectives, &value), others);
  } else if (study.stopping_rule != nullptr) {
    std::vector<early_stopping::TrialCurve> others;
    for (const v1::Trial& other : study.trials.all()) {
      if (other.id() == id || other.intermediate_values().empty()) continue;
      others.push_back(CurveOf(other, metric));
    }
    decision = study.stopping_rule->ShouldStop(
        CurveOf(active, value, metric), others,
        StoppingGoal(study.stored.spec()));
  }
  if (decision.stop) {
    SetStopMark(trial, request.step(), decision.reason);
    LogInfo(absl::StrCat("study \"", request.study_id(), "\": trial ", id,
                         " stopped at step ", request.step(), ": ",
                         decision.reason));
  }
}

// The trial an Observe stores: its trial of `study` (ACTIVE or STALE) or,
// for an external configuration (which must be in a catalogue study's
// catalogue), a new one created now, with the request's outcome and metrics,
// completed now.
absl::StatusOr<v1::Trial> ObservedTrial(
    LiveStudy& study, const v1::ObserveRequest& request,
    const std::function<absl::Time()>& clock)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(study.mu) {
  std::optional<v1::Configuration> external;
  if (request.target_case() == v1::ObserveRequest::kConfiguration) {
    METAOPT_ASSIGN_OR_RETURN(
        external,
        study.space->Canonicalize(request.configuration(), "configuration"));
    if (!study.candidate_keys.empty() &&
        !study.candidate_keys.contains(space::ConfigurationKey(*external))) {
      return absl::InvalidArgumentError(
          "configuration: not in the study's candidate catalogue "
          "(spec.candidates)");
    }
  }
  v1::Trial trial;
  if (external.has_value()) {
    trial.set_id(study.trials.size() + 1);
    trial.set_study_incarnation(StudyIncarnation(study.stored));
    *trial.mutable_configuration() = *std::move(external);
    *trial.mutable_create_time() = ToProtoTimestamp(clock());
    (*trial.mutable_metadata())["source"] = "external";
  } else {
    if (request.trial_id() > study.trials.size()) {
      return absl::NotFoundError(absl::StrCat("study \"", request.study_id(),
                                              "\" has no trial ",
                                              request.trial_id()));
    }
    trial = study.trials.Get(request.trial_id());
    if (trial.state() != v1::TRIAL_STATE_ACTIVE &&
        trial.state() != v1::TRIAL_STATE_STALE) {
      return absl::FailedPreconditionError(
          absl::StrCat("trial ", trial.id(), " of study \"", request.study_id(),
                       "\" is already ", v1::TrialState_Name(trial.state()),
                       "; a trial is observed once"));
    }
    // A late result is still a result: a STALE trial is completed like an
    // ACTIVE one, and says so. Its configuration may meanwhile have been
    // suggested (and observed) again.
    if (trial.state() == v1::TRIAL_STATE_STALE) {
      (*trial.mutable_metadata())["late"] =
          absl::StrCat("observed after its lease expired at ",
                       google::protobuf::util::TimeUtil::ToString(
                           trial.lease_expire_time()));
    }
    trial.clear_lease_expire_time();
  }
  if (request.outcome_case() == v1::ObserveRequest::kFailure) {
    trial.set_state(request.failure().state());
    trial.set_failure_reason(SanitizeText(request.failure().reason()));
    *trial.mutable_metrics() = request.metrics();
  } else {
    // A trial the early-stopping rule marked ends STOPPED.
    trial.set_state(GetStopMark(trial).has_value() ? v1::TRIAL_STATE_STOPPED
                                                   : v1::TRIAL_STATE_COMPLETED);
    METAOPT_RETURN_IF_ERROR(study.objectives->CompleteOutcome(
        request.outcome_case() == v1::ObserveRequest::kValue
            ? std::optional<double>(request.value())
            : std::nullopt,
        request.metrics(), &trial));
  }
  *trial.mutable_complete_time() = ToProtoTimestamp(clock());
  return trial;
}

FitPreparer::Options PreparerOptions(const EngineOptions& engine) {
  FitPreparer::Options options;
  options.threads = engine.prepare_threads;
  options.max_queued = std::max(engine.max_loaded_studies, 1024);
  options.max_kept = engine.max_prepared_fits;
  options.nice = engine.prepare_nice;
  return options;
}

}  // namespace

StudyEngine::StudyEngine(storage::Storage* storage,
                         registry::ModelManager* models, EngineOptions options)
    : storage_(storage),
      models_(models),
      options_(std::move(options)),
      studies_(storage_, models_, options_.max_loaded_studies),
      access_(storage_, models_, &studies_, options_),
      preparer_(PreparerOptions(options_)),
      suggester_(&access_, &preparer_, options_) {}

StudyEngine::~StudyEngine() = default;

absl::StatusOr<v1::CreateStudyResponse> StudyEngine::CreateStudy(
    const v1::CreateStudyRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateCreateStudyRequest(request, options_));
  METAOPT_ASSIGN_OR_RETURN(
      v1::StudySpec spec,
      space::ValidateAndCanonicalizeStudySpec(request.spec()));
  METAOPT_RETURN_IF_ERROR(policy::CheckAlgorithmSupported(spec.algorithm()));
  METAOPT_RETURN_IF_ERROR(policy::CheckObjectivesSupported(spec));
  METAOPT_RETURN_IF_ERROR(CheckModelDimension(spec, options_));
  METAOPT_ASSIGN_OR_RETURN(policy::ModelBinding binding,
                           policy::BindModel(models_, spec, context.owner));
  const std::shared_ptr<const registry::LoadedModel>& model = binding.model;
  // An algorithm that runs over its model's catalogue stores it as the
  // study's candidates.
  METAOPT_RETURN_IF_ERROR(policy::AddModelCatalogue(model.get(), spec));
  // Build the policy once so that a spec it cannot serve fails here, with
  // nothing stored.
  METAOPT_RETURN_IF_ERROR(
      policy::CreatePolicy(spec, std::nullopt, model).status());

  METAOPT_ASSIGN_OR_RETURN(
      const v1::Study study,
      NewStudyRecord(request.study_id(), context.owner, spec, binding,
                     options_.clock));

  // The storage counts and inserts in one step, also against other
  // processes sharing the database. An existing study is returned
  // (create-or-get) whatever the count.
  const absl::Status created =
      storage_->CreateStudy(study, options_.max_studies_per_owner);
  METAOPT_RETURN_IF_ERROR(QuotaExhausted(*storage_, created, context.owner,
                                         options_.max_studies_per_owner));
  if (absl::IsAlreadyExists(created)) {
    return ExistingStudy(request, spec, context);
  }
  METAOPT_RETURN_IF_ERROR(created);
  LogInfo(absl::StrCat("created study \"", request.study_id(), "\" (",
                       v1::AlgorithmKind_Name(spec.algorithm().kind()), ", ",
                       spec.candidates_size(), " candidates)"));
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<LiveStudy> entry,
                           studies_.Find({context.owner, request.study_id()}));
  v1::CreateStudyResponse response;
  std::shared_ptr<storage::PendingWrite> pending;
  {
    MutexLock lock(&entry->mu);
    *response.mutable_study() = DescribeStudy(*entry);
    pending = entry->last_write;
  }
  // Another call may already have changed the new study.
  if (pending != nullptr) METAOPT_RETURN_IF_ERROR(pending->Wait());
  response.set_created(true);
  return response;
}

absl::StatusOr<v1::CreateStudyResponse> StudyEngine::ExistingStudy(
    const v1::CreateStudyRequest& request, const v1::StudySpec& spec,
    const CallContext& context) {
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<LiveStudy> entry,
                           studies_.Find({context.owner, request.study_id()}));
  if (!google::protobuf::util::MessageDifferencer::Equals(entry->stored.spec(),
                                                          spec)) {
    return absl::AlreadyExistsError(
        absl::StrCat("study \"", request.study_id(),
                     "\" already exists with a different spec; choose "
                     "another study_id or delete it first"));
  }
  v1::CreateStudyResponse response;
  METAOPT_RETURN_IF_ERROR(access_.WithLiveStudy(
      *entry,
      [&](LiveStudy& study, absl::Time) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        *response.mutable_study() = DescribeStudy(study);
        return absl::OkStatus();
      }));
  response.set_created(false);
  return response;
}

absl::StatusOr<v1::GetStudyResponse> StudyEngine::GetStudy(
    const v1::GetStudyRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  v1::GetStudyResponse response;
  METAOPT_RETURN_IF_ERROR(access_.WithLiveStudy(
      {context.owner, request.study_id()},
      [&](LiveStudy& study, absl::Time) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        *response.mutable_study() = DescribeStudy(study);
        return absl::OkStatus();
      }));
  return response;
}

absl::StatusOr<v1::ListStudiesResponse> StudyEngine::ListStudies(
    const v1::ListStudiesRequest& request, const CallContext& context) {
  METAOPT_ASSIGN_OR_RETURN(const int page_size,
                           ResolvePageSize(request.page_size(), options_));
  std::string after;
  if (!request.page_token().empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        after, DecodePageToken("study", request.page_token(), "ListStudies"));
  }
  METAOPT_ASSIGN_OR_RETURN(
      std::vector<v1::Study> stored,
      storage_->ListStudies(context.owner, after, page_size + 1));
  v1::ListStudiesResponse response;
  bool more = static_cast<int>(stored.size()) > page_size;
  if (more) stored.resize(page_size);
  // The page's serialized size: each study plus its field tag and length.
  int64_t page_bytes = 0;
  std::string last_listed;
  for (const v1::Study& study : stored) {
    v1::Study described;
    const absl::Status listed = access_.WithLiveStudy(
        {context.owner, study.study_id()},
        [&](LiveStudy& live, absl::Time) ABSL_NO_THREAD_SAFETY_ANALYSIS {
          described = DescribeStudy(live);
          return absl::OkStatus();
        });
    if (absl::IsNotFound(listed)) {  // deleted meanwhile
      last_listed = study.study_id();
      continue;
    }
    if (absl::IsDataLoss(listed)) {
      // A damaged study is listed by its id alone, so that it hides no
      // healthy one; GetStudy names the damage and DeleteStudy removes it.
      LogError(absl::StrCat("listing studies: ", listed.message()));
      described.set_study_id(study.study_id());
    } else {
      METAOPT_RETURN_IF_ERROR(listed);
    }
    const int64_t bytes =
        static_cast<int64_t>(described.ByteSizeLong()) + kEntryOverhead;
    if (response.studies_size() > 0 &&
        page_bytes + bytes > options_.max_page_bytes) {
      more = true;  // the page is full by size; this study starts the next
      break;
    }
    page_bytes += bytes;
    last_listed = study.study_id();
    *response.add_studies() = std::move(described);
  }
  if (more && !last_listed.empty()) {
    response.set_next_page_token(EncodePageToken("study", last_listed));
  }
  return response;
}

absl::StatusOr<v1::DeleteStudyResponse> StudyEngine::DeleteStudy(
    const v1::DeleteStudyRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  const storage::StudyKey key{context.owner, request.study_id()};
  absl::StatusOr<std::shared_ptr<LiveStudy>> found = studies_.Find(key);
  if (absl::IsDataLoss(found.status())) {
    // A study whose records do not parse never loads; it can still go.
    METAOPT_RETURN_IF_ERROR(storage_->DeleteStudy(key));
    LogInfo(absl::StrCat("deleted damaged study \"", request.study_id(), "\" (",
                         found.status().message(), ")"));
    return v1::DeleteStudyResponse();
  }
  METAOPT_RETURN_IF_ERROR(found.status());
  const std::shared_ptr<LiveStudy>& entry = *found;
  {
    MutexLock lock(&entry->mu);
    if (entry->deleted) {
      return StudyNotFound(request.study_id());
    }
    // The study's pending writes end first (they were all started under this
    // lock): none of them can then land in a study created again under the
    // same id. Their outcome is theirs to report.
    if (entry->last_write != nullptr) entry->last_write->Wait().IgnoreError();
    METAOPT_RETURN_IF_ERROR(storage_->DeleteStudy(entry->key));
    entry->deleted = true;
    entry->dropped = true;
    ++entry->version;
  }
  studies_.Remove(entry);
  LogInfo(absl::StrCat("deleted study \"", request.study_id(), "\""));
  return v1::DeleteStudyResponse();
}

absl::StatusOr<v1::SuggestResponse> StudyEngine::Suggest(
    const v1::SuggestRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateSuggestRequest(request, options_));
  for (bool reloaded = false;; reloaded = true) {
    METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<LiveStudy> entry,
                             studies_.Find({context.owner, request.study_id()}));
    absl::StatusOr<v1::SuggestResponse> response;
    for (int conflicts = 0;; ++conflicts) {
      std::shared_ptr<storage::PendingWrite> pending;
      response = suggester_.SuggestOn(entry, request, context, pending);
      if (pending == nullptr) break;
      // The trials are handed out once stored.
      const absl::Status stored = pending->Wait();
      if (stored.ok()) break;
      if (!absl::IsAborted(stored)) return stored;
      if (conflicts + 1 >= kMaxWriteConflicts)
        return TooManyConflicts(*entry, stored);
      // Not stored: nothing was handed out; suggest again.
    }
    // Deleted by another process since it was loaded: it may exist again.
    if (!absl::IsNotFound(response.status()) || !entry->dropped || reloaded)
      return response;
  }
}

absl::StatusOr<v1::ObserveResponse> StudyEngine::Observe(
    const v1::ObserveRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(
      ValidateObserveRequest(request, options_.max_metrics));
  v1::ObserveResponse response;
  METAOPT_RETURN_IF_ERROR(access_.WithLiveStudy(
      {context.owner, request.study_id()},
      [&](LiveStudy& study, absl::Time) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        METAOPT_RETURN_IF_ERROR(CheckIncarnation(
            study, request.study_incarnation(), "study_incarnation"));
        METAOPT_ASSIGN_OR_RETURN(v1::Trial trial,
                                 ObservedTrial(study, request, options_.clock));
        const bool external =
            request.target_case() == v1::ObserveRequest::kConfiguration;
        METAOPT_RETURN_IF_ERROR(
            CheckTrialFits(trial, request.study_id(), options_));
        METAOPT_RETURN_IF_ERROR(access_.Store(study, {trial}, std::nullopt));
        ++study.version;
        study.trials.Put(
            trial, external ? 0 : study.trials.intermediate_bytes(trial.id()));
        if (options_.on_observed) {
          options_.on_observed(study.key, study.trials.completed_count());
        }
        // Fit on the new observation while the client evaluates its next
        // trial.
        preparer_.Schedule(study);
        *response.mutable_trial() = std::move(trial);
        return absl::OkStatus();
      }));
  return response;
}

absl::StatusOr<v1::FineTuneResponse> StudyEngine::FineTune(
    const v1::FineTuneRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateFineTuneRequest(request));
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<LiveStudy> entry,
                           studies_.Find({context.owner, request.study_id()}));
  std::vector<v1::Trial> snapshot;
  std::shared_ptr<const policy::Policy> policy;
  METAOPT_RETURN_IF_ERROR(access_.WithLiveStudy(
      *entry, [&](LiveStudy& study, absl::Time) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        snapshot = study.trials.PolicyTrials();
        policy = study.policy;
        return absl::OkStatus();
      }));
  policy::FineTuneOptions options;
  options.steps = request.steps();
  options.scope = request.scope() == v1::FINE_TUNE_SCOPE_UNSPECIFIED
                      ? v1::FINE_TUNE_SCOPE_KERNEL
                      : request.scope();
  const absl::Time start = absl::Now();
  policy::StudyView view{&entry->stored.spec(), entry->space.get(), &snapshot,
                         &entry->candidate_key_list};
  METAOPT_ASSIGN_OR_RETURN(policy::FineTuneResult result,
                           policy->FineTune(view, options));
  const absl::Duration elapsed = absl::Now() - start;
  int64_t completed = 0;
  for (const v1::Trial& trial : snapshot) {
    if (trial.state() == v1::TRIAL_STATE_COMPLETED) ++completed;
  }
  METAOPT_RETURN_IF_ERROR(access_.WithLiveStudy(
      *entry, [&](LiveStudy& study, absl::Time) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        // The run is stored with the surrogate it produced, in the study's
        // record (the last kMaxFineTuneRuns of them).
        v1::Study record = StudyRecord(study);
        auto& runs = *record.mutable_fine_tune_runs();
        v1::FineTuneRun& run = *runs.Add();
        run.set_number(runs.size() > 1 ? runs[runs.size() - 2].number() + 1
                                       : 1);
        *run.mutable_time() = ToProtoTimestamp(options_.clock());
        run.set_scope(v1::FineTuneScope_Name(options.scope));
        run.set_steps_requested(request.steps());
        run.set_steps_run(result.steps_run);
        run.set_loss_before(result.loss_before);
        run.set_loss_after(result.loss_after);
        *run.mutable_elapsed() = ToProtoDuration(elapsed);
        run.set_completed_trials(completed);
        if (runs.size() > kMaxFineTuneRuns) {
          runs.DeleteSubrange(0, runs.size() - kMaxFineTuneRuns);
        }
        METAOPT_RETURN_IF_ERROR(access_.Store(study, {}, result.update.state, &record));
        study.policy = result.update.policy;
        study.fine_tune_runs.Swap(&runs);
        ++study.version;
        preparer_.Schedule(study);
        return absl::OkStatus();
      }));
  v1::FineTuneResponse response;
  response.set_loss_before(result.loss_before);
  response.set_loss_after(result.loss_after);
  response.set_steps_run(result.steps_run);
  *response.mutable_elapsed() = ToProtoDuration(elapsed);
  return response;
}

absl::StatusOr<v1::GetTrialResponse> StudyEngine::GetTrial(
    const v1::GetTrialRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateGetTrialRequest(request));
  v1::GetTrialResponse response;
  METAOPT_RETURN_IF_ERROR(access_.WithLiveStudy(
      {context.owner, request.study_id()},
      [&](LiveStudy& study, absl::Time) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        if (request.trial_id() > study.trials.size()) {
          return absl::NotFoundError(
              absl::StrCat("study \"", request.study_id(), "\" has no trial ",
                           request.trial_id()));
        }
        *response.mutable_trial() = study.trials.Get(request.trial_id());
        FitForResponse(*response.mutable_trial(), options_.max_page_bytes);
        return absl::OkStatus();
      }));
  return response;
}

absl::StatusOr<v1::ListTrialsResponse> StudyEngine::ListTrials(
    const v1::ListTrialsRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  METAOPT_ASSIGN_OR_RETURN(const int page_size,
                           ResolvePageSize(request.page_size(), options_));
  if (!v1::TrialState_IsValid(request.state())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state: ", static_cast<int>(request.state()), " is not a TrialState"));
  }
  int64_t after = 0;
  if (!request.page_token().empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        std::string cursor,
        DecodePageToken("trial", request.page_token(), "ListTrials"));
    if (!absl::SimpleAtoi(cursor, &after) || after < 0) {
      return absl::InvalidArgumentError(
          "page_token: not a token returned by ListTrials");
    }
  }
  v1::ListTrialsResponse response;
  METAOPT_RETURN_IF_ERROR(access_.WithLiveStudy(
      {context.owner, request.study_id()},
      [&](LiveStudy& study, absl::Time) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        TrialPage page(page_size, options_.max_page_bytes,
                       response.mutable_trials());
        // Trial i + 1 is at index i; the states come from the summaries,
        // so that only the trials of the page are parsed.
        for (int64_t i = after; i < study.trials.size(); ++i) {
          if (request.state() != v1::TRIAL_STATE_UNSPECIFIED &&
              study.trials.summary(i + 1).state != request.state()) {
            continue;
          }
          if (!page.Add(study.trials, i + 1)) {
            response.set_next_page_token(
                EncodePageToken("trial", absl::StrCat(i)));
            break;
          }
        }
        return absl::OkStatus();
      }));
  return response;
}

absl::StatusOr<v1::GetParetoFrontResponse> StudyEngine::GetParetoFront(
    const v1::GetParetoFrontRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  METAOPT_ASSIGN_OR_RETURN(const int page_size,
                           ResolvePageSize(request.page_size(), options_));
  int64_t after = 0;
  if (!request.page_token().empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        std::string cursor,
        DecodePageToken("front", request.page_token(), "GetParetoFront"));
    if (!absl::SimpleAtoi(cursor, &after) || after < 0) {
      return absl::InvalidArgumentError(
          "page_token: not a token returned by GetParetoFront");
    }
  }
  v1::GetParetoFrontResponse response;
  METAOPT_RETURN_IF_ERROR(access_.WithLiveStudy(
      {context.owner, request.study_id()},
      [&](LiveStudy& study, absl::Time) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        ParetoFrontOf front = DescribeParetoFront(study);
        *response.mutable_summary() = std::move(front.summary);
        TrialPage page(page_size, options_.max_page_bytes,
                       response.mutable_trials());
        for (const int64_t id : front.ids) {
          if (id <= after) continue;
          if (!page.Add(study.trials, id)) {
            response.set_next_page_token(
                EncodePageToken("front", absl::StrCat(id - 1)));
            break;
          }
        }
        return absl::OkStatus();
      }));
  return response;
}

absl::StatusOr<v1::HeartbeatResponse> StudyEngine::Heartbeat(
    const v1::HeartbeatRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateHeartbeatRequest(request));
  v1::HeartbeatResponse response;
  METAOPT_RETURN_IF_ERROR(access_.WithLiveStudy(
      {context.owner, request.study_id()},
      [&](LiveStudy& study, absl::Time now) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        METAOPT_RETURN_IF_ERROR(CheckIncarnation(
            study, request.study_incarnation(), "study_incarnation"));
        std::vector<v1::Trial> renewed;
        renewed.reserve(request.trial_ids_size());
        for (int i = 0; i < request.trial_ids_size(); ++i) {
          const int64_t id = request.trial_ids(i);
          if (id > study.trials.size()) {
            return absl::NotFoundError(
                absl::StrCat("trial_ids[", i, "]: study \"", request.study_id(),
                             "\" has no trial ", id));
          }
          const v1::Trial& trial = study.trials.Get(id);
          if (trial.state() != v1::TRIAL_STATE_ACTIVE) {
            return NotActive(trial, request.study_id(),
                             absl::StrCat("trial_ids[", i, "]: "),
                             "; only ACTIVE trials hold a lease");
          }
          renewed.push_back(trial);
          *renewed.back().mutable_lease_expire_time() =
              ToProtoTimestamp(now + options_.trial_lease);
        }
        METAOPT_RETURN_IF_ERROR(access_.Store(study, renewed, std::nullopt));
        for (v1::Trial& trial : renewed) {
          *response.add_trials() = trial;
          study.trials.Put(std::move(trial));
        }
        return absl::OkStatus();
      }));
  return response;
}

absl::StatusOr<v1::ReportIntermediateResponse> StudyEngine::ReportIntermediate(
    const v1::ReportIntermediateRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(
      ValidateReportIntermediateRequest(request, options_.max_metrics));
  v1::ReportIntermediateResponse response;
  METAOPT_RETURN_IF_ERROR(access_.WithLiveStudy(
      {context.owner, request.study_id()},
      [&](LiveStudy& study, absl::Time now) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        METAOPT_RETURN_IF_ERROR(CheckIncarnation(
            study, request.study_incarnation(), "study_incarnation"));
        const int64_t id = request.trial_id();
        if (id > study.trials.size()) {
          return absl::NotFoundError(absl::StrCat(
              "study \"", request.study_id(), "\" has no trial ", id));
        }
        if (study.trials.summary(id).state != v1::TRIAL_STATE_ACTIVE) {
          return NotActive(study.trials.Get(id), request.study_id(), "",
                           "; only ACTIVE trials report intermediate values");
        }
        // The trial's values are read in place and the report adds one, so
        // that a report costs the same at every step.
        const v1::Trial& active = study.trials.GetActive(id);
        const std::string& metric =
            study.stored.spec().early_stopping().metric();
        if (!metric.empty() && !request.metrics().contains(metric)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "metrics: no \"", metric, "\"; study \"", request.study_id(),
              "\" stops trials by that metric (spec.early_stopping.metric), "
              "so every report must carry it"));
        }
        if (study.pareto_stopping_rule != nullptr) {
          METAOPT_RETURN_IF_ERROR(CheckParetoReport(
              request, *study.objectives, request.study_id()));
        }
        const int64_t trial_bytes = study.trials.intermediate_bytes(id);
        v1::IntermediateValue value;
        METAOPT_ASSIGN_OR_RETURN(
            const Recorded recorded,
            RecordIntermediate(request, now,
                               {options_.max_intermediate_values,
                                options_.max_trial_intermediate_bytes},
                               trial_bytes, active, &value));
        const int64_t added_bytes =
            recorded == Recorded::kRepeat ? 0 : IntermediateValueBytes(value);
        const int64_t study_bytes =
            study.trials.total_intermediate_bytes() + added_bytes;
        if (study_bytes > options_.max_study_intermediate_bytes) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "step: ", request.step(), " not recorded: its ", added_bytes,
              " bytes would take the intermediate values of study \"",
              request.study_id(), "\" to ", study_bytes,
              " bytes, over the limit of ",
              options_.max_study_intermediate_bytes,
              " (--max-study-intermediate-bytes)"));
        }
        v1::Trial head = study.trials.ActiveHead(id);
        MarkStopIfDue(study, request, recorded, metric, active, value, head);
        *head.mutable_lease_expire_time() =
            ToProtoTimestamp(now + options_.trial_lease);
        METAOPT_RETURN_IF_ERROR(CheckTrialFits(head, request.study_id(),
                                               options_,
                                               trial_bytes + added_bytes));
        // One row for the new value and the trial's record without its
        // values (a repeat stores only the lease).
        std::vector<storage::TrialValue> added;
        if (recorded != Recorded::kRepeat) added.push_back({id, value});
        METAOPT_RETURN_IF_ERROR(
            access_.Store(study, {head}, std::nullopt, nullptr, added));
        const std::optional<StopMark> mark = GetStopMark(head);
        response.set_should_stop(mark.has_value() &&
                                 request.step() >= mark->step);
        response.set_reason(response.should_stop() ? mark->reason : "");
        study.trials.PutReport(
            std::move(head),
            recorded == Recorded::kRepeat ? std::nullopt
                                          : std::make_optional(value),
            trial_bytes + added_bytes);
        if (request.omit_intermediate_values()) {
          *response.mutable_trial() = study.trials.ActiveHead(id);
          (*response.mutable_trial()->mutable_metadata())
              [kOmittedIntermediateKey] =
                  absl::StrCat(study.trials.GetActive(id)
                                   .intermediate_values_size());
        } else {
          *response.mutable_trial() = study.trials.GetActive(id);
        }
        *response.mutable_recorded() = std::move(value);
        return absl::OkStatus();
      }));
  return response;
}

absl::StatusOr<v1::ListModelsResponse> StudyEngine::ListModels(
    const v1::ListModelsRequest&, const CallContext& context) {
  v1::ListModelsResponse response;
  if (models_ != nullptr) {
    for (const auto& model : models_->List()) {
      // Models learned from another owner's studies are not theirs to see.
      if (!policy::ServesOwner(*model, context.owner)) continue;
      *response.add_models() = registry::Describe(*model);
    }
  }
  return response;
}

absl::StatusOr<std::unique_ptr<history::HistoryExporter>>
StudyEngine::ExportMetaDataset(const v1::ExportMetaDatasetRequest& request,
                               const CallContext& context) {
  history::HistoryOptions options;
  METAOPT_ASSIGN_OR_RETURN(
      options.min_completed_trials,
      history::ResolveMinCompletedTrials(request.min_completed_trials(),
                                         "min_completed_trials"));
  std::vector<history::HistoryGroup> groups;
  switch (request.selection_case()) {
    case v1::ExportMetaDatasetRequest::kSpaceOf: {
      METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.space_of(), "space_of"));
      METAOPT_ASSIGN_OR_RETURN(
          history::HistoryGroup group,
          history::ScanHistoryOf(*storage_, context.owner, request.space_of(),
                                 options));
      if (group.study_ids.empty()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "space_of: no study over the space of \"", request.space_of(),
            "\" has ", options.min_completed_trials,
            " COMPLETED trials yet (min_completed_trials)"));
      }
      groups.push_back(std::move(group));
      break;
    }
    case v1::ExportMetaDatasetRequest::kAllCompatible:
      if (request.all_compatible()) {
        METAOPT_ASSIGN_OR_RETURN(
            groups, history::ScanHistory(*storage_, context.owner, options));
        break;
      }
      [[fallthrough]];
    default:
      return absl::InvalidArgumentError(
          "selection: set space_of (a study id) or all_compatible: true");
  }
  return std::make_unique<history::HistoryExporter>(
      storage_, context.owner, std::move(groups), options, options_.clock());
}

v1::AlgorithmKind StudyEngine::LoadedAlgorithmKind(const std::string& study_id,
                                                   const CallContext& context) {
  const std::shared_ptr<LiveStudy> study =
      studies_.FindLoaded(storage::StudyKey{context.owner, study_id});
  if (study == nullptr) return v1::ALGORITHM_KIND_UNSPECIFIED;
  // `stored` is immutable after load.
  return study->stored.spec().algorithm().kind();
}

}  // namespace metaopt::study
