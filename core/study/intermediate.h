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
#include "core/early_stopping/rule.h"
#include "metaopt/v1/optimizer_service.pb.h"

namespace metaopt::study {

// Most intermediate values one trial keeps; one more is RESOURCE_EXHAUSTED.
inline constexpr int kMaxIntermediateValues = 10000;

// Trial metadata keys of the stop mark: the step whose report the rule
// stopped the trial at, and the rule's reason.
inline constexpr char kStopStepKey[] = "stop_step";
inline constexpr char kStopReasonKey[] = "stop_reason";

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

// Records the report's step, value and metrics in `trial` (keeping
// intermediate_values by increasing step), stamped `now`. FAILED_PRECONDITION
// if the step is recorded with another value or metrics; RESOURCE_EXHAUSTED
// if the trial already holds kMaxIntermediateValues values. Thread-compatible.
absl::StatusOr<Recorded> RecordIntermediate(
    const v1::ReportIntermediateRequest& request, absl::Time now,
    v1::Trial& trial);

// The trial's curve, for early_stopping::Rule: its reported values, or with a
// non-empty `metric` (EarlyStoppingSpec.metric) that metric of each report
// (reports without it are left out).
early_stopping::TrialCurve CurveOf(const v1::Trial& trial,
                                   const std::string& metric = "");

// The goal the study's early-stopping rule follows: `spec.metric_goal` when it
// compares a metric and sets one, else the objective's.
v1::Goal StoppingGoal(const v1::StudySpec& spec);

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_INTERMEDIATE_H_
