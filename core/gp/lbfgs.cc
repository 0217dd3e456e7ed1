#include "core/gp/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace metaopt::gp {
namespace {

struct Correction {
  Eigen::VectorXd s;
  Eigen::VectorXd y;
  double rho;
};

class Box {
 public:
  Box(const Eigen::VectorXd& lower, const Eigen::VectorXd& upper)
      : lower_(lower), upper_(upper), active_(lower.size() > 0) {}

  Eigen::VectorXd Clip(const Eigen::VectorXd& x) const {
    if (!active_) return x;
    return x.cwiseMax(lower_).cwiseMin(upper_);
  }
  // Zeroes the components of v that would move x out of the box (v is a step
  // direction when `sign` = +1, a gradient when `sign` = -1).
  void DropBlocked(const Eigen::VectorXd& x, double sign,
                   Eigen::VectorXd* v) const {
    if (!active_) return;
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      const double step = sign * (*v)[i];
      if ((x[i] <= lower_[i] && step < 0) || (x[i] >= upper_[i] && step > 0)) {
        (*v)[i] = 0.0;
      }
    }
  }

 private:
  Eigen::VectorXd lower_;
  Eigen::VectorXd upper_;
  bool active_;
};

}  // namespace

absl::StatusOr<LbfgsResult> MinimizeLbfgs(const ObjectiveFunction& f,
                                          const Eigen::VectorXd& x0,
                                          const LbfgsOptions& options) {
  const Eigen::Index n = x0.size();
  const bool bounded = options.lower.size() > 0 || options.upper.size() > 0;
  if (bounded && (options.lower.size() != n || options.upper.size() != n)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lbfgs: bounds must both have size ", n));
  }
  if (bounded && (options.lower.array() > options.upper.array()).any()) {
    return absl::InvalidArgumentError("lbfgs: lower bound above upper bound");
  }
  if (options.history < 1 || options.max_line_search_steps < 1) {
    return absl::InvalidArgumentError(
        "lbfgs: history and max_line_search_steps must be >= 1");
  }
  const absl::Time deadline = absl::Now() + options.time_budget;
  const Box box(options.lower, options.upper);

  LbfgsResult result;
  Eigen::VectorXd x = box.Clip(x0);
  Eigen::VectorXd g = Eigen::VectorXd::Zero(n);
  double fx = f(x, &g);
  result.evaluations = 1;
  if (!std::isfinite(fx) || !g.allFinite()) {
    return absl::InvalidArgumentError(
        "lbfgs: objective or gradient not finite at the starting point");
  }

  std::deque<Correction> memory;
  Eigen::VectorXd g_new(n);
  std::vector<double> alpha;
  result.termination = LbfgsTermination::kMaxIterations;
  for (int iter = 0; iter < options.max_iterations; ++iter) {
    if (absl::Now() >= deadline) {
      result.termination = LbfgsTermination::kTimeBudget;
      break;
    }
    Eigen::VectorXd pg = g;
    box.DropBlocked(x, -1.0, &pg);
    if (pg.lpNorm<Eigen::Infinity>() <= options.gradient_tolerance) {
      result.termination = LbfgsTermination::kGradientTolerance;
      break;
    }
    // Two-loop recursion on the projected gradient.
    Eigen::VectorXd q = pg;
    alpha.assign(memory.size(), 0.0);
    for (int i = static_cast<int>(memory.size()) - 1; i >= 0; --i) {
      alpha[i] = memory[i].rho * memory[i].s.dot(q);
      q -= alpha[i] * memory[i].y;
    }
    if (!memory.empty()) {
      const Correction& last = memory.back();
      q *= last.s.dot(last.y) / last.y.squaredNorm();
    }
    for (size_t i = 0; i < memory.size(); ++i) {
      const double beta = memory[i].rho * memory[i].y.dot(q);
      q += memory[i].s * (alpha[i] - beta);
    }
    Eigen::VectorXd p = -q;
    box.DropBlocked(x, 1.0, &p);
    if (g.dot(p) >=
        0.0) {  // Not a descent direction: restart from steepest descent.
      memory.clear();
      p = -pg;
    }
    const double slope = g.dot(p);
    if (slope >= 0.0) {
      result.termination = LbfgsTermination::kGradientTolerance;
      break;
    }
    double t = 1.0;
    if (memory.empty()) t = std::min(1.0, 1.0 / p.lpNorm<Eigen::Infinity>());

    bool accepted = false;
    Eigen::VectorXd x_new;
    double f_new = 0.0;
    for (int ls = 0; ls < options.max_line_search_steps; ++ls) {
      x_new = box.Clip(x + t * p);
      g_new.setZero();
      f_new = f(x_new, &g_new);
      ++result.evaluations;
      const double decrease = std::min(0.0, g.dot(x_new - x));
      if (std::isfinite(f_new) && g_new.allFinite() &&
          f_new <= fx + options.armijo_c1 * decrease) {
        accepted = true;
        break;
      }
      t *= 0.5;
    }
    if (!accepted) {
      result.termination = LbfgsTermination::kLineSearchFailed;
      break;
    }
    Correction c;
    c.s = x_new - x;
    c.y = g_new - g;
    const double sy = c.s.dot(c.y);
    if (sy > 1e-12 * c.y.squaredNorm() && sy > 0.0) {
      c.rho = 1.0 / sy;
      memory.push_back(std::move(c));
      if (static_cast<int>(memory.size()) > options.history) {
        memory.pop_front();
      }
    }
    const double f_old = fx;
    x = std::move(x_new);
    fx = f_new;
    g = g_new;
    result.iterations = iter + 1;
    if (std::abs(f_old - fx) <=
        options.relative_function_tolerance * std::max(1.0, std::abs(f_old))) {
      result.termination = LbfgsTermination::kFunctionTolerance;
      break;
    }
  }
  result.x = std::move(x);
  result.value = fx;
  return result;
}

}  // namespace metaopt::gp
