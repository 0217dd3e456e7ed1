// Speed of the GP core: hyperparameter fitting, one NLL+gradient evaluation,
// and batch prediction, at d = 10 inputs in [0, 1].
//
//   cmake --build build --target gp_benchmark && build/bench/gp_benchmark
#include <cmath>
#include <random>

#include "Eigen/Core"
#include "benchmark/benchmark.h"
#include "core/gp/gaussian_process.h"

namespace metaopt::gp {
namespace {

constexpr int kDim = 10;
constexpr int kCandidates = 5000;

Eigen::MatrixXd Uniform(int rows, int cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Eigen::MatrixXd m(rows, cols);
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) m(i, j) = u(rng);
  }
  return m;
}

// A smooth test function of all ten inputs with a little noise.
Eigen::VectorXd Targets(const Eigen::MatrixXd& X, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.01);
  Eigen::VectorXd y(X.rows());
  for (int i = 0; i < X.rows(); ++i) {
    double v = 0.0;
    for (int d = 0; d < X.cols(); ++d) {
      v += std::sin(3.0 * X(i, d) + d) / (1.0 + d);
    }
    y[i] = v + noise(rng);
  }
  return y;
}

GaussianProcess MakeGp() {
  return std::move(GaussianProcess::Create("matern52", kDim)).value();
}

// Full Fit (standardise, MAP fit with FitOptions defaults: 3 L-BFGS starts of
// at most 100 iterations, 10 s wall-time budget, then condition).
void BM_GpFit(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Eigen::MatrixXd X = Uniform(n, kDim, 1);
  const Eigen::VectorXd y = Targets(X, 2);
  const GaussianProcess gp = MakeGp();
  FitOptions options;
  options.seed = 3;
  FitReport report;
  for (auto _ : state) {
    auto post = Fit(gp, X, y, options, &report);
    if (!post.ok()) state.SkipWithError("Fit failed");
    benchmark::DoNotOptimize(post);
  }
  state.counters["lbfgs_iters"] = report.iterations;
  state.counters["nll_evals"] = report.evaluations;
  state.counters["budget_hit"] = report.time_budget_exhausted ? 1 : 0;
}
BENCHMARK(BM_GpFit)
    ->Arg(50)
    ->Arg(200)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(1);

// One NLL evaluation with the hyperparameter gradient (the unit of work inside
// Fit).
void BM_GpNllAndGradient(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Eigen::MatrixXd X = Uniform(n, kDim, 1);
  const Eigen::VectorXd y = Targets(X, 2);
  const GaussianProcess gp = MakeGp();
  const bool inputs = state.range(1) != 0;
  for (auto _ : state) {
    auto nll = gp.NegativeLogMarginalLikelihood(X, y, inputs);
    if (!nll.ok()) state.SkipWithError("NLL failed");
    benchmark::DoNotOptimize(nll);
  }
}
BENCHMARK(BM_GpNllAndGradient)
    ->ArgsProduct({{50, 200, 1000}, {0, 1}})
    ->ArgNames({"n", "input_grad"})
    ->Unit(benchmark::kMillisecond);

// Posterior mean and latent variance for 5,000 candidates.
void BM_GpPredict(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Eigen::MatrixXd X = Uniform(n, kDim, 1);
  const Eigen::VectorXd y = Targets(X, 2);
  const auto post = Condition(MakeGp(), X, y);
  if (!post.ok()) {
    state.SkipWithError("Condition failed");
    return;
  }
  const Eigen::MatrixXd candidates = Uniform(kCandidates, kDim, 4);
  for (auto _ : state) {
    auto pred = post->Predict(candidates);
    if (!pred.ok()) state.SkipWithError("Predict failed");
    benchmark::DoNotOptimize(pred);
  }
  state.SetItemsProcessed(state.iterations() * kCandidates);
}
BENCHMARK(BM_GpPredict)
    ->Arg(50)
    ->Arg(200)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond);

// Fantasising 8 pending points on top of n observations (ConditionOn).
void BM_GpConditionOnPending(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Eigen::MatrixXd X = Uniform(n, kDim, 1);
  const Eigen::VectorXd y = Targets(X, 2);
  const auto post = Condition(MakeGp(), X, y);
  if (!post.ok()) {
    state.SkipWithError("Condition failed");
    return;
  }
  const Eigen::MatrixXd pending = Uniform(8, kDim, 5);
  const Eigen::VectorXd lies = Eigen::VectorXd::Constant(8, y.minCoeff());
  for (auto _ : state) {
    auto fantasised = post->ConditionOn(pending, lies);
    if (!fantasised.ok()) state.SkipWithError("ConditionOn failed");
    benchmark::DoNotOptimize(fantasised);
  }
}
BENCHMARK(BM_GpConditionOnPending)
    ->Arg(50)
    ->Arg(200)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace metaopt::gp

BENCHMARK_MAIN();
