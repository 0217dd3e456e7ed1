// Speed of building a study's policy from a bundled registry model, alone
// and with its first Suggest: what CreateStudy, and the first Suggest of a
// study the engine loads after a restart, pay per study. The model is read
// from models/ once, as the registry does; each iteration builds the policy
// for a study over the model's space (and asks it for one configuration).
// Names: BM_PolicyBuild/<model directory>/<version> (the build alone) and
// BM_FirstSuggest/<model directory>/<version> (the build and one Suggest).
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/policy/policy_factory.h"
#include "core/registry/artifact.h"
#include "core/space/search_space.h"

namespace metaopt::policy {
namespace {

std::string ModelsDir() {
  const char* root = std::getenv("METAOPT_SOURCE_DIR");
  return std::string(root != nullptr ? root : METAOPT_SOURCE_DIR_DEFAULT) +
         "/models";
}

v1::AlgorithmKind AlgorithmFor(v1::ModelKind kind) {
  switch (kind) {
    case v1::MODEL_KIND_DEEPPIPE:
      return v1::ALGORITHM_KIND_DEEPPIPE;
    case v1::MODEL_KIND_PMF:
      return v1::ALGORITHM_KIND_PMF;
    case v1::MODEL_KIND_GROSI:
      return v1::ALGORITHM_KIND_GROSI;
    case v1::MODEL_KIND_FSBO:
      return v1::ALGORITHM_KIND_FSBO;
    default:
      return v1::ALGORITHM_KIND_GP;
  }
}

void BM_PolicyBuild(benchmark::State& state, const std::string& name,
                    int64_t version, bool suggest) {
  auto model = registry::ReadModelVersion(ModelsDir(), name, version);
  if (!model.ok()) {
    state.SkipWithError(std::string(model.status().message()).c_str());
    return;
  }
  v1::StudySpec spec;
  *spec.mutable_search_space() = (*model)->artifact.search_space();
  *spec.mutable_objective() = (*model)->artifact.objective();
  spec.mutable_algorithm()->set_kind(AlgorithmFor((*model)->artifact.kind()));
  spec.set_seed(1);
  const std::vector<v1::Trial> trials;
  const StudyView view{&spec, &(*model)->space, &trials};
  for (auto _ : state) {
    absl::StatusOr<std::shared_ptr<const Policy>> policy =
        CreatePolicy(spec, std::nullopt, *model);
    if (!policy.ok()) {
      state.SkipWithError(std::string(policy.status().message()).c_str());
      return;
    }
    if (!suggest) continue;
    space::Rng rng(1);
    absl::StatusOr<SuggestResult> first = (*policy)->Suggest(view, 1, rng);
    if (!first.ok()) {
      state.SkipWithError(std::string(first.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(first->configurations);
  }
}

const bool kRegistered = [] {
  const struct {
    const char* name;
    int64_t version;
  } models[] = {{"oboe-deeppipe", 3},
                {"sklearn-pipelines-deeppipe", 4},
                {"oboe-pmf", 2},
                {"sklearn-pipelines-grosi-d2v", 1}};
  for (const bool suggest : {false, true}) {
    for (const auto& m : models) {
      benchmark::RegisterBenchmark(
          (std::string(suggest ? "BM_FirstSuggest/" : "BM_PolicyBuild/") +
           m.name + "/" + std::to_string(m.version))
              .c_str(),
          [name = std::string(m.name), version = m.version,
           suggest](benchmark::State& state) {
            BM_PolicyBuild(state, name, version, suggest);
          })
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return true;
}();

}  // namespace
}  // namespace metaopt::policy

BENCHMARK_MAIN();
