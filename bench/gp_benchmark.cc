// Speed of the GP core: hyperparameter fitting, one NLL+gradient evaluation,
// and batch prediction, at d = 10 inputs in [0, 1]; and the deep-kernel GP
// fit of a DeepPipe study bound partially to its model (new encoders).
//
//   cmake --build build --target gp_benchmark && build/bench/gp_benchmark
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "benchmark/benchmark.h"
#include "core/gp/gaussian_process.h"
#include "core/space/search_space.h"
#include "core/surrogate/deeppipe_model.h"

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

// A space shaped like sklearn-pipelines' (stages of 3, 4, 3 and 8 algorithms
// with these numbers of float parameters), without its last estimator unless
// `with_last`.
v1::SearchSpace PipelineSpace(bool with_last) {
  const std::vector<std::vector<int>> stages = {
      {0, 0, 0}, {0, 0, 0, 0}, {0, 1, 1}, {1, 2, 2, 3, 3, 3, 0, 3}};
  v1::SearchSpace space;
  for (size_t s = 0; s < stages.size(); ++s) {
    v1::Stage* stage = space.add_stages();
    stage->set_name("stage" + std::to_string(s));
    const bool last_stage = s + 1 == stages.size();
    for (size_t a = 0; a < stages[s].size(); ++a) {
      if (last_stage && a + 1 == stages[s].size() && !with_last) break;
      v1::Algorithm* algorithm = stage->add_algorithms();
      algorithm->set_name("algorithm" + std::to_string(a));
      for (int p = 0; p < stages[s][a]; ++p) {
        v1::Parameter* parameter = algorithm->add_parameters();
        parameter->set_name("p" + std::to_string(p));
        parameter->mutable_float_domain()->set_low(0.0);
        parameter->mutable_float_domain()->set_high(1.0);
      }
    }
  }
  return space;
}

// DeepPipe's fine-tune at a Suggest of a study with a new algorithm
// (FineTuneScope::kNewEncoders, the policy's 100 Adam steps at 1e-2): the
// model shaped as sklearn-pipelines-deeppipe-newalg (one encoder layer,
// hidden 128, embedding 20), n observations.
void BM_DeepPipeNewEncoderFineTune(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  surrogate::DeepPipeArchitecture architecture;
  architecture.encoder_layers = 1;
  architecture.hidden = 128;
  auto meta = surrogate::DeepPipeModel::Create(PipelineSpace(false),
                                               architecture, /*seed=*/1);
  if (!meta.ok()) return state.SkipWithError("Create failed");
  auto model = meta->ForStudySpace(PipelineSpace(true), /*seed=*/2);
  auto space = space::SearchSpace::Create(PipelineSpace(true));
  if (!model.ok() || !space.ok()) return state.SkipWithError("bind failed");
  space::Rng rng(3);
  std::vector<v1::Configuration> configs;
  for (int i = 0; i < n; ++i) configs.push_back(space->Sample(rng));
  const Eigen::MatrixXd X = model->encoder().EncodeBatch(configs);
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) y[i] = std::sin(3.0 * X.row(i).sum());
  surrogate::DeepPipeFineTuneOptions options;
  options.scope = surrogate::FineTuneScope::kNewEncoders;
  options.max_steps = 100;
  options.learning_rate = 1e-2;
  int steps = 0;
  for (auto _ : state) {
    auto tuned = model->FineTune(X, y, options);
    if (!tuned.ok()) return state.SkipWithError("FineTune failed");
    steps = tuned->steps_run;
    benchmark::DoNotOptimize(tuned);
  }
  state.counters["steps"] = steps;
}
BENCHMARK(BM_DeepPipeNewEncoderFineTune)
    ->Arg(25)
    ->Arg(100)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace metaopt::gp

BENCHMARK_MAIN();
