#include "core/study/intermediate.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "core/common/proto_time.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/objective/objective.h"

namespace metaopt::study {

void OmitIntermediateValues(v1::Trial& trial) {
  if (trial.intermediate_values().empty()) return;
  (*trial.mutable_metadata())[kOmittedIntermediateKey] =
      absl::StrCat(trial.intermediate_values_size());
  trial.clear_intermediate_values();
}

void FitForResponse(v1::Trial& trial, int64_t max_bytes) {
  if (static_cast<int64_t>(trial.ByteSizeLong()) > max_bytes) {
    OmitIntermediateValues(trial);
  }
}

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

int64_t IntermediateValueBytes(const v1::IntermediateValue& value) {
  const size_t size = value.ByteSizeLong();
  // One tag byte (field 12) and the length prefix.
  return 1 + static_cast<int64_t>(
                 google::protobuf::io::CodedOutputStream::VarintSize64(size)) +
         static_cast<int64_t>(size);
}

int64_t IntermediateBytes(const v1::Trial& trial) {
  int64_t bytes = 0;
  for (const v1::IntermediateValue& value : trial.intermediate_values()) {
    bytes += IntermediateValueBytes(value);
  }
  return bytes;
}

absl::StatusOr<Recorded> RecordIntermediate(
    const v1::ReportIntermediateRequest& request, absl::Time now,
    const IntermediateLimits& limits, int64_t trial_bytes,
    const v1::Trial& trial, v1::IntermediateValue* value) {
  const auto& values = trial.intermediate_values();
  const auto at =
      std::lower_bound(values.begin(), values.end(), request.step(),
                       [](const v1::IntermediateValue& v, int64_t step) {
                         return v.step() < step;
                       });
  if (at != values.end() && at->step() == request.step()) {
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
      *value = *at;
      return Recorded::kRepeat;
    }
    return absl::FailedPreconditionError(
        absl::StrCat("step: ", request.step(), " of trial ", trial.id(),
                     " is already recorded with value ", at->value(),
                     same_metrics ? "" : " and other metrics",
                     "; a step is reported once "
                     "(a retry must repeat its value and metrics)"));
  }
  if (values.size() >= limits.max_values) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "step: ", request.step(), " not recorded: trial ", trial.id(),
        " already holds ", values.size(),
        " intermediate values, the limit (--max-intermediate-values); report "
        "fewer steps"));
  }
  v1::IntermediateValue recorded;
  recorded.set_step(request.step());
  recorded.set_value(request.value());
  *recorded.mutable_metrics() = request.metrics();
  *recorded.mutable_report_time() = ToProtoTimestamp(now);
  const int64_t bytes = IntermediateValueBytes(recorded);
  if (trial_bytes + bytes > limits.max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "metrics: the report of step ", request.step(), " (", bytes,
        " bytes with its ", request.metrics().size(),
        " metrics) would take the intermediate values of trial ", trial.id(),
        " to ", trial_bytes + bytes, " bytes, over the limit of ",
        limits.max_bytes,
        " (--max-trial-intermediate-bytes); it was not recorded: report "
        "fewer steps or fewer metrics"));
  }
  *value = std::move(recorded);
  return at == values.end() ? Recorded::kExtends : Recorded::kInserted;
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

early_stopping::TrialCurve CurveOf(const v1::Trial& trial,
                                   const v1::IntermediateValue& last,
                                   const std::string& metric) {
  early_stopping::TrialCurve curve = CurveOf(trial, metric);
  if (metric.empty()) {
    curve.points.push_back({last.step(), last.value()});
  } else if (auto it = last.metrics().find(metric);
             it != last.metrics().end()) {
    curve.points.push_back({last.step(), it->second});
  }
  return curve;
}

namespace {

// The report's point, or nullopt when it lacks an objective's value.
std::optional<early_stopping::ParetoPoint> ParetoPointOf(
    const v1::IntermediateValue& report,
    const objective::StudyObjectives& objectives) {
  early_stopping::ParetoPoint point;
  point.step = report.step();
  absl::flat_hash_map<std::string, double> metrics(report.metrics().begin(),
                                                   report.metrics().end());
  metrics[objectives.objective(0).name()] = report.value();
  for (int i = 0; i < objectives.size(); ++i) {
    const v1::Objective& objective = objectives.objective(i);
    const auto it = metrics.find(objective.name());
    if (it == metrics.end()) return std::nullopt;
    point.targets.push_back(objective::Minimized(it->second, objective.goal()));
  }
  point.violation =
      objective::TotalViolation(objectives.constraints(), metrics);
  return point;
}

}  // namespace

early_stopping::ParetoCurve ParetoCurveOf(
    const v1::Trial& trial, const objective::StudyObjectives& objectives,
    const v1::IntermediateValue* last) {
  early_stopping::ParetoCurve curve;
  curve.trial_id = trial.id();
  curve.state = trial.state();
  curve.points.reserve(trial.intermediate_values_size() + 1);
  auto add = [&](const v1::IntermediateValue& report) {
    std::optional<early_stopping::ParetoPoint> point =
        ParetoPointOf(report, objectives);
    if (point.has_value()) curve.points.push_back(*std::move(point));
  };
  for (const v1::IntermediateValue& report : trial.intermediate_values()) {
    add(report);
  }
  if (last != nullptr) add(*last);
  return curve;
}

absl::Status CheckParetoReport(const v1::ReportIntermediateRequest& request,
                               const objective::StudyObjectives& objectives,
                               const std::string& study_id) {
  const std::string& first = objectives.objective(0).name();
  if (const auto it = request.metrics().find(first);
      it != request.metrics().end() && it->second != request.value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics[", Quote(first), "]: ", FormatNumber(it->second),
        " differs from value ", FormatNumber(request.value()),
        "; the value is the first objective's (leave it out of metrics or "
        "repeat it)"));
  }
  auto require = [&](const std::string& name,
                     const char* why) -> absl::Status {
    if (name == first || request.metrics().contains(name)) {
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat("metrics[", Quote(name), "]: missing; study ",
                     Quote(study_id), why));
  };
  for (int i = 1; i < objectives.size(); ++i) {
    METAOPT_RETURN_IF_ERROR(require(
        objectives.objective(i).name(),
        " stops trials by the Pareto rank of their reports "
        "(spec.early_stopping with several objectives), so every report "
        "carries every objective's value"));
  }
  for (const objective::Constraint& constraint : objectives.constraints()) {
    METAOPT_RETURN_IF_ERROR(require(
        constraint.metric,
        " stops trials by the Pareto rank of their reports and constrains "
        "this metric (spec.constraints), so every report carries it"));
  }
  return absl::OkStatus();
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
