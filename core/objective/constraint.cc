#include "core/objective/constraint.h"

#include <cmath>
#include <limits>

namespace metaopt::objective {

double Violation(const Constraint& constraint, double value) {
  if (std::isnan(value)) return std::numeric_limits<double>::infinity();
  const double excess = constraint.sense == Constraint::Sense::kAtMost
                            ? value - constraint.bound
                            : constraint.bound - value;
  return excess > 0 ? excess : 0;
}

double TotalViolation(absl::Span<const Constraint> constraints,
                      const absl::flat_hash_map<std::string, double>& metrics) {
  double total = 0;
  for (const Constraint& constraint : constraints) {
    const auto it = metrics.find(constraint.metric);
    total += it == metrics.end() ? std::numeric_limits<double>::infinity()
                                 : Violation(constraint, it->second);
  }
  return total;
}

bool Feasible(absl::Span<const Constraint> constraints,
              const absl::flat_hash_map<std::string, double>& metrics) {
  return TotalViolation(constraints, metrics) == 0;
}

}  // namespace metaopt::objective
