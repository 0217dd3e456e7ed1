#include "core/policy/mcts.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace metaopt::policy {

double Median(std::vector<double> values) {
  const size_t n = values.size();
  const size_t mid = n / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (n % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + mid);
  return 0.5 * (lower + upper);
}

std::vector<double> SoftmaxPriors(const std::vector<double>& values,
                                  double temperature) {
  std::vector<double> priors(values.size());
  if (values.empty()) return priors;
  const double top = *std::max_element(values.begin(), values.end());
  double total = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    priors[i] = std::exp((values[i] - top) / temperature);
    total += priors[i];
  }
  for (double& p : priors) p /= total;
  return priors;
}

int AllowedChildren(int64_t visits, double widening_exponent) {
  if (visits <= 1) return 1;
  // The small epsilon keeps exact powers (e.g. 32^0.6 = 8) from rounding down.
  const double allowed = std::floor(
      std::pow(static_cast<double>(visits), widening_exponent) + 1e-9);
  return std::max(1, static_cast<int>(std::min(allowed, 1e9)));
}

double PuctScore(double value, double prior, int64_t parent_visits,
                 int64_t child_visits, double exploration) {
  return value + exploration * prior *
                     std::sqrt(static_cast<double>(parent_visits) /
                               (1.0 + static_cast<double>(child_visits)));
}

int SelectPuct(const std::vector<MctsChild>& children, int64_t parent_visits,
               double exploration) {
  int best = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < children.size(); ++i) {
    const MctsChild& c = children[i];
    const double score =
        PuctScore(c.value, c.prior, parent_visits, c.visits, exploration);
    if (score > best_score) {
      best_score = score;
      best = static_cast<int>(i);
    }
  }
  return best;
}

bool MctsTree::Contains(const MctsPath& path) const {
  if (path.size() <= 1) return path.empty() || path[0] >= 0;
  const MctsPath parent(path.begin(), path.end() - 1);
  auto it = children_.find(parent);
  if (it == children_.end()) return false;
  return std::find(it->second.begin(), it->second.end(), path.back()) !=
         it->second.end();
}

absl::Status MctsTree::Add(const MctsPath& path) {
  if (path.empty() || static_cast<int>(path.size()) > levels_ ||
      *std::min_element(path.begin(), path.end()) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tree node [", absl::StrJoin(path, ","),
                     "] is not a path of a tree with ", levels_, " levels"));
  }
  if (path.size() == 1 || Contains(path)) return absl::OkStatus();
  const MctsPath parent(path.begin(), path.end() - 1);
  if (!Contains(parent)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tree node [", absl::StrJoin(path, ","), "] has no parent"));
  }
  children_[parent].push_back(path.back());
  added_.push_back(path);
  return absl::OkStatus();
}

absl::StatusOr<MctsWalk> MctsTree::Walk(MctsEnvironment& env,
                                        const MctsOptions& options) {
  MctsPath path;
  while (static_cast<int>(path.size()) < levels_) {
    const std::vector<int> valid = env.ValidActions(path);
    if (valid.empty()) {
      // Only the root can get here: deeper nodes are entered through their
      // parent's valid actions.
      return absl::NotFoundError(
          absl::StrCat("no structure is left to try below [",
                       absl::StrJoin(path, ","), "]"));
    }
    std::vector<int> existing;
    if (path.empty()) {
      existing = valid;
    } else {
      auto it = children_.find(path);
      if (it != children_.end()) {
        for (int a : it->second) {
          if (std::binary_search(valid.begin(), valid.end(), a)) {
            existing.push_back(a);
          }
        }
      }
    }
    const int64_t visits = env.Visits(path);
    const int allowed =
        std::min<int>(static_cast<int>(valid.size()),
                      AllowedChildren(visits, options.widening_exponent));
    MctsPath child = path;
    child.push_back(-1);
    if (static_cast<int>(existing.size()) < allowed) {
      // Expansion: the untried action with the best surrogate estimate.
      double best = -std::numeric_limits<double>::infinity();
      int chosen = -1;
      for (int a : valid) {
        if (std::find(existing.begin(), existing.end(), a) != existing.end()) {
          continue;
        }
        child.back() = a;
        const double estimate = env.Estimate(child);
        if (chosen < 0 || estimate > best) {
          best = estimate;
          chosen = a;
        }
      }
      child.back() = chosen;
      if (absl::Status s = Add(child); !s.ok()) return s;
      return MctsWalk{std::move(child), true};
    }
    // Selection among the existing children.
    std::vector<MctsChild> children;
    std::vector<double> estimates;
    for (int a : existing) {
      child.back() = a;
      MctsChild c;
      c.action = a;
      c.visits = env.Visits(child);
      const double estimate = env.Estimate(child);
      c.value = env.Value(child).value_or(estimate);
      estimates.push_back(estimate);
      children.push_back(c);
    }
    const std::vector<double> priors =
        SoftmaxPriors(estimates, options.prior_temperature);
    for (size_t i = 0; i < children.size(); ++i) children[i].prior = priors[i];
    path.push_back(
        children[SelectPuct(children, visits, options.exploration)].action);
  }
  return MctsWalk{std::move(path), false};
}

}  // namespace metaopt::policy
