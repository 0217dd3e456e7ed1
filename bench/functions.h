// Synthetic test functions for metaopt-bench --functions: studies over a
// continuous or mixed search space without a catalogue, each Suggest's
// configuration evaluated by a deterministic function of known global minimum
// (docs/benchmarks.md, "Synthetic functions").
//
//   METAOPT_ASSIGN_OR_RETURN(std::vector<const TestFunction*> functions,
//                            ParseFunctions("branin,hartmann6"));
//   double y = functions[0]->evaluate(configuration);  // a canonical point
//
// Definitions and domains follow the optimisation literature: Dixon and
// Szego, "The global optimisation problem: an introduction" (Branin,
// Hartmann); Jamil and Yang, "A literature survey of benchmark functions for
// global optimisation problems"; Surjanovic and Bingham, "Virtual Library of
// Simulation Experiments: Test Functions and Datasets".
#ifndef METAOPT_BENCH_FUNCTIONS_H_
#define METAOPT_BENCH_FUNCTIONS_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::bench {

// One test function. Immutable after construction; thread-safe.
struct TestFunction {
  std::string name;
  std::string description;  // formula, domain and source, one line
  // One stage "f" with one algorithm "f"; floats x0, x1, ... (mixed
  // functions add their own parameters). Valid (space::SearchSpace::Create).
  v1::SearchSpace space;
  // f of a canonical configuration of `space` (every parameter present).
  std::function<double(const v1::Configuration&)> evaluate;
  // The global minimum over the space and every point that attains it (for
  // a mixed space: the discrete part enumerated, each with its known
  // continuous optimum). f_star is evaluate() at minimisers[0].
  double f_star = 0;
  std::vector<v1::Configuration> minimisers;
  int dimensions = 0;  // parameters of the space
  bool mixed = false;  // has integer, categorical or log-scale parameters
};

// The known functions in table order: branin, hartmann3, hartmann6, ackley4,
// levy4, styblinski_tang4, rosenbrock4, sin4, hartmann6_mixed,
// branin_logmixed.
const std::vector<TestFunction>& KnownFunctions();

// Looks up each comma-separated name (spaces around names ignored).
// INVALID_ARGUMENT naming --functions for an empty list, an unknown name
// (listing the known ones) or a name given twice.
absl::StatusOr<std::vector<const TestFunction*>> ParseFunctions(
    std::string_view comma_list);

// The draws ReferenceValue takes and its seed.
inline constexpr int kReferenceSamples = 10000;
inline constexpr uint64_t kReferenceSeed = 20261130;

// f_ref of a function: the median of f over kReferenceSamples points drawn by
// space::SearchSpace::Sample (uniform; log-uniform on log-scale parameters)
// from an Rng seeded with kReferenceSeed: the value a typical random point
// reaches, the "1" of the normalised regret. Deterministic.
double ReferenceValue(const TestFunction& function);

}  // namespace metaopt::bench

#endif  // METAOPT_BENCH_FUNCTIONS_H_
