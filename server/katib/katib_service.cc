#include "server/katib/katib_service.h"

#include <grpc/support/time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "server/callback_adapter.h"
#include "server/grpc_status_util.h"
#include "server/rpc_record.h"

namespace metaopt::server::katib {
namespace {

// Katib's trial outcome, as metaopt records it.
struct Outcome {
  bool finished = false;
  bool failed = false;
  double value = 0;
  std::string reason;
  std::map<std::string, double> metrics;
};

// A metric value Katib reports ("unavailable" or a decimal).
bool ParseMetric(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(value)) return false;
  out = value;
  return true;
}

Outcome OutcomeOf(const kapi::Trial& trial, const std::string& objective) {
  Outcome outcome;
  const kapi::TrialStatus& status = trial.status();
  switch (status.condition()) {
    case kapi::TrialStatus::SUCCEEDED:
    case kapi::TrialStatus::EARLYSTOPPED: {
      outcome.finished = true;
      bool has_value = false;
      for (const kapi::Metric& metric : status.observation().metrics()) {
        double value = 0;
        if (!ParseMetric(metric.value(), value)) continue;
        if (metric.name() == objective) {
          outcome.value = value;
          has_value = true;
        } else {
          outcome.metrics[metric.name()] = value;
        }
      }
      if (!has_value) {
        outcome.failed = true;
        outcome.reason = absl::StrCat(
            "Katib trial ", trial.name(), " is ",
            kapi::TrialStatus::TrialConditionType_Name(status.condition()),
            " without a value of objective metric ", objective);
      }
      return outcome;
    }
    case kapi::TrialStatus::FAILED:
    case kapi::TrialStatus::KILLED:
    case kapi::TrialStatus::METRICSUNAVAILABLE:
      outcome.finished = true;
      outcome.failed = true;
      outcome.reason = absl::StrCat(
          "Katib trial ", trial.name(), " is ",
          kapi::TrialStatus::TrialConditionType_Name(status.condition()));
      return outcome;
    default:
      return outcome;  // CREATED, RUNNING, UNKNOWN: still running
  }
}

bool IsTerminal(v1::TrialState state) {
  return state == v1::TRIAL_STATE_COMPLETED ||
         state == v1::TRIAL_STATE_STOPPED || state == v1::TRIAL_STATE_FAILED ||
         state == v1::TRIAL_STATE_INFEASIBLE;
}

// Whether metaopt trial `trial` records `outcome`.
bool SameOutcome(const v1::Trial& trial, const Outcome& outcome) {
  const bool failed = !trial.has_value();
  if (failed != outcome.failed) return false;
  if (failed) return true;
  return std::fabs(trial.value() - outcome.value) <=
         1e-12 * std::max(1.0, std::fabs(outcome.value));
}

}  // namespace

KatibAdapter::KatibAdapter(study::StudyEngine* engine, KatibOptions options)
    : engine_(engine), options_(std::move(options)) {}

Mutex& KatibAdapter::StudyMutex(const std::string& study_id) {
  MutexLock lock(&map_mu_);
  std::unique_ptr<Mutex>& mu = study_mu_[study_id];
  if (mu == nullptr) mu = std::make_unique<Mutex>();
  return *mu;
}

std::string KatibAdapter::NamespaceOf(absl::string_view authority) const {
  absl::string_view host = authority;
  const size_t colon = host.rfind(':');
  if (colon != absl::string_view::npos &&
      host.find(']') == absl::string_view::npos) {
    host = host.substr(0, colon);
  }
  const std::vector<absl::string_view> labels = absl::StrSplit(host, '.');
  const bool service_form =
      (labels.size() == 2 || (labels.size() >= 3 && labels[2] == "svc")) &&
      !labels[0].empty() && !labels[1].empty() &&
      !absl::ascii_isdigit(static_cast<unsigned char>(labels[1][0]));
  if (!service_form) return options_.ns;
  for (char c : labels[1]) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-') {
      return options_.ns;
    }
  }
  return std::string(labels[1]);
}

absl::Status KatibAdapter::ValidateAlgorithmSettings(
    const kapi::ValidateAlgorithmSettingsRequest& request,
    const std::string& ns) {
  METAOPT_ASSIGN_OR_RETURN(const std::string study_id,
                           StudyIdOf(ns, request.experiment().name()));
  METAOPT_ASSIGN_OR_RETURN(const v1::StudySpec spec,
                           StudySpecOf(request.experiment(), study_id));
  // A named model must be served now (whether its space fits is checked when
  // the study is created, by the first GetSuggestions).
  const std::string& model = spec.algorithm().model();
  if (model.empty() || model == "none") return absl::OkStatus();
  const size_t at = model.find('@');
  const std::string name = model.substr(0, at);
  const std::string version =
      at == std::string::npos ? "" : model.substr(at + 1);
  METAOPT_ASSIGN_OR_RETURN(const v1::ListModelsResponse models,
                           engine_->ListModels(v1::ListModelsRequest()));
  std::vector<std::string> served;
  for (const v1::Model& candidate : models.models()) {
    if (candidate.name() == name &&
        (version.empty() || absl::StrCat(candidate.version()) == version)) {
      return absl::OkStatus();
    }
    served.push_back(absl::StrCat(candidate.name(), "@", candidate.version()));
  }
  if (served.size() > 10) {
    served.resize(10);
    served.push_back("...");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "experiment.spec.algorithm.algorithm_settings \"model\": value \"", model,
      "\" is not a model the registry serves (served: ",
      served.empty() ? "none" : absl::StrJoin(served, ", "), ")"));
}

absl::Status KatibAdapter::ValidateEarlyStoppingSettings(
    const kapi::ValidateEarlyStoppingSettingsRequest& request) {
  if (request.early_stopping().algorithm_name().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("early_stopping.algorithm_name: empty (one of ",
                     absl::StrJoin(kKatibEarlyStoppingNames, ", "), ")"));
  }
  return EarlyStoppingOf(request.early_stopping(), "early_stopping").status();
}

absl::Status KatibAdapter::SetTrialStatus(
    const kapi::SetTrialStatusRequest& request) {
  if (request.trial_name().empty()) {
    return absl::InvalidArgumentError("trial_name: empty");
  }
  // Katib's own early-stopping services mark the Trial resource EarlyStopped
  // with a Kubernetes client; metaopt has none (docs/katib.md).
  LogInfo(absl::StrCat("katib: trial ", request.trial_name().substr(0, 253),
                       " was stopped early by its metrics collector"));
  return absl::OkStatus();
}

absl::StatusOr<KatibAdapter::StudyView> KatibAdapter::OpenStudy(
    const kapi::Experiment& experiment, const std::string& ns,
    absl::Time deadline) {
  StudyView view;
  METAOPT_ASSIGN_OR_RETURN(view.study_id, StudyIdOf(ns, experiment.name()));
  METAOPT_ASSIGN_OR_RETURN(view.spec, StudySpecOf(experiment, view.study_id));
  METAOPT_ASSIGN_OR_RETURN(
      KatibSpace space, KatibSpace::Create(experiment.spec().parameter_specs(),
                                           "experiment.spec.parameter_specs"));
  view.space = std::make_unique<KatibSpace>(std::move(space));
  if (options_.owner_from_namespace) view.context.owner = ns;
  view.context.deadline = deadline;
  v1::CreateStudyRequest create;
  create.set_study_id(view.study_id);
  *create.mutable_spec() = view.spec;
  absl::StatusOr<v1::CreateStudyResponse> created =
      engine_->CreateStudy(create, view.context);
  if (created.status().code() == absl::StatusCode::kAlreadyExists) {
    return absl::FailedPreconditionError(absl::StrCat(
        "study ", view.study_id, " of Katib experiment ", experiment.name(),
        " exists with another spec (parameters, objective, algorithm or "
        "early stopping changed): delete the study or rename the experiment (",
        created.status().message(), ")"));
  }
  METAOPT_RETURN_IF_ERROR(created.status());
  if (created->created()) {
    LogInfo(absl::StrCat("katib: experiment ", experiment.name(), " is study ",
                         view.study_id));
  }
  return view;
}

absl::StatusOr<std::vector<v1::Trial>> KatibAdapter::ListAllTrials(
    const StudyView& view) {
  std::vector<v1::Trial> trials;
  v1::ListTrialsRequest request;
  request.set_study_id(view.study_id);
  request.set_page_size(1000);
  for (;;) {
    METAOPT_ASSIGN_OR_RETURN(v1::ListTrialsResponse page,
                             engine_->ListTrials(request, view.context));
    for (v1::Trial& trial : *page.mutable_trials()) {
      trials.push_back(std::move(trial));
    }
    if (page.next_page_token().empty()) return trials;
    request.set_page_token(page.next_page_token());
  }
}

absl::Status KatibAdapter::Reconcile(
    const StudyView& view,
    const google::protobuf::RepeatedPtrField<kapi::Trial>& trials) {
  METAOPT_ASSIGN_OR_RETURN(const std::vector<v1::Trial> known,
                           ListAllTrials(view));
  struct Group {
    std::deque<const v1::Trial*> open;  // ACTIVE or STALE, by id
    std::vector<const v1::Trial*> done;
    std::vector<std::pair<const kapi::Trial*, Outcome>> finished;
    int running = 0;
    v1::Configuration configuration;
  };
  std::map<std::string, Group> groups;
  for (const v1::Trial& trial : known) {
    const std::string key = view.space->Key(trial.configuration());
    if (key.empty()) continue;
    Group& group = groups[key];
    if (trial.state() == v1::TRIAL_STATE_ACTIVE ||
        trial.state() == v1::TRIAL_STATE_STALE) {
      group.open.push_back(&trial);
    } else if (IsTerminal(trial.state())) {
      group.done.push_back(&trial);
    }
  }
  // Katib's trials by name: a name listed twice counts once (its finished
  // copy if any).
  std::map<std::string, const kapi::Trial*> by_name;
  for (const kapi::Trial& trial : trials) {
    const kapi::Trial*& slot = by_name[trial.name()];
    if (slot == nullptr ||
        (!OutcomeOf(*slot, "").finished && OutcomeOf(trial, "").finished)) {
      slot = &trial;
    }
  }
  const std::string& objective = view.spec.objective().name();
  for (const auto& [name, trial] : by_name) {
    absl::StatusOr<v1::Configuration> configuration =
        view.space->FromAssignments(
            trial->spec().parameter_assignments().assignments(),
            absl::StrCat("trials[", name, "].spec.parameter_assignments"));
    if (!configuration.ok()) {
      LogWarning(absl::StrCat(
          "katib: study ", view.study_id,
          ": not recording trial: ", configuration.status().message()));
      continue;
    }
    const std::string key = view.space->Key(*configuration);
    if (key.empty()) continue;
    Group& group = groups[key];
    group.configuration = *configuration;
    Outcome outcome = OutcomeOf(*trial, objective);
    if (outcome.finished) {
      group.finished.emplace_back(trial, std::move(outcome));
    } else {
      ++group.running;
    }
  }

  std::vector<int64_t> heartbeat;
  for (auto& [key, group] : groups) {
    // Finished Katib trials already recorded: paired with a recorded trial
    // of the same outcome, else with any recorded trial left over.
    std::vector<bool> paired(group.done.size(), false);
    std::vector<const std::pair<const kapi::Trial*, Outcome>*> unrecorded;
    for (const auto& entry : group.finished) {
      bool found = false;
      for (size_t i = 0; i < group.done.size() && !found; ++i) {
        if (!paired[i] && SameOutcome(*group.done[i], entry.second)) {
          paired[i] = found = true;
        }
      }
      if (!found) unrecorded.push_back(&entry);
    }
    size_t spare = std::count(paired.begin(), paired.end(), false);
    while (spare > 0 && !unrecorded.empty()) {
      unrecorded.pop_back();
      --spare;
    }
    for (const auto* entry : unrecorded) {
      const Outcome& outcome = entry->second;
      v1::ObserveRequest observe;
      observe.set_study_id(view.study_id);
      if (!group.open.empty()) {
        observe.set_trial_id(group.open.front()->id());
        group.open.pop_front();
      } else {
        *observe.mutable_configuration() = group.configuration;
      }
      if (outcome.failed) {
        observe.mutable_failure()->set_state(v1::TRIAL_STATE_FAILED);
        observe.mutable_failure()->set_reason(outcome.reason);
      } else {
        observe.set_value(outcome.value);
        for (const auto& [metric, value] : outcome.metrics) {
          (*observe.mutable_metrics())[metric] = value;
        }
      }
      absl::StatusOr<v1::ObserveResponse> observed =
          engine_->Observe(observe, view.context);
      if (observed.status().code() == absl::StatusCode::kInvalidArgument &&
          !observe.metrics().empty()) {
        // A metric metaopt cannot store (name or count): the value still
        // counts.
        observe.clear_metrics();
        observed = engine_->Observe(observe, view.context);
      }
      if (observed.ok() ||
          observed.status().code() == absl::StatusCode::kAlreadyExists) {
        continue;
      }
      if (observed.status().code() == absl::StatusCode::kInvalidArgument ||
          observed.status().code() == absl::StatusCode::kFailedPrecondition) {
        LogWarning(absl::StrCat("katib: study ", view.study_id,
                                ": not recording trial ", entry->first->name(),
                                ": ", observed.status().message()));
        continue;
      }
      return observed.status();
    }
    // Running Katib trials keep their metaopt trials' leases.
    for (int i = 0; i < group.running && !group.open.empty(); ++i) {
      if (group.open.front()->state() == v1::TRIAL_STATE_ACTIVE) {
        heartbeat.push_back(group.open.front()->id());
      }
      group.open.pop_front();
    }
  }
  if (!heartbeat.empty()) {
    std::sort(heartbeat.begin(), heartbeat.end());
    v1::HeartbeatRequest request;
    request.set_study_id(view.study_id);
    for (size_t i = 0; i < heartbeat.size(); ++i) {
      request.add_trial_ids(heartbeat[i]);
      if (request.trial_ids_size() == 1000 || i + 1 == heartbeat.size()) {
        // A lease that ended meanwhile fails the batch; the next call
        // retries the rest.
        absl::StatusOr<v1::HeartbeatResponse> response =
            engine_->Heartbeat(request, view.context);
        if (!response.ok() &&
            response.status().code() != absl::StatusCode::kFailedPrecondition) {
          return response.status();
        }
        request.clear_trial_ids();
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<kapi::GetSuggestionsReply> KatibAdapter::GetSuggestions(
    const kapi::GetSuggestionsRequest& request, const std::string& ns,
    absl::Time deadline) {
  const int32_t count = request.current_request_number() != 0
                            ? request.current_request_number()
                            : request.request_number();
  if (count < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("current_request_number: ", count, " must be >= 1"));
  }
  if (request.total_request_number() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("total_request_number: ", request.total_request_number(),
                     " must be >= 0"));
  }
  METAOPT_ASSIGN_OR_RETURN(const std::string study_id,
                           StudyIdOf(ns, request.experiment().name()));
  MutexLock lock(&StudyMutex(study_id));
  METAOPT_ASSIGN_OR_RETURN(const StudyView view,
                           OpenStudy(request.experiment(), ns, deadline));
  METAOPT_RETURN_IF_ERROR(Reconcile(view, request.trials()));
  v1::SuggestRequest suggest;
  suggest.set_study_id(view.study_id);
  suggest.set_count(count);
  // One client per Katib request: a retried request (same total) gets the
  // same trials back; the trials of earlier requests stay pending.
  suggest.set_client_id(
      request.total_request_number() > 0
          ? absl::StrCat("katib-", request.total_request_number())
          : "katib");
  METAOPT_ASSIGN_OR_RETURN(v1::SuggestResponse suggested,
                           engine_->Suggest(suggest, view.context));
  if (suggested.trials_size() < count) {
    return absl::FailedPreconditionError(
        absl::StrCat("study ", view.study_id, " has ", suggested.trials_size(),
                     " suggestion(s) of the ", count,
                     " requested: its search space is exhausted"));
  }
  kapi::GetSuggestionsReply reply;
  for (const v1::Trial& trial : suggested.trials()) {
    METAOPT_ASSIGN_OR_RETURN(std::vector<kapi::ParameterAssignment> assignments,
                             view.space->ToAssignments(trial.configuration()));
    kapi::GetSuggestionsReply::ParameterAssignments* out =
        reply.add_parameter_assignments();
    for (kapi::ParameterAssignment& assignment : assignments) {
      *out->add_assignments() = std::move(assignment);
    }
    (*out->mutable_labels())["metaopt.io/trial-id"] = absl::StrCat(trial.id());
  }
  return reply;
}

std::vector<kapi::EarlyStoppingRule> RulesOf(
    const v1::StudySpec& spec, const std::vector<v1::Trial>& trials) {
  std::vector<kapi::EarlyStoppingRule> rules;
  if (!spec.has_early_stopping()) return rules;
  const bool maximize = spec.objective().goal() == v1::GOAL_MAXIMIZE;
  // Best first.
  std::vector<double> values;
  for (const v1::Trial& trial : trials) {
    if ((trial.state() == v1::TRIAL_STATE_COMPLETED ||
         trial.state() == v1::TRIAL_STATE_STOPPED) &&
        trial.has_value()) {
      values.push_back(trial.value());
    }
  }
  std::sort(values.begin(), values.end());
  if (maximize) std::reverse(values.begin(), values.end());
  const size_t n = values.size();
  kapi::EarlyStoppingRule rule;
  rule.set_name(spec.objective().name());
  // A trial is stopped when it is worse than the value.
  rule.set_comparison(maximize ? kapi::LESS : kapi::GREATER);
  const v1::EarlyStoppingSpec& stopping = spec.early_stopping();
  if (stopping.has_median()) {
    const size_t min_trials = std::max(1, stopping.median().min_trials());
    if (n < min_trials || n == 0) return rules;
    const double median =
        n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    rule.set_value(FormatNumber(median));
    rule.set_start_step(static_cast<int32_t>(stopping.median().start_step()));
    rules.push_back(rule);
  } else if (stopping.has_asha()) {
    const size_t eta =
        static_cast<size_t>(std::max(2, stopping.asha().reduction_factor()));
    if (n < eta) return rules;
    const size_t keep = std::max<size_t>(1, n / eta);
    rule.set_value(FormatNumber(values[keep - 1]));
    rule.set_start_step(static_cast<int32_t>(std::max(
        stopping.asha().min_resource(), stopping.asha().grace_period())));
    rules.push_back(rule);
  }
  return rules;
}

absl::StatusOr<kapi::GetEarlyStoppingRulesReply>
KatibAdapter::GetEarlyStoppingRules(
    const kapi::GetEarlyStoppingRulesRequest& request, const std::string& ns,
    absl::Time deadline) {
  METAOPT_ASSIGN_OR_RETURN(const std::string study_id,
                           StudyIdOf(ns, request.experiment().name()));
  if (AlgorithmKindOf(
          request.experiment().spec().algorithm().algorithm_name()) ==
      v1::ALGORITHM_KIND_UNSPECIFIED) {
    // Katib may pair metaopt's early stopping with one of its own algorithms;
    // the study needs a metaopt algorithm, so a random one stands in.
    kapi::GetEarlyStoppingRulesRequest copy = request;
    kapi::AlgorithmSpec* algorithm =
        copy.mutable_experiment()->mutable_spec()->mutable_algorithm();
    algorithm->set_algorithm_name("metaopt-random");
    algorithm->clear_algorithm_settings();
    return GetEarlyStoppingRules(copy, ns, deadline);
  }
  MutexLock lock(&StudyMutex(study_id));
  METAOPT_ASSIGN_OR_RETURN(const StudyView view,
                           OpenStudy(request.experiment(), ns, deadline));
  METAOPT_RETURN_IF_ERROR(Reconcile(view, request.trials()));
  METAOPT_ASSIGN_OR_RETURN(const std::vector<v1::Trial> trials,
                           ListAllTrials(view));
  kapi::GetEarlyStoppingRulesReply reply;
  for (kapi::EarlyStoppingRule& rule : RulesOf(view.spec, trials)) {
    *reply.add_early_stopping_rules() = std::move(rule);
  }
  return reply;
}

namespace {

absl::Time DeadlineOf(const grpc::ServerContextBase& context) {
  const gpr_timespec deadline =
      gpr_convert_clock_type(context.raw_deadline(), GPR_CLOCK_REALTIME);
  if (gpr_time_cmp(deadline, gpr_inf_future(GPR_CLOCK_REALTIME)) == 0) {
    return absl::InfiniteFuture();
  }
  return absl::FromUnixNanos(
      static_cast<int64_t>(deadline.tv_sec) * 1000000000 + deadline.tv_nsec);
}

std::string NamespaceOfCall(const KatibAdapter& adapter,
                            const grpc::ServerContextBase& call) {
  const grpc::string_ref authority = call.ExperimentalGetAuthority();
  return adapter.NamespaceOf(
      absl::string_view(authority.data(), authority.size()));
}

// Runs `fn` (returning absl::Status), logs the call like the OptimizerService
// calls, reports it to `observer` (may be null) and maps the status.
// `experiment` is the request's, or null for calls about no experiment.
template <typename Fn>
grpc::Status Logged(const char* method, const KatibAdapter& adapter,
                    const grpc::ServerContextBase& call,
                    const kapi::Experiment* experiment, RpcObserver* observer,
                    Fn fn) {
  const absl::Time start = absl::Now();
  const grpc::Status status = ToGrpcStatus(fn());
  RpcRecord record;
  record.method = method;
  if (experiment != nullptr) {
    absl::StatusOr<std::string> id =
        StudyIdOf(NamespaceOfCall(adapter, call), experiment->name());
    if (id.ok()) record.study_id = *std::move(id);
    record.algorithm =
        AlgorithmKindOf(experiment->spec().algorithm().algorithm_name());
  }
  FinishRpc(status, start, observer, record);
  return status;
}

}  // namespace

grpc::ServerUnaryReactor* KatibSuggestionService::GetSuggestions(
    grpc::CallbackServerContext* context,
    const kapi::GetSuggestionsRequest* request,
    kapi::GetSuggestionsReply* reply) {
  return RunUnaryOnPool(
      *pool_, context, request, reply,
      [this](const grpc::ServerContextBase& call,
             const kapi::GetSuggestionsRequest& in,
             kapi::GetSuggestionsReply* out) {
        return Logged("katib.GetSuggestions", *adapter_, call, &in.experiment(),
                      observer_, [&] {
                        absl::StatusOr<kapi::GetSuggestionsReply> result =
                            adapter_->GetSuggestions(
                                in, NamespaceOfCall(*adapter_, call),
                                DeadlineOf(call));
                        if (!result.ok()) return result.status();
                        *out = *std::move(result);
                        return absl::OkStatus();
                      });
      });
}

grpc::ServerUnaryReactor* KatibSuggestionService::ValidateAlgorithmSettings(
    grpc::CallbackServerContext* context,
    const kapi::ValidateAlgorithmSettingsRequest* request,
    kapi::ValidateAlgorithmSettingsReply* reply) {
  return RunUnaryOnPool(*pool_, context, request, reply,
                        [this](const grpc::ServerContextBase& call,
                               const kapi::ValidateAlgorithmSettingsRequest& in,
                               kapi::ValidateAlgorithmSettingsReply*) {
                          return Logged(
                              "katib.ValidateAlgorithmSettings", *adapter_,
                              call, &in.experiment(), observer_, [&] {
                                return adapter_->ValidateAlgorithmSettings(
                                    in, NamespaceOfCall(*adapter_, call));
                              });
                        });
}

grpc::ServerUnaryReactor* KatibEarlyStoppingService::GetEarlyStoppingRules(
    grpc::CallbackServerContext* context,
    const kapi::GetEarlyStoppingRulesRequest* request,
    kapi::GetEarlyStoppingRulesReply* reply) {
  return RunUnaryOnPool(
      *pool_, context, request, reply,
      [this](const grpc::ServerContextBase& call,
             const kapi::GetEarlyStoppingRulesRequest& in,
             kapi::GetEarlyStoppingRulesReply* out) {
        return Logged(
            "katib.GetEarlyStoppingRules", *adapter_, call, &in.experiment(),
            observer_, [&] {
              absl::StatusOr<kapi::GetEarlyStoppingRulesReply> result =
                  adapter_->GetEarlyStoppingRules(
                      in, NamespaceOfCall(*adapter_, call), DeadlineOf(call));
              if (!result.ok()) return result.status();
              *out = *std::move(result);
              return absl::OkStatus();
            });
      });
}

grpc::ServerUnaryReactor* KatibEarlyStoppingService::SetTrialStatus(
    grpc::CallbackServerContext* context,
    const kapi::SetTrialStatusRequest* request,
    kapi::SetTrialStatusReply* reply) {
  return RunUnaryOnPool(
      *pool_, context, request, reply,
      [this](const grpc::ServerContextBase& call,
             const kapi::SetTrialStatusRequest& in,
             kapi::SetTrialStatusReply*) {
        return Logged("katib.SetTrialStatus", *adapter_, call, nullptr,
                      observer_, [&] { return adapter_->SetTrialStatus(in); });
      });
}

grpc::ServerUnaryReactor*
KatibEarlyStoppingService::ValidateEarlyStoppingSettings(
    grpc::CallbackServerContext* context,
    const kapi::ValidateEarlyStoppingSettingsRequest* request,
    kapi::ValidateEarlyStoppingSettingsReply* reply) {
  return RunUnaryOnPool(
      *pool_, context, request, reply,
      [this](const grpc::ServerContextBase& call,
             const kapi::ValidateEarlyStoppingSettingsRequest& in,
             kapi::ValidateEarlyStoppingSettingsReply*) {
        return Logged("katib.ValidateEarlyStoppingSettings", *adapter_, call,
                      nullptr, observer_, [&] {
                        return adapter_->ValidateEarlyStoppingSettings(in);
                      });
      });
}

}  // namespace metaopt::server::katib
