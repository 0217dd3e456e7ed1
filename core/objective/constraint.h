// Constraints on metrics a trial reports, and whether a trial meets them.
// Pure functions over plain values: safe from any thread.
#ifndef METAOPT_CORE_OBJECTIVE_CONSTRAINT_H_
#define METAOPT_CORE_OBJECTIVE_CONSTRAINT_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"

namespace metaopt::objective {

// A metric held at most or at least a bound (the bound itself is allowed).
struct Constraint {
  enum class Sense { kAtMost, kAtLeast };
  std::string metric;
  Sense sense = Sense::kAtMost;
  double bound = 0;
};

// How far `value` is past the constraint's bound: 0 when it holds, infinity
// when `value` is NaN.
double Violation(const Constraint& constraint, double value);

// The summed violations of `constraints` by `metrics` (metric name -> value);
// a missing metric violates its constraint infinitely.
double TotalViolation(absl::Span<const Constraint> constraints,
                      const absl::flat_hash_map<std::string, double>& metrics);

// Whether every constraint holds (no constraints: feasible).
bool Feasible(absl::Span<const Constraint> constraints,
              const absl::flat_hash_map<std::string, double>& metrics);

}  // namespace metaopt::objective

#endif  // METAOPT_CORE_OBJECTIVE_CONSTRAINT_H_
