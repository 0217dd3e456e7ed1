#include "core/study/request_validation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/status_macros.h"
#include "core/policy/policy_factory.h"
#include "core/common/strings.h"
#include "core/early_stopping/pareto_rule.h"
#include "core/early_stopping/rule.h"
#include "core/space/encoding.h"
#include "core/space/search_space.h"

namespace metaopt::study {
namespace {

constexpr int kMaxFailureReasonLength = 4096;
constexpr int kMaxClientStopReasonLength = 1000;
// Objective values lie within +-1e100: the surrogates standardize values and
// sum their squares, which stay finite in double for such values (1.7e308
// overflowed and every model-based Suggest fell back to random search).
constexpr double kMaxValueMagnitude = 1e100;
constexpr int kMaxFineTuneSteps = 10000;
constexpr int kMaxHeartbeatTrials = 1000;
// The proto's documented ranges of SuggestRequest.count and page_size: the
// options may lower them, not raise them.
constexpr int kHardMaxSuggestCount = 1000;
constexpr int kHardMaxPageSize = 1000;

// INVALID_ARGUMENT when a spec field holds more than `limit` entries.
absl::Status CheckLimit(int count, int limit, const std::string& path,
                        const char* what) {
  if (count <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": ", count, " ", what, " exceed this server's limit of ", limit));
}

}  // namespace

absl::Status CheckSpecLimits(const v1::StudySpec& spec,
                             const EngineOptions& options) {
  const v1::SearchSpace& space = spec.search_space();
  METAOPT_RETURN_IF_ERROR(CheckLimit(space.stages_size(), options.max_stages,
                                     "spec.search_space.stages", "stages"));
  int64_t parameters = 0;
  for (const v1::Stage& stage : space.stages()) {
    for (const v1::Algorithm& algorithm : stage.algorithms()) {
      parameters += algorithm.parameters_size();
    }
  }
  for (int s = 0; s < space.stages_size(); ++s) {
    const v1::Stage& stage = space.stages(s);
    const std::string stage_path =
        absl::StrCat("spec.search_space.stages[", s, "]");
    METAOPT_RETURN_IF_ERROR(
        CheckLimit(stage.algorithms_size(), options.max_algorithms_per_stage,
                   absl::StrCat(stage_path, ".algorithms"), "algorithms"));
    for (int a = 0; a < stage.algorithms_size(); ++a) {
      METAOPT_RETURN_IF_ERROR(CheckLimit(
          stage.algorithms(a).parameters_size(),
          options.max_parameters_per_algorithm,
          absl::StrCat(stage_path, ".algorithms[", a, "].parameters"),
          "parameters"));
    }
  }
  METAOPT_RETURN_IF_ERROR(
      CheckLimit(static_cast<int>(std::min<int64_t>(
                     parameters, std::numeric_limits<int>::max())),
                 options.max_parameters, "spec.search_space",
                 "parameters in all stages and algorithms"));
  METAOPT_RETURN_IF_ERROR(CheckLimit(spec.candidates_size(),
                                     options.max_candidates, "spec.candidates",
                                     "candidates"));
  METAOPT_RETURN_IF_ERROR(CheckLimit(
      static_cast<int>(spec.dataset_features_size()),
      options.max_dataset_features, "spec.dataset_features",
      "dataset features (--max-dataset-features)"));
  // The sample's shape is checked in full by space::ValidateDatasetSample;
  // these bounds only refuse an oversized one before anything reads it.
  const v1::DatasetSample& sample = spec.dataset_sample();
  METAOPT_RETURN_IF_ERROR(CheckLimit(
      sample.column_kinds_size(), space::kMaxSampleColumns,
      "spec.dataset_sample.column_kinds", "columns (the sample format's)"));
  METAOPT_RETURN_IF_ERROR(CheckLimit(
      sample.values_size(), space::kMaxSampleRows * space::kMaxSampleColumns,
      "spec.dataset_sample.values",
      "values (256 rows x 16 columns, the sample format's)"));
  return CheckLimit(
      sample.targets_size(), space::kMaxSampleRows * space::kMaxSampleTargets,
      "spec.dataset_sample.targets",
      "targets (256 rows x 3 targets, the sample format's)");
}

std::string DurationText(absl::Duration d) {
  return absl::FormatDuration(absl::Trunc(d, absl::Microseconds(1)));
}

absl::Status CheckModelDimension(const v1::StudySpec& spec,
                                 const EngineOptions& options) {
  const v1::AlgorithmKind kind = spec.algorithm().kind();
  METAOPT_ASSIGN_OR_RETURN(const policy::AlgorithmKindDescriptor* descriptor,
                           policy::FindAlgorithmKind(kind));
  if (!descriptor->models_encoded_space) return absl::OkStatus();
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  const int dimension = space::Encoder(space).dimension();
  if (dimension <= options.max_model_dimension) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "spec.search_space: encodes to ", dimension,
      " dimensions (one per numeric parameter, categorical value and "
      "algorithm choice); ",
      v1::AlgorithmKind_Name(kind), " fits its surrogate over at most ",
      options.max_model_dimension,
      " on this server (--max-model-dimension); use fewer parameters or "
      "ALGORITHM_KIND_RANDOM"));
}

absl::Status CheckEngineOptions(const EngineOptions& options) {
  struct Limit {
    const char* name;
    int value;
    int max;
  };
  const Limit limits[] = {
      {"max_suggest_count", options.max_suggest_count, kHardMaxSuggestCount},
      {"max_page_size", options.max_page_size, kHardMaxPageSize},
      {"default_page_size", options.default_page_size, options.max_page_size},
      {"max_stages", options.max_stages, space::kMaxStages},
      {"max_algorithms_per_stage", options.max_algorithms_per_stage,
       space::kMaxAlgorithmsPerStage},
      {"max_parameters_per_algorithm", options.max_parameters_per_algorithm,
       space::kMaxParametersPerAlgorithm},
      {"max_candidates", options.max_candidates, space::kMaxCandidates},
      {"max_parameters", options.max_parameters,
       EngineOptions::kHardMaxParameters},
      {"max_model_dimension", options.max_model_dimension,
       EngineOptions::kHardMaxModelDimension},
      {"max_dataset_features", options.max_dataset_features,
       EngineOptions::kHardMaxDatasetFeatures},
      {"max_metrics", options.max_metrics, EngineOptions::kHardMaxMetrics},
      {"max_intermediate_values", options.max_intermediate_values,
       EngineOptions::kHardMaxIntermediateValues},
  };
  for (const Limit& limit : limits) {
    if (limit.value < 1 || limit.value > limit.max) {
      return absl::InvalidArgumentError(absl::StrCat(
          limit.name, ": ", limit.value, " is outside [1, ", limit.max, "]"));
    }
  }
  const Limit non_negative[] = {
      {"prepare_threads", options.prepare_threads, 64},
      {"max_prepared_fits", options.max_prepared_fits, 1 << 20},
      {"prepare_nice", options.prepare_nice, 19},
  };
  for (const Limit& limit : non_negative) {
    if (limit.value < 0 || limit.value > limit.max) {
      return absl::InvalidArgumentError(absl::StrCat(
          limit.name, ": ", limit.value, " is outside [0, ", limit.max, "]"));
    }
  }
  if (options.max_page_bytes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_page_bytes: ", options.max_page_bytes, " must be positive"));
  }
  if (options.max_trial_intermediate_bytes < 1 ||
      options.max_trial_intermediate_bytes > options.max_page_bytes / 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_trial_intermediate_bytes: ", options.max_trial_intermediate_bytes,
        " is outside [1, ", options.max_page_bytes / 2,
        "] (half the largest response page, so that a trial always fits one)"));
  }
  if (options.max_study_intermediate_bytes <
      options.max_trial_intermediate_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_study_intermediate_bytes: ", options.max_study_intermediate_bytes,
        " is below max_trial_intermediate_bytes (",
        options.max_trial_intermediate_bytes, ")"));
  }
  if (options.trial_lease <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial_lease: ", DurationText(options.trial_lease),
                     " must be positive"));
  }
  if (options.deadline_margin < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("deadline_margin: ", DurationText(options.deadline_margin),
                     " must not be negative"));
  }
  if (options.max_locked_policy_cost < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_locked_policy_cost: ",
        DurationText(options.max_locked_policy_cost), " must not be negative"));
  }
  if (options.optimistic_attempts < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimistic_attempts: ", options.optimistic_attempts,
                     " must not be negative"));
  }
  if (!options.clock) {
    return absl::InvalidArgumentError("clock: must be set");
  }
  if (options.max_studies_per_owner < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_studies_per_owner: ", options.max_studies_per_owner,
                     " must not be negative (0: no limit)"));
  }
  if (options.max_loaded_studies < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_loaded_studies: ", options.max_loaded_studies,
                     " must not be negative (0: no limit)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateStudyId(const std::string& study_id, const char* field) {
  if (study_id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must not be empty"));
  }
  if (study_id.size() > 128) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": \"", study_id.substr(0, 32),
                     "...\" is longer than 128 characters"));
  }
  for (size_t i = 0; i < study_id.size(); ++i) {
    const char c = study_id[i];
    const bool alnum = absl::ascii_isalnum(static_cast<unsigned char>(c));
    if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": \"", absl::CHexEscape(study_id),
                       "\" must be letters, digits, '.', '_' or '-', starting "
                       "with a letter or digit"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateMetrics(
    const google::protobuf::Map<std::string, double>& metrics,
    int max_metrics) {
  if (metrics.size() > static_cast<size_t>(max_metrics)) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics: ", metrics.size(),
                     " entries exceed the limit of ", max_metrics,
                     " (--max-metrics)"));
  }
  for (const auto& [name, value] : metrics) {
    METAOPT_RETURN_IF_ERROR(space::ValidateName(name, "metrics"));
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics[\"", name, "\"]: ", value, " is not a finite number"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateCreateStudyRequest(const v1::CreateStudyRequest& request,
                                        const EngineOptions& options) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (!request.has_spec())
    return absl::InvalidArgumentError("spec: is required");
  if (request.spec().has_early_stopping()) {
    METAOPT_RETURN_IF_ERROR(early_stopping::ValidateEarlyStoppingSpec(
        request.spec().early_stopping(), "spec.early_stopping"));
    if (request.spec().objectives_size() > 1) {
      METAOPT_RETURN_IF_ERROR(early_stopping::CheckParetoRule(
          request.spec().early_stopping(), "spec.early_stopping"));
    }
  }
  return CheckSpecLimits(request.spec(), options);
}

absl::Status ValidateSuggestRequest(const v1::SuggestRequest& request,
                                    const EngineOptions& options) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (request.count() < 0 || request.count() > options.max_suggest_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("count: ", request.count(), " is outside [0, ",
                     options.max_suggest_count, "] (0 means 1)"));
  }
  // Empty: no client (no lease renewal, no idempotent retry).
  if (request.client_id().empty()) return absl::OkStatus();
  return space::ValidateName(request.client_id(), "client_id", "client id");
}

absl::Status ValidateObserveRequest(const v1::ObserveRequest& request,
                                    int max_metrics) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (request.target_case() == v1::ObserveRequest::TARGET_NOT_SET) {
    return absl::InvalidArgumentError(
        "trial_id or configuration: one of them is required");
  }
  if (request.target_case() == v1::ObserveRequest::kTrialId &&
      request.trial_id() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial_id: ", request.trial_id(),
                     " is not a trial id (ids start at 1)"));
  }
  switch (request.outcome_case()) {
    case v1::ObserveRequest::OUTCOME_NOT_SET:
      // The objectives' values may all come in metrics (the study checks).
      if (request.metrics().empty()) {
        return absl::InvalidArgumentError(
            "value or failure: one of them is required");
      }
      break;
    case v1::ObserveRequest::kValue:
      if (!std::isfinite(request.value())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "value: ", request.value(), " is not a finite number"));
      }
      if (std::abs(request.value()) > kMaxValueMagnitude) {
        return absl::InvalidArgumentError(
            absl::StrCat("value: ", request.value(),
                         " is outside [-1e100, 1e100]; "
                         "rescale the objective"));
      }
      break;
    case v1::ObserveRequest::kFailure:
      if (request.failure().state() != v1::TRIAL_STATE_FAILED &&
          request.failure().state() != v1::TRIAL_STATE_INFEASIBLE) {
        return absl::InvalidArgumentError(absl::StrCat(
            "failure.state: ",
            v1::TrialState_IsValid(request.failure().state())
                ? v1::TrialState_Name(request.failure().state())
                : absl::StrCat(static_cast<int>(request.failure().state())),
            " must be TRIAL_STATE_FAILED or TRIAL_STATE_INFEASIBLE"));
      }
      if (request.failure().reason().size() > kMaxFailureReasonLength) {
        return absl::InvalidArgumentError(absl::StrCat(
            "failure.reason: ", Quote(request.failure().reason()), " has ",
            request.failure().reason().size(), " bytes, more than the limit of ",
            kMaxFailureReasonLength));
      }
      break;
  }
  return ValidateMetrics(request.metrics(), max_metrics);
}

absl::Status ValidateReportIntermediateRequest(
    const v1::ReportIntermediateRequest& request, int max_metrics) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (request.trial_id() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial_id: ", request.trial_id(),
                     " is not a trial id (ids start at 1)"));
  }
  if (request.step() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "step: ", request.step(), " is negative (steps are >= 0)"));
  }
  if (!std::isfinite(request.value())) {
    return absl::InvalidArgumentError(
        absl::StrCat("value: ", request.value(), " is not a finite number"));
  }
  if (std::abs(request.value()) > kMaxValueMagnitude) {
    return absl::InvalidArgumentError(
        absl::StrCat("value: ", request.value(),
                     " is outside [-1e100, 1e100]; rescale the objective"));
  }
  if (request.client_stop_reason().size() > kMaxClientStopReasonLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "client_stop_reason: ", Quote(request.client_stop_reason()), " has ",
        request.client_stop_reason().size(), " bytes, more than the limit of ",
        kMaxClientStopReasonLength));
  }
  return ValidateMetrics(request.metrics(), max_metrics);
}

absl::Status ValidateFineTuneRequest(const v1::FineTuneRequest& request) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (request.steps() < 0 || request.steps() > kMaxFineTuneSteps) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps: ", request.steps(), " is outside [0, ",
                     kMaxFineTuneSteps, "] (0 means the default)"));
  }
  if (!v1::FineTuneScope_IsValid(request.scope())) {
    return absl::InvalidArgumentError(
        absl::StrCat("scope: ", static_cast<int>(request.scope()),
                     " is not a FineTuneScope"));
  }
  return absl::OkStatus();
}

absl::Status ValidateGetTrialRequest(const v1::GetTrialRequest& request) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (request.trial_id() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial_id: ", request.trial_id(),
                     " is not a trial id (ids start at 1)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateHeartbeatRequest(const v1::HeartbeatRequest& request) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (request.trial_ids().empty() ||
      request.trial_ids_size() > kMaxHeartbeatTrials) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial_ids: ", request.trial_ids_size(), " ids, want 1..",
                     kMaxHeartbeatTrials));
  }
  absl::flat_hash_map<int64_t, int> seen;
  for (int i = 0; i < request.trial_ids_size(); ++i) {
    const int64_t id = request.trial_ids(i);
    if (id <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "trial_ids[", i, "]: ", id, " is not a trial id (ids start at 1)"));
    }
    auto [it, inserted] = seen.emplace(id, i);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(
          "trial_ids[", i, "]: ", id, " repeats trial_ids[", it->second, "]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace metaopt::study
