#include "core/study/intermediate.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/common/proto_time.h"

namespace metaopt::study {

std::optional<StopMark> GetStopMark(const v1::Trial& trial) {
  const auto it = trial.metadata().find(kStopStepKey);
  if (it == trial.metadata().end()) return std::nullopt;
  StopMark mark;
  if (!absl::SimpleAtoi(it->second, &mark.step)) return std::nullopt;
  const auto reason = trial.metadata().find(kStopReasonKey);
  if (reason != trial.metadata().end()) mark.reason = reason->second;
  return mark;
}

void SetStopMark(v1::Trial& trial, int64_t step, const std::string& reason) {
  (*trial.mutable_metadata())[kStopStepKey] = absl::StrCat(step);
  (*trial.mutable_metadata())[kStopReasonKey] = reason;
}

absl::StatusOr<Recorded> RecordIntermediate(
    const v1::ReportIntermediateRequest& request, absl::Time now,
    v1::Trial& trial) {
  auto* values = trial.mutable_intermediate_values();
  const auto at =
      std::lower_bound(values->begin(), values->end(), request.step(),
                       [](const v1::IntermediateValue& v, int64_t step) {
                         return v.step() < step;
                       });
  if (at != values->end() && at->step() == request.step()) {
    // Bit-for-bit equal values (a retry sends the same double).
    const bool same_metrics =
        at->metrics().size() == request.metrics().size() &&
        std::all_of(request.metrics().begin(), request.metrics().end(),
                    [&](const auto& entry) {
                      const auto it = at->metrics().find(entry.first);
                      return it != at->metrics().end() &&
                             it->second == entry.second;
                    });
    if (at->value() == request.value() && same_metrics) {
      return Recorded::kRepeat;
    }
    return absl::FailedPreconditionError(
        absl::StrCat("step: ", request.step(), " of trial ", trial.id(),
                     " is already recorded with value ", at->value(),
                     same_metrics ? "" : " and other metrics",
                     "; a step is reported once "
                     "(a retry must repeat its value and metrics)"));
  }
  if (values->size() >= kMaxIntermediateValues) {
    return absl::ResourceExhaustedError(
        absl::StrCat("trial ", trial.id(), " already holds ", values->size(),
                     " intermediate values, the limit; report fewer steps"));
  }
  const bool extends = at == values->end();
  const int index = static_cast<int>(at - values->begin());
  v1::IntermediateValue* added = values->Add();
  added->set_step(request.step());
  added->set_value(request.value());
  *added->mutable_metrics() = request.metrics();
  *added->mutable_report_time() = ToProtoTimestamp(now);
  // Move the appended value to its place.
  for (int i = values->size() - 1; i > index; --i)
    values->SwapElements(i, i - 1);
  return extends ? Recorded::kExtends : Recorded::kInserted;
}

early_stopping::TrialCurve CurveOf(const v1::Trial& trial,
                                   const std::string& metric) {
  early_stopping::TrialCurve curve;
  curve.trial_id = trial.id();
  curve.state = trial.state();
  curve.points.reserve(trial.intermediate_values_size());
  for (const v1::IntermediateValue& v : trial.intermediate_values()) {
    if (metric.empty()) {
      curve.points.push_back({v.step(), v.value()});
      continue;
    }
    auto it = v.metrics().find(metric);
    if (it != v.metrics().end()) curve.points.push_back({v.step(), it->second});
  }
  return curve;
}

v1::Goal StoppingGoal(const v1::StudySpec& spec) {
  const v1::EarlyStoppingSpec& stopping = spec.early_stopping();
  if (!stopping.metric().empty() &&
      stopping.metric_goal() != v1::GOAL_UNSPECIFIED) {
    return stopping.metric_goal();
  }
  return spec.objective().goal();
}

}  // namespace metaopt::study
