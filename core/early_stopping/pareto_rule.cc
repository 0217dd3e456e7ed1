#include "core/early_stopping/pareto_rule.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"

namespace metaopt::early_stopping {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The step of the trial's point before its last one; -1 if it has one point.
int64_t PreviousStep(const ParetoCurve& trial) {
  const size_t n = trial.points.size();
  return n >= 2 ? trial.points[n - 2].step : -1;
}

// The point of `curve` at rung `rung_step`: its first point with step >=
// rung_step; null when it has none.
const ParetoPoint* PointAtRung(const std::vector<ParetoPoint>& curve,
                               int64_t rung_step) {
  auto it = std::lower_bound(
      curve.begin(), curve.end(), rung_step,
      [](const ParetoPoint& p, int64_t step) { return p.step < step; });
  return it == curve.end() ? nullptr : &*it;
}

std::string Targets(const ParetoPoint& point) {
  std::string text =
      absl::StrCat("(", absl::StrJoin(point.targets, ", "), ")");
  if (point.violation > 0) {
    absl::StrAppend(&text, " violating the constraints by ", point.violation);
  }
  return text;
}

// The fronts of non-dominated sorting under ConstrainedDominates ("A Fast
// and Elitist Multiobjective Genetic Algorithm: NSGA-II"): front[i] for each
// point, 0 first. O(n^2) dominance tests.
std::vector<int> Fronts(absl::Span<const ParetoPoint> points) {
  const int n = static_cast<int>(points.size());
  std::vector<int> dominators(n, 0);
  std::vector<std::vector<int>> dominated(n);
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      if (ConstrainedDominates(points[i], points[j])) {
        dominated[i].push_back(j);
        ++dominators[j];
      } else if (ConstrainedDominates(points[j], points[i])) {
        dominated[j].push_back(i);
        ++dominators[i];
      }
    }
  }
  std::vector<int> front(n, -1);
  std::vector<int> current;
  for (int i = 0; i < n; ++i) {
    if (dominators[i] == 0) current.push_back(i);
  }
  for (int level = 0; !current.empty(); ++level) {
    std::vector<int> next;
    for (int i : current) {
      front[i] = level;
      for (int j : dominated[i]) {
        if (--dominators[j] == 0) next.push_back(j);
      }
    }
    current = std::move(next);
  }
  return front;
}

class ParetoAshaRule final : public ParetoRule {
 public:
  explicit ParetoAshaRule(const v1::AshaRule& spec)
      : rungs_(spec.min_resource(), spec.reduction_factor()),
        grace_period_(spec.grace_period()) {}

  Decision ShouldStop(const ParetoCurve& trial,
                      absl::Span<const ParetoCurve> others) const override {
    const int k = rungs_.Crossed(PreviousStep(trial), trial.points.back().step);
    if (k < 0 || rungs_.step(k) < grace_period_) return {};
    const int64_t rung = rungs_.step(k);
    // The trials at the rung by id, the deciding one among them.
    std::vector<std::pair<int64_t, const ParetoPoint*>> at_rung = {
        {trial.trial_id, &trial.points.back()}};
    for (const ParetoCurve& other : others) {
      const ParetoPoint* point = PointAtRung(other.points, rung);
      if (point != nullptr) at_rung.emplace_back(other.trial_id, point);
    }
    std::sort(at_rung.begin(), at_rung.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<ParetoPoint> points;
    int self = 0;
    for (size_t i = 0; i < at_rung.size(); ++i) {
      if (at_rung[i].first == trial.trial_id) self = static_cast<int>(i);
      points.push_back(*at_rung[i].second);
    }
    std::vector<int> front;
    const std::vector<int> order = ParetoOrder(points, &front);
    const int64_t n = static_cast<int64_t>(points.size());
    const int64_t keep = std::max<int64_t>(1, n / rungs_.eta());
    const int64_t rank =
        std::find(order.begin(), order.end(), self) - order.begin() + 1;
    const bool stop = rank > keep;
    return {stop,
            absl::StrCat("asha: targets ", Targets(trial.points.back()),
                         " at rung ", k, " (step ", rung, ") rank ", rank,
                         " of ", n, " trial(s) there (Pareto front ",
                         front[self] + 1, "); ",
                         stop ? "only the top " : "they are within the top ",
                         keep, " continue (minimised targets)")};
  }
  std::string name() const override { return "asha"; }

 private:
  const Rungs rungs_;
  const int64_t grace_period_;
};

class ParetoSuccessiveHalvingRule final : public ParetoRule {
 public:
  explicit ParetoSuccessiveHalvingRule(const v1::SuccessiveHalvingRule& spec)
      : rungs_(spec.min_resource(), spec.reduction_factor()),
        cohort_size_(spec.cohort_size()) {}

  Decision ShouldStop(const ParetoCurve& trial,
                      absl::Span<const ParetoCurve> others) const override {
    const int k = rungs_.Crossed(PreviousStep(trial), trial.points.back().step);
    if (k < 0) return {};
    const int64_t rung = rungs_.step(k);
    const ParetoPoint& point = trial.points.back();
    const int64_t cohort = CohortOf(trial.trial_id, cohort_size_);
    const int64_t quota = rungs_.Quota(cohort_size_, k);
    // Trials that dominate this one precede it in every order the cohort's
    // later reports can produce: with `quota` of them it cannot pass.
    int64_t reached = 0;
    int64_t dominating = 0;
    for (const ParetoCurve& other : others) {
      if (CohortOf(other.trial_id, cohort_size_) != cohort) continue;
      const ParetoPoint* at = PointAtRung(other.points, rung);
      if (at == nullptr) continue;
      ++reached;
      if (ConstrainedDominates(*at, point)) ++dominating;
    }
    const bool stop = dominating >= quota;
    return {stop,
            absl::StrCat("successive_halving: targets ", Targets(point),
                         " at rung ", k, " (step ", rung, "); ", dominating,
                         " of the ", reached, " other trial(s) of cohort ",
                         cohort + 1, " there dominate them, ", quota,
                         " of its ", cohort_size_,
                         " pass the rung (minimised targets)")};
  }
  std::string name() const override { return "successive_halving"; }

 private:
  const Rungs rungs_;
  const int64_t cohort_size_;
};

}  // namespace

bool ConstrainedDominates(const ParetoPoint& a, const ParetoPoint& b) {
  if (a.violation != b.violation) return a.violation < b.violation;
  return a.violation == 0 && objective::Dominates(a.targets, b.targets);
}

std::vector<int> ParetoOrder(absl::Span<const ParetoPoint> points,
                             std::vector<int>* front_out) {
  const int n = static_cast<int>(points.size());
  std::vector<int> front = Fronts(points);
  std::vector<int> order;
  if (n == 0) {
    if (front_out != nullptr) front_out->clear();
    return order;
  }
  // Each target's range over the points, for the distances.
  const size_t D = points[0].targets.size();
  std::vector<double> scale(D, 1.0);
  for (size_t d = 0; d < D; ++d) {
    double lo = kInf;
    double hi = -kInf;
    for (const ParetoPoint& p : points) {
      lo = std::min(lo, p.targets[d]);
      hi = std::max(hi, p.targets[d]);
    }
    if (hi > lo) scale[d] = hi - lo;
  }
  auto distance = [&](int i, int j) {
    double sum = 0;
    for (size_t d = 0; d < D; ++d) {
      const double delta = (points[i].targets[d] - points[j].targets[d]) /
                           scale[d];
      sum += delta * delta;
    }
    return std::sqrt(sum);
  };
  const int levels = *std::max_element(front.begin(), front.end()) + 1;
  for (int level = 0; level < levels; ++level) {
    std::vector<int> members;
    for (int i = 0; i < n; ++i) {
      if (front[i] == level) members.push_back(i);
    }
    // Each member's distance to its nearest admitted point.
    std::vector<double> nearest(members.size(), kInf);
    for (size_t m = 0; m < members.size(); ++m) {
      for (int admitted : order) {
        nearest[m] = std::min(nearest[m], distance(members[m], admitted));
      }
    }
    std::vector<bool> taken(members.size(), false);
    for (size_t count = 0; count < members.size(); ++count) {
      int best = -1;
      for (size_t m = 0; m < members.size(); ++m) {
        if (taken[m]) continue;
        if (best < 0) {
          best = static_cast<int>(m);
          continue;
        }
        const bool better =
            order.empty()
                ? points[members[m]].targets[0] <
                      points[members[best]].targets[0]
                : nearest[m] > nearest[best];
        if (better) best = static_cast<int>(m);
      }
      taken[best] = true;
      order.push_back(members[best]);
      for (size_t m = 0; m < members.size(); ++m) {
        if (!taken[m]) {
          nearest[m] = std::min(nearest[m], distance(members[m], members[best]));
        }
      }
    }
  }
  if (front_out != nullptr) *front_out = std::move(front);
  return order;
}

absl::Status CheckParetoRule(const v1::EarlyStoppingSpec& spec,
                             const std::string& field) {
  if (spec.rule_case() != v1::EarlyStoppingSpec::kAsha &&
      spec.rule_case() != v1::EarlyStoppingSpec::kSuccessiveHalving) {
    const std::string rule = spec.rule_case() == v1::EarlyStoppingSpec::kMedian
                                 ? "median"
                                 : spec.rule_case() ==
                                           v1::EarlyStoppingSpec::kThreshold
                                       ? "threshold"
                                       : "no rule";
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".", rule,
        ": is not supported with several objectives; the median and "
        "threshold rules compare one value (asha and successive_halving rank "
        "trials by Pareto rank)"));
  }
  if (!spec.metric().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".metric: ", Quote(spec.metric()),
        " is not supported with several objectives; the rule ranks trials "
        "by every objective's value (leave metric empty)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ParetoRule>> CreateParetoRule(
    const v1::EarlyStoppingSpec& spec) {
  METAOPT_RETURN_IF_ERROR(ValidateEarlyStoppingSpec(spec, "early_stopping"));
  METAOPT_RETURN_IF_ERROR(CheckParetoRule(spec, "early_stopping"));
  if (spec.rule_case() == v1::EarlyStoppingSpec::kAsha) {
    return std::make_unique<ParetoAshaRule>(spec.asha());
  }
  return std::make_unique<ParetoSuccessiveHalvingRule>(
      spec.successive_halving());
}

}  // namespace metaopt::early_stopping
