// Speed of DeepPipe meta-training: one epoch of
// train::TrainDeepPipe (one Adam step per training task on a batch of its
// evaluations: embedding, GP NLL with input gradient, backpropagation) on the
// oboe meta-dataset's train split with the authors' architecture, on one
// thread, without validation (the authors' per-epoch time excludes it too).
//
// The data folder is $METAOPT_SHARED_DATA/oboe (by default the oboe folder of
// the meta-datasets beside the checkout, relative to the working directory); without it the benchmark reports an
// error and is skipped. Names:
// BM_DeepPipeTrainEpoch/batch:<B>/epochs:<E>/precision:<32|64>, precision
// being the network's arithmetic (DeepPipeTrainOptions::precision); epochs:0
// times the set-up alone (model creation, encoding the tasks), so the
// per-epoch CPU time is (t(E) - t(0)) / E.
#include <cstdlib>
#include <string>

#include "benchmark/benchmark.h"
#include "core/meta_training/deeppipe_train.h"
#include "core/meta_training/train_common.h"

namespace metaopt::train {
namespace {

const TrainingSplits* OboeSplits() {
  static const TrainingSplits* splits = []() -> const TrainingSplits* {
    const char* root = std::getenv("METAOPT_SHARED_DATA");
    CommonTrainOptions options;
    options.data_dir =
        std::string(root != nullptr ? root : "../shared/data") + "/oboe";
    options.split_valid = "none";
    absl::StatusOr<TrainingSplits> read = ReadTrainingSplits(options);
    if (!read.ok()) return nullptr;
    return new TrainingSplits(*std::move(read));
  }();
  return splits;
}

void BM_DeepPipeTrainEpoch(benchmark::State& state) {
  const TrainingSplits* data = OboeSplits();
  if (data == nullptr) {
    state.SkipWithError(
        "oboe meta-dataset not found (set METAOPT_SHARED_DATA to the folder "
        "that holds oboe/)");
    return;
  }
  DeepPipeTrainOptions options;  // The authors' architecture and lr.
  options.batch_size = static_cast<int>(state.range(0));
  options.epochs = static_cast<int>(state.range(1));
  options.threads = 1;
  options.precision = state.range(2) == 32
                          ? surrogate::NetworkPrecision::kFloat32
                          : surrogate::NetworkPrecision::kFloat64;
  for (auto _ : state) {
    absl::StatusOr<DeepPipeTrainResult> result =
        TrainDeepPipe(data->dataset, data->train, {}, options);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(result->best_epoch);
  }
  state.counters["train_tasks"] = static_cast<double>(data->train.size());
}
BENCHMARK(BM_DeepPipeTrainEpoch)
    ->ArgNames({"batch", "epochs", "precision"})
    ->ArgsProduct({{219}, {0, 1, 3}, {64, 32}})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

}  // namespace
}  // namespace metaopt::train

BENCHMARK_MAIN();
