// Speed of one GP or DeepPipe Suggest end to end (policy: fit schedule or
// kernel fine-tune, fantasies, acquisition search), at n = 20 ... 2,000
// observations over a 5,000-entry catalogue (names n:<N>/catalogue:5000) and
// at n = 100 over a continuous 10-dimensional space.
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/policy/gp_policy.h"
#include "core/policy/policy_factory.h"
#include "core/registry/artifact.h"
#include "core/space/search_space.h"
#include "core/surrogate/deeppipe_model.h"

namespace metaopt::policy {
namespace {

constexpr int kDim = 10;

v1::StudySpec Spec(int catalogue_size, space::Rng& rng) {
  v1::StudySpec spec;
  auto* stage = spec.mutable_search_space()->add_stages();
  stage->set_name("model");
  auto* algorithm = stage->add_algorithms();
  algorithm->set_name("f");
  for (int d = 0; d < kDim; ++d) {
    auto* p = algorithm->add_parameters();
    p->set_name("x" + std::to_string(d));
    p->mutable_float_domain()->set_low(0);
    p->mutable_float_domain()->set_high(1);
  }
  spec.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  auto space = space::SearchSpace::Create(spec.search_space());
  for (int i = 0; i < catalogue_size; ++i) {
    *spec.add_candidates() = space->Sample(rng);
  }
  return spec;
}

double Objective(const v1::Configuration& c) {
  double total = 0;
  for (const auto& [name, value] : c.assignments(0).parameters()) {
    total += std::sin(7 * value.number()) + value.number() * value.number();
  }
  return total;
}

// n COMPLETED trials valued by Objective: the first n catalogue entries, or
// n samples of the space.
std::vector<v1::Trial> CompletedTrials(const v1::StudySpec& spec,
                                       const space::SearchSpace& space, int n,
                                       bool from_catalogue, space::Rng& rng) {
  std::vector<v1::Trial> trials;
  for (int i = 0; i < n; ++i) {
    v1::Trial trial;
    trial.set_id(i + 1);
    *trial.mutable_configuration() =
        from_catalogue ? spec.candidates(i) : space.Sample(rng);
    trial.set_state(v1::TRIAL_STATE_COMPLETED);
    trial.set_value(Objective(trial.configuration()));
    trials.push_back(std::move(trial));
  }
  return trials;
}

// n completed trials (catalogue entries or samples), and a policy whose
// hyperparameters were fitted on them (so the timed Suggest reuses them, as
// most Suggests do under the refit schedule) unless `refit`.
void BM_GpSuggest(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int catalogue = static_cast<int>(state.range(1));
  const bool refit = state.range(2) != 0;
  space::Rng rng(42);
  const v1::StudySpec spec = Spec(catalogue, rng);
  auto space = space::SearchSpace::Create(spec.search_space());
  const std::vector<v1::Trial> trials =
      CompletedTrials(spec, *space, n, catalogue > 0, rng);
  StudyView view{&spec, &*space, &trials};
  auto policy = CreatePolicy(spec, std::nullopt);
  // One Suggest fits the hyperparameters; the benchmark starts from its state.
  auto first = (*policy)->Suggest(view, 1, rng);
  std::shared_ptr<const Policy> fitted = first->update->policy;
  if (refit) {
    // Pretend the last fit saw 10% fewer observations: a warm single-start
    // refit runs inside every timed Suggest.
    v1::PolicyState stored;
    stored.ParseFromString(first->update->state);
    stored.mutable_gp()->set_fitted_observations(n - n / 10 - 1);
    fitted = *CreatePolicy(spec, stored.SerializeAsString());
  }
  for (auto _ : state) {
    auto result = fitted->Suggest(view, 1, rng);
    benchmark::DoNotOptimize(result);
  }
  state.SetLabel(catalogue > 0 ? "catalogue" : "continuous");
}

BENCHMARK(BM_GpSuggest)
    ->ArgNames({"n", "catalogue", "refit"})
    ->Args({20, 5000, 0})
    ->Args({100, 5000, 0})
    ->Args({100, 5000, 1})
    ->Args({500, 5000, 0})
    ->Args({1000, 5000, 0})
    ->Args({1000, 5000, 1})
    ->Args({2000, 5000, 0})
    ->Args({100, 0, 0})
    ->Args({100, 0, 1})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

// DeepPipe with a "meta-learned" model (a seeded network of the authors'
// default architecture stored as a registry artifact: its speed is that of a
// trained one): the 100-step kernel fine-tune, cached catalogue embeddings,
// fantasies and the EI search.
void BM_DeepPipeSuggest(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int catalogue = static_cast<int>(state.range(1));
  space::Rng rng(7);
  v1::StudySpec spec = Spec(catalogue, rng);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_DEEPPIPE);
  auto space = space::SearchSpace::Create(spec.search_space());
  auto network = surrogate::DeepPipeModel::Create(
      spec.search_space(), surrogate::DeepPipeArchitecture(), 3);
  v1::ModelArtifact artifact;
  artifact.set_format_version(1);
  *artifact.mutable_search_space() = spec.search_space();
  network->ToArtifact(&artifact);
  auto model = std::make_shared<const registry::LoadedModel>(
      "bench", 1, artifact, v1::ModelManifest(), *space, absl::UnixEpoch());
  const std::vector<v1::Trial> trials =
      CompletedTrials(spec, *space, n, catalogue > 0, rng);
  StudyView view{&spec, &*space, &trials};
  auto policy = CreatePolicy(spec, std::nullopt, model);
  for (auto _ : state) {
    auto result = (*policy)->Suggest(view, 1, rng);
    benchmark::DoNotOptimize(result);
  }
  state.SetLabel(catalogue > 0 ? "catalogue" : "continuous");
}

BENCHMARK(BM_DeepPipeSuggest)
    ->ArgNames({"n", "catalogue"})
    ->Args({20, 5000})
    ->Args({100, 5000})
    ->Args({500, 5000})
    ->Args({1000, 5000})
    ->Args({2000, 5000})
    ->Args({100, 0})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace
}  // namespace metaopt::policy

BENCHMARK_MAIN();
