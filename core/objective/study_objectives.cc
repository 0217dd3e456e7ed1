#include "core/objective/study_objectives.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/common/strings.h"
#include "core/objective/objective.h"

namespace metaopt::objective {
namespace {

Constraint FromProto(const v1::Constraint& constraint) {
  Constraint out;
  out.metric = constraint.metric();
  out.sense = constraint.sense() == v1::CONSTRAINT_SENSE_AT_LEAST
                  ? Constraint::Sense::kAtLeast
                  : Constraint::Sense::kAtMost;
  out.bound = constraint.bound();
  return out;
}

}  // namespace

StudyObjectives::StudyObjectives(const v1::StudySpec& spec) {
  if (spec.objectives_size() > 1) {
    objectives_.assign(spec.objectives().begin(), spec.objectives().end());
  } else if (spec.objectives_size() == 1) {
    objectives_.push_back(spec.objectives(0));
  } else {
    objectives_.push_back(spec.objective());
  }
  for (const v1::Constraint& constraint : spec.constraints()) {
    constraints_.push_back(FromProto(constraint));
  }
}

absl::Status StudyObjectives::CompleteOutcome(
    std::optional<double> value,
    const google::protobuf::Map<std::string, double>& metrics,
    v1::Trial* trial) const {
  const std::string& first = objectives_[0].name();
  const auto named = first.empty() ? metrics.end() : metrics.find(first);
  if (value.has_value() && named != metrics.end() && named->second != *value) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics[", Quote(first), "]: ", named->second,
        " differs from value ", *value,
        "; the objective's value is given once, or twice the same"));
  }
  if (!value.has_value()) {
    if (named == metrics.end()) {
      return absl::InvalidArgumentError(
          first.empty() || !multiple()
              ? std::string("value or failure: one of them is required")
              : absl::StrCat("metrics[", Quote(first),
                             "]: missing; an observation carries every "
                             "objective's value (value or metrics)"));
    }
    value = named->second;
  }
  const bool named_given = named != metrics.end();
  for (int i = 1; i < size(); ++i) {
    if (!metrics.contains(objectives_[i].name())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics[", Quote(objectives_[i].name()),
          "]: missing; an observation carries every objective's value"));
    }
  }
  for (int i = 0; i < size(); ++i) {
    const double v = i == 0 ? *value : metrics.at(objectives_[i].name());
    if (std::abs(v) > kMaxObjectiveMagnitude) {
      return absl::InvalidArgumentError(absl::StrCat(
          i == 0 && !named_given ? std::string("value")
                                 : absl::StrCat("metrics[",
                                                Quote(objectives_[i].name()),
                                                "]"),
          ": ", v, " is outside [-1e100, 1e100]; rescale the objective"));
    }
  }
  absl::flat_hash_map<std::string, double> by_name(metrics.begin(),
                                                   metrics.end());
  for (const Constraint& constraint : constraints_) {
    if (!by_name.contains(constraint.metric)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics[", Quote(constraint.metric),
          "]: missing; the study constrains it (spec.constraints), so every "
          "completed trial reports it"));
    }
  }
  trial->set_value(*value);
  *trial->mutable_metrics() = metrics;
  if (multiple() && !first.empty()) (*trial->mutable_metrics())[first] = *value;
  if (constrained()) {
    trial->set_feasible(objective::Feasible(constraints_, by_name));
  }
  return absl::OkStatus();
}

std::optional<Point> StudyObjectives::Targets(const v1::Trial& trial) const {
  if (!trial.has_value()) return std::nullopt;
  Point point(objectives_.size());
  point[0] = Minimized(trial.value(), objectives_[0].goal());
  for (size_t i = 1; i < objectives_.size(); ++i) {
    const auto it = trial.metrics().find(objectives_[i].name());
    if (it == trial.metrics().end()) return std::nullopt;
    point[i] = Minimized(it->second, objectives_[i].goal());
  }
  return point;
}

Point StudyObjectives::ReferencePoint(absl::Span<const Point> points) const {
  Point reference(objectives_.size(), 0.0);
  for (size_t i = 0; i < objectives_.size(); ++i) {
    if (objectives_[i].has_reference()) {
      reference[i] = Minimized(objectives_[i].reference(), objectives_[i].goal());
      continue;
    }
    if (points.empty()) continue;
    double worst = points[0][i];
    double best = points[0][i];
    for (const Point& p : points) {
      worst = std::max(worst, p[i]);
      best = std::min(best, p[i]);
    }
    const double range = worst - best;
    reference[i] =
        worst + 0.1 * (range > 0 ? range : std::max(1.0, std::abs(worst)));
  }
  return reference;
}

StudyObjectives::FeasibleTargets StudyObjectives::FeasibleOf(
    absl::Span<const v1::Trial> trials) const {
  FeasibleTargets feasible;
  for (size_t i = 0; i < trials.size(); ++i) {
    const v1::Trial& trial = trials[i];
    if (trial.state() != v1::TRIAL_STATE_COMPLETED || !Feasible(trial)) {
      continue;
    }
    std::optional<Point> point = Targets(trial);
    if (!point.has_value()) continue;
    feasible.index.push_back(static_cast<int>(i));
    feasible.targets.push_back(*std::move(point));
  }
  return feasible;
}

std::vector<int> StudyObjectives::ParetoFront(
    absl::Span<const v1::Trial> trials) const {
  const FeasibleTargets feasible = FeasibleOf(trials);
  std::vector<int> front;
  for (int kept : NonDominated(feasible.targets)) {
    front.push_back(feasible.index[kept]);
  }
  return front;
}

v1::ParetoFrontSummary StudyObjectives::Summarize(
    absl::Span<const Point> front, absl::Span<const Point> points) const {
  v1::ParetoFrontSummary summary;
  summary.set_size(static_cast<int64_t>(front.size()));
  const Point reference = ReferencePoint(points);
  if (!front.empty()) summary.set_hypervolume(Hypervolume(front, reference));
  for (size_t i = 0; i < objectives_.size(); ++i) {
    // Minimized is its own inverse.
    summary.add_reference_point(Minimized(reference[i], objectives_[i].goal()));
  }
  return summary;
}

std::vector<std::string> StudyObjectives::PolicyMetricNames() const {
  std::vector<std::string> names;
  const auto add = [&names](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  };
  for (size_t i = 1; i < objectives_.size(); ++i) add(objectives_[i].name());
  for (const Constraint& constraint : constraints_) add(constraint.metric);
  return names;
}

double Hypervolume(absl::Span<const Point> points, const Point& reference) {
  switch (reference.size()) {
    case 1: {
      double volume = 0;
      for (const Point& p : points) {
        volume = std::max(volume, reference[0] - p[0]);
      }
      return volume;
    }
    case 2:
      return Hypervolume2D(points, reference);
    default:
      return Hypervolume3D(points, reference);
  }
}

}  // namespace metaopt::objective
