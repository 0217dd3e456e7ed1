// Checks of the study engine's options and of the RPC requests it serves, made
// before any study is looked up. Each returns INVALID_ARGUMENT naming the
// request field (or option), its value and what is allowed. Thread-safe (pure
// functions).
#ifndef METAOPT_CORE_STUDY_REQUEST_VALIDATION_H_
#define METAOPT_CORE_STUDY_REQUEST_VALIDATION_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/study/engine_options.h"
#include "google/protobuf/map.h"
#include "metaopt/v1/optimizer_service.pb.h"

namespace metaopt::study {

// INVALID_ARGUMENT naming the option, its value and its allowed range for
// options outside their limits (non-positive sizes, limits above the hard ones
// of core/space, a non-positive lease, a negative margin).
absl::Status CheckEngineOptions(const EngineOptions& options);

// INVALID_ARGUMENT unless `study_id` is 1..128 characters of [A-Za-z0-9._-]
// starting with a letter or digit. `field` names the request field in the
// message.
absl::Status ValidateStudyId(const std::string& study_id,
                             const char* field = "study_id");

// The server's configurable size limits of a spec; the fixed ones (names,
// categorical values, ...) are checked by
// space::ValidateAndCanonicalizeStudySpec.
absl::Status CheckSpecLimits(const v1::StudySpec& spec,
                             const EngineOptions& options);

// INVALID_ARGUMENT naming spec.search_space, its encoded dimension, the kind
// and the limit when a model-based kind (see
// EngineOptions::max_model_dimension) would fit a surrogate over more
// dimensions than the limit. `spec` must be valid.
absl::Status CheckModelDimension(const v1::StudySpec& spec,
                                 const EngineOptions& options);

// At most `max_metrics` metrics, names as space::ValidateName, finite values.
absl::Status ValidateMetrics(
    const google::protobuf::Map<std::string, double>& metrics,
    int max_metrics = EngineOptions::kDefaultMaxMetrics);

// The checks of each RPC's request that need no study: the study id first,
// then the fields in the order the messages document them.
absl::Status ValidateCreateStudyRequest(const v1::CreateStudyRequest& request,
                                        const EngineOptions& options);
absl::Status ValidateSuggestRequest(const v1::SuggestRequest& request,
                                    const EngineOptions& options);
absl::Status ValidateObserveRequest(
    const v1::ObserveRequest& request,
    int max_metrics = EngineOptions::kDefaultMaxMetrics);
absl::Status ValidateFineTuneRequest(const v1::FineTuneRequest& request);
absl::Status ValidateGetTrialRequest(const v1::GetTrialRequest& request);
absl::Status ValidateHeartbeatRequest(const v1::HeartbeatRequest& request);
absl::Status ValidateReportIntermediateRequest(
    const v1::ReportIntermediateRequest& request,
    int max_metrics = EngineOptions::kDefaultMaxMetrics);

// "1.5s", "20ms": durations in messages and trial metadata.
std::string DurationText(absl::Duration d);

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_REQUEST_VALIDATION_H_
