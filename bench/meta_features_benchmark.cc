// Speed of a learned task design's meta-features at CreateStudy
// (registry::DesignFeatures): one forward pass of the Dida or Dataset2Vec
// extractor, at the architectures metaopt-train --kind metabu trains, over a
// dataset sample of the largest size the API takes (256 rows x 16 features x
// 3 one-hot targets) or a smaller one. Names:
// BM_DidaFeatures/rows:<n>/layers:<1|2>, BM_Dataset2VecFeatures/rows:<n>.
#include "benchmark/benchmark.h"
#include "core/space/random.h"
#include "core/surrogate/dataset2vec.h"
#include "core/surrogate/dida.h"

namespace metaopt::surrogate {
namespace {

RawSample Sample(int n) {
  space::Rng rng(1);
  RawSample s;
  s.x.resize(n, 16);
  s.y = Eigen::MatrixXd::Zero(n, 3);
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < 16; ++k) s.x(i, k) = space::StandardNormal(rng);
    s.y(i, static_cast<int>(space::UniformIndex(rng, 3))) = 1.0;
  }
  return s;
}

void BM_DidaFeatures(benchmark::State& state) {
  DidaArchitecture a;  // metaopt-train's defaults
  if (state.range(1) == 1) a.second_layer = 0;
  space::Rng rng(0);
  const Dida dida = *Dida::Create(a, rng);
  const RawSample s = Sample(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(dida.Forward(s));
}
BENCHMARK(BM_DidaFeatures)
    ->ArgNames({"rows", "layers"})
    ->ArgsProduct({{64, 256}, {1, 2}})
    ->Unit(benchmark::kMillisecond);

void BM_Dataset2VecFeatures(benchmark::State& state) {
  space::Rng rng(0);
  const Dataset2Vec d2v = *Dataset2Vec::Create(Dataset2VecArchitecture(), rng);
  const RawSample s = Sample(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(d2v.Forward(s));
}
BENCHMARK(BM_Dataset2VecFeatures)
    ->ArgNames({"rows"})
    ->Arg(64)
    ->Arg(256)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace metaopt::surrogate

BENCHMARK_MAIN();
