// Intermediate values of trials (ReportIntermediate) and their early-stopping
// marks, as the study engine records them in v1::Trial.
#ifndef METAOPT_CORE_STUDY_INTERMEDIATE_H_
#define METAOPT_CORE_STUDY_INTERMEDIATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/early_stopping/pareto_rule.h"
#include "core/early_stopping/rule.h"
#include "core/objective/study_objectives.h"
#include "metaopt/v1/optimizer_service.pb.h"

namespace metaopt::study {

// Trial metadata keys of the stop mark: the step whose report the rule
// stopped the trial at, and the rule's reason.
inline constexpr char kStopStepKey[] = "stop_step";
inline constexpr char kStopReasonKey[] = "stop_reason";

// Trial metadata key of a trial in a response that leaves its intermediate
// values out (the best trial of a Study; a trial stored before the size
// limits that would not fit a response): how many were left out. GetTrial
// returns them whenever they fit.
inline constexpr char kOmittedIntermediateKey[] =
    "intermediate_values_omitted";

// Clears the trial's intermediate values and, if it had any, notes how many
// under kOmittedIntermediateKey.
void OmitIntermediateValues(v1::Trial& trial);

// OmitIntermediateValues when the trial serializes to more than `max_bytes`.
void FitForResponse(v1::Trial& trial, int64_t max_bytes);

struct StopMark {
  int64_t step = 0;
  std::string reason;
};

// The trial's stop mark, if the early-stopping rule marked it.
std::optional<StopMark> GetStopMark(const v1::Trial& trial);
void SetStopMark(v1::Trial& trial, int64_t step, const std::string& reason);

// What RecordIntermediate did.
enum class Recorded {
  // The step was recorded before with the same value and metrics.
  kRepeat,
  // A new step larger than every recorded one.
  kExtends,
  // A new step below the largest recorded one (a late report).
  kInserted,
};

// The bytes `value` takes in its serialized trial (the message and its field
// framing): what the per-trial and per-study limits of intermediate values
// count.
int64_t IntermediateValueBytes(const v1::IntermediateValue& value);
// The sum of IntermediateValueBytes over the trial's intermediate values.
int64_t IntermediateBytes(const v1::Trial& trial);

// Bounds of one trial's intermediate values (EngineOptions).
struct IntermediateLimits {
  int max_values = 0;
  int64_t max_bytes = 0;
};

// Checks the report's step, value and metrics against `trial`'s intermediate
// values and sets `*value` to what the report records, stamped `now` (for a
// repeat, the value recorded before); `trial_bytes` is
// IntermediateBytes(trial), which the caller keeps. `trial` is not changed:
// the caller adds `*value` (storage::InsertByStep) once it is stored.
// FAILED_PRECONDITION if the step is recorded with another value or metrics;
// RESOURCE_EXHAUSTED if the trial already holds `limits.max_values` values or
// the new one would take it past `limits.max_bytes`. The cost is that of the
// new value's metrics and a binary search. Thread-compatible.
absl::StatusOr<Recorded> RecordIntermediate(
    const v1::ReportIntermediateRequest& request, absl::Time now,
    const IntermediateLimits& limits, int64_t trial_bytes,
    const v1::Trial& trial, v1::IntermediateValue* value);

// The trial's curve, for early_stopping::Rule: its reported values, or with a
// non-empty `metric` (EarlyStoppingSpec.metric) that metric of each report
// (reports without it are left out).
early_stopping::TrialCurve CurveOf(const v1::Trial& trial,
                                   const std::string& metric = "");
// CurveOf `trial` with `last`, a step past its last, reported too.
early_stopping::TrialCurve CurveOf(const v1::Trial& trial,
                                   const v1::IntermediateValue& last,
                                   const std::string& metric);

// The trial's reports as points of a study with several objectives: each
// report's minimised targets (the first objective's from its value, the
// others' from its metrics) and its summed constraint violation (a missing
// constrained metric violates infinitely); reports that lack an objective's
// value are left out. With `last`, a step past its last, reported too.
early_stopping::ParetoCurve ParetoCurveOf(
    const v1::Trial& trial, const objective::StudyObjectives& objectives,
    const v1::IntermediateValue* last = nullptr);

// OK when `request`, a report to study `study_id` with several objectives
// and an early-stopping rule, carries what the rule ranks: every further
// objective's value and every constrained metric in its metrics, and the
// first objective's as its value (if metrics holds it too, equal).
// INVALID_ARGUMENT naming the metric otherwise.
absl::Status CheckParetoReport(const v1::ReportIntermediateRequest& request,
                               const objective::StudyObjectives& objectives,
                               const std::string& study_id);

// The goal the study's early-stopping rule follows: `spec.metric_goal` when it
// compares a metric and sets one, else the objective's.
v1::Goal StoppingGoal(const v1::StudySpec& spec);

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_INTERMEDIATE_H_
