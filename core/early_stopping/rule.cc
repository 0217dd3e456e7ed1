#include "core/early_stopping/rule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/objective/objective.h"
#include "core/space/search_space.h"

namespace metaopt::early_stopping {
namespace {

constexpr int kDefaultMinTrials = 3;
constexpr int kMaxReductionFactor = 1000;
constexpr int kMaxCohortSize = 1000000;
constexpr int kMaxMinTrials = 1000000;

const char* GoalWord(v1::Goal goal) {
  return goal == v1::GOAL_MAXIMIZE ? "maximizing" : "minimizing";
}

double Median(std::vector<double> values) {
  const size_t n = values.size();
  std::sort(values.begin(), values.end());
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// The step of the trial's point before its last one; -1 if it has one point.
int64_t PreviousStep(const TrialCurve& trial) {
  const size_t n = trial.points.size();
  return n >= 2 ? trial.points[n - 2].step : -1;
}

absl::Status Invalid(const std::string& field, const std::string& rule) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", rule));
}

absl::Status CheckNonNegative(const std::string& field, int64_t value) {
  if (value < 0) return Invalid(field, absl::StrCat(value, " is negative"));
  return absl::OkStatus();
}

absl::Status CheckReductionFactor(const std::string& field, int32_t value) {
  if (value != 0 && (value < 2 || value > kMaxReductionFactor)) {
    return Invalid(field,
                   absl::StrCat(value, " is outside [2, ", kMaxReductionFactor,
                                "] (0: ", kDefaultReductionFactor, ")"));
  }
  return absl::OkStatus();
}

class MedianRule final : public Rule {
 public:
  explicit MedianRule(const v1::MedianStoppingRule& spec)
      : start_step_(spec.start_step()),
        min_trials_(spec.min_trials() == 0 ? kDefaultMinTrials
                                           : spec.min_trials()) {}

  Decision ShouldStop(const TrialCurve& trial,
                      absl::Span<const TrialCurve> others,
                      v1::Goal goal) const override {
    const int64_t step = trial.points.back().step;
    if (step < start_step_) return {};
    double best = trial.points.front().value;
    for (const Point& p : trial.points) {
      if (objective::Better(p.value, best, goal)) best = p.value;
    }
    std::vector<double> averages;
    for (const TrialCurve& other : others) {
      if (other.state != v1::TRIAL_STATE_COMPLETED) continue;
      double sum = 0;
      int count = 0;
      for (const Point& p : other.points) {
        if (p.step > step) break;
        sum += p.value;
        ++count;
      }
      if (count > 0) averages.push_back(sum / count);
    }
    if (static_cast<int64_t>(averages.size()) < min_trials_) {
      return {false, absl::StrCat("median: ", averages.size(),
                                  " completed trial(s) reported by step ", step,
                                  ", ", min_trials_, " needed")};
    }
    const double median = Median(averages);
    const bool stop = objective::Better(median, best, goal);
    return {stop, absl::StrCat("median: best value ", best, " by step ", step,
                               stop ? " is worse than" : " is not worse than",
                               " the median ", median,
                               " of the running averages of ", averages.size(),
                               " completed trial(s) (", GoalWord(goal), ")")};
  }
  std::string name() const override { return "median"; }

 private:
  const int64_t start_step_;
  const int64_t min_trials_;
};

// Counts the trials of `others` (those `in_group` accepts) that reached the
// rung and are strictly better there than `value`; `*reached` is how many
// reached it.
template <typename Pred>
int64_t CountBetterAtRung(absl::Span<const TrialCurve> others, int64_t rung,
                          double value, v1::Goal goal, Pred in_group,
                          int64_t* reached) {
  int64_t better = 0;
  *reached = 0;
  for (const TrialCurve& other : others) {
    if (!in_group(other)) continue;
    double at_rung = 0;
    if (!ValueAtRung(other.points, rung, &at_rung)) continue;
    ++*reached;
    if (objective::Better(at_rung, value, goal)) ++better;
  }
  return better;
}

class AshaRuleImpl final : public Rule {
 public:
  explicit AshaRuleImpl(const v1::AshaRule& spec)
      : rungs_(spec.min_resource(), spec.reduction_factor()),
        grace_period_(spec.grace_period()) {}

  Decision ShouldStop(const TrialCurve& trial,
                      absl::Span<const TrialCurve> others,
                      v1::Goal goal) const override {
    const int k = rungs_.Crossed(PreviousStep(trial), trial.points.back().step);
    if (k < 0 || rungs_.step(k) < grace_period_) return {};
    const int64_t rung = rungs_.step(k);
    const double value = trial.points.back().value;
    int64_t reached = 0;
    const int64_t better = CountBetterAtRung(
        others, rung, value, goal, [](const TrialCurve&) { return true; },
        &reached);
    const int64_t n = reached + 1;
    const int64_t keep = std::max<int64_t>(1, n / rungs_.eta());
    const bool stop = better >= keep;
    return {stop,
            absl::StrCat("asha: value ", value, " at rung ", k, " (step ", rung,
                         ") ranks ", better + 1, " of ", n, " trial(s) there; ",
                         stop ? "only the top " : "it is within the top ", keep,
                         " continue (", GoalWord(goal), ")")};
  }
  std::string name() const override { return "asha"; }

 private:
  const Rungs rungs_;
  const int64_t grace_period_;
};

class SuccessiveHalvingRuleImpl final : public Rule {
 public:
  explicit SuccessiveHalvingRuleImpl(const v1::SuccessiveHalvingRule& spec)
      : rungs_(spec.min_resource(), spec.reduction_factor()),
        cohort_size_(spec.cohort_size()) {}

  Decision ShouldStop(const TrialCurve& trial,
                      absl::Span<const TrialCurve> others,
                      v1::Goal goal) const override {
    const int k = rungs_.Crossed(PreviousStep(trial), trial.points.back().step);
    if (k < 0) return {};
    const int64_t rung = rungs_.step(k);
    const double value = trial.points.back().value;
    const int64_t cohort = CohortOf(trial.trial_id, cohort_size_);
    const int64_t quota = rungs_.Quota(cohort_size_, k);
    int64_t reached = 0;
    const int64_t better = CountBetterAtRung(
        others, rung, value, goal,
        [&](const TrialCurve& other) {
          return CohortOf(other.trial_id, cohort_size_) == cohort;
        },
        &reached);
    const bool stop = better >= quota;
    return {stop,
            absl::StrCat("successive_halving: value ", value, " at rung ", k,
                         " (step ", rung, "); ", better, " of the ", reached,
                         " other trial(s) of cohort ", cohort + 1,
                         " there are better, ", quota, " of its ", cohort_size_,
                         " pass the rung (", GoalWord(goal), ")")};
  }
  std::string name() const override { return "successive_halving"; }

 private:
  const Rungs rungs_;
  const int64_t cohort_size_;
};

class ThresholdRuleImpl final : public Rule {
 public:
  explicit ThresholdRuleImpl(const v1::ThresholdRule& spec)
      : threshold_(spec.threshold()), start_step_(spec.start_step()) {}

  Decision ShouldStop(const TrialCurve& trial, absl::Span<const TrialCurve>,
                      v1::Goal goal) const override {
    const Point& last = trial.points.back();
    if (last.step < start_step_) return {};
    const bool stop = objective::Better(threshold_, last.value, goal);
    return {
        stop,
        absl::StrCat("threshold: value ", last.value, " at step ", last.step,
                     stop ? " is worse than" : " is not worse than",
                     " the threshold ", threshold_, " (", GoalWord(goal), ")")};
  }
  std::string name() const override { return "threshold"; }

 private:
  const double threshold_;
  const int64_t start_step_;
};

}  // namespace

Rungs::Rungs(int64_t min_resource, int32_t reduction_factor)
    : eta_(reduction_factor == 0 ? kDefaultReductionFactor : reduction_factor),
      steps_(RungSteps(min_resource == 0 ? 1 : min_resource, eta_)) {}

int64_t Rungs::Quota(int64_t cohort_size, int k) const {
  int64_t quota = cohort_size;
  for (int i = 0; i <= k && quota > 0; ++i) quota /= eta_;
  return std::max<int64_t>(1, quota);
}

int Rungs::Crossed(int64_t previous_step, int64_t last_step) const {
  for (int k = static_cast<int>(steps_.size()) - 1; k >= 0; --k) {
    if (steps_[k] <= last_step) return steps_[k] > previous_step ? k : -1;
  }
  return -1;
}

std::vector<int64_t> RungSteps(int64_t min_resource, int reduction_factor) {
  std::vector<int64_t> rungs;
  for (int64_t r = min_resource; r > 0;) {
    rungs.push_back(r);
    if (r > std::numeric_limits<int64_t>::max() / reduction_factor) break;
    r *= reduction_factor;
  }
  return rungs;
}

bool ValueAtRung(const std::vector<Point>& curve, int64_t rung_step,
                 double* value) {
  auto it = std::lower_bound(
      curve.begin(), curve.end(), rung_step,
      [](const Point& p, int64_t step) { return p.step < step; });
  if (it == curve.end()) return false;
  *value = it->value;
  return true;
}

absl::Status ValidateEarlyStoppingSpec(const v1::EarlyStoppingSpec& spec,
                                       const std::string& field) {
  if (!spec.metric().empty()) {
    METAOPT_RETURN_IF_ERROR(
        space::ValidateName(spec.metric(), field + ".metric", "metric"));
  }
  if (!v1::Goal_IsValid(spec.metric_goal())) {
    return Invalid(field + ".metric_goal",
                   absl::StrCat(spec.metric_goal(), " is not a Goal"));
  }
  if (spec.metric_goal() != v1::GOAL_UNSPECIFIED && spec.metric().empty()) {
    return Invalid(field + ".metric_goal",
                   absl::StrCat(v1::Goal_Name(spec.metric_goal()),
                                " is set without metric (it is the metric's "
                                "direction; the value follows the objective)"));
  }
  switch (spec.rule_case()) {
    case v1::EarlyStoppingSpec::RULE_NOT_SET:
      return Invalid(field,
                     "no rule set (median, successive_halving, asha or "
                     "threshold); leave the field unset to never stop");
    case v1::EarlyStoppingSpec::kMedian: {
      const std::string f = field + ".median";
      const v1::MedianStoppingRule& rule = spec.median();
      if (rule.start_step() < 0) {
        return CheckNonNegative(f + ".start_step", rule.start_step());
      }
      if (rule.min_trials() < 0 || rule.min_trials() > kMaxMinTrials) {
        return Invalid(
            f + ".min_trials",
            absl::StrCat(rule.min_trials(), " is outside [0, ", kMaxMinTrials,
                         "] (0: ", kDefaultMinTrials, ")"));
      }
      return absl::OkStatus();
    }
    case v1::EarlyStoppingSpec::kSuccessiveHalving: {
      const std::string f = field + ".successive_halving";
      const v1::SuccessiveHalvingRule& rule = spec.successive_halving();
      METAOPT_RETURN_IF_ERROR(
          CheckNonNegative(f + ".min_resource", rule.min_resource()));
      METAOPT_RETURN_IF_ERROR(CheckReductionFactor(f + ".reduction_factor",
                                                   rule.reduction_factor()));
      if (rule.cohort_size() < 2 || rule.cohort_size() > kMaxCohortSize) {
        return Invalid(
            f + ".cohort_size",
            absl::StrCat(rule.cohort_size(), " is outside [2, ", kMaxCohortSize,
                         "] (the number of trials halved together "
                         "is required)"));
      }
      return absl::OkStatus();
    }
    case v1::EarlyStoppingSpec::kAsha: {
      const std::string f = field + ".asha";
      const v1::AshaRule& rule = spec.asha();
      METAOPT_RETURN_IF_ERROR(
          CheckNonNegative(f + ".min_resource", rule.min_resource()));
      METAOPT_RETURN_IF_ERROR(CheckReductionFactor(f + ".reduction_factor",
                                                   rule.reduction_factor()));
      return CheckNonNegative(f + ".grace_period", rule.grace_period());
    }
    case v1::EarlyStoppingSpec::kThreshold: {
      const std::string f = field + ".threshold";
      const v1::ThresholdRule& rule = spec.threshold();
      if (!std::isfinite(rule.threshold())) {
        return Invalid(
            f + ".threshold",
            absl::StrCat(rule.threshold(), " is not a finite number"));
      }
      return CheckNonNegative(f + ".start_step", rule.start_step());
    }
  }
  return Invalid(field, "unknown rule");
}

absl::StatusOr<std::unique_ptr<Rule>> CreateRule(
    const v1::EarlyStoppingSpec& spec) {
  METAOPT_RETURN_IF_ERROR(ValidateEarlyStoppingSpec(spec, "early_stopping"));
  switch (spec.rule_case()) {
    case v1::EarlyStoppingSpec::kMedian:
      return std::make_unique<MedianRule>(spec.median());
    case v1::EarlyStoppingSpec::kSuccessiveHalving:
      return std::make_unique<SuccessiveHalvingRuleImpl>(
          spec.successive_halving());
    case v1::EarlyStoppingSpec::kAsha:
      return std::make_unique<AshaRuleImpl>(spec.asha());
    case v1::EarlyStoppingSpec::kThreshold:
      return std::make_unique<ThresholdRuleImpl>(spec.threshold());
    case v1::EarlyStoppingSpec::RULE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("early_stopping: no rule set");
}

}  // namespace metaopt::early_stopping
