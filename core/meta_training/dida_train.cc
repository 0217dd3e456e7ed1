#include "core/meta_training/dida_train.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/status_macros.h"

namespace metaopt::train {
namespace {

// A patch of `data` with `rows` rows (DrawPatch's otherwise).
surrogate::RawSample PatchWithRows(const surrogate::RawSample& data, int rows,
                                   const DidaTrainOptions& options,
                                   space::Rng& rng) {
  const int n = static_cast<int>(data.x.rows());
  const int m = static_cast<int>(data.x.cols());
  const int high = std::min(options.max_features, m);
  const int features = UniformIn(std::min(options.min_features, high), high,
                                 rng);
  std::vector<Eigen::Index> r(static_cast<size_t>(rows));
  std::vector<Eigen::Index> c(static_cast<size_t>(features));
  for (Eigen::Index& i : r) i = static_cast<Eigen::Index>(space::UniformIndex(rng, n));
  for (Eigen::Index& k : c) k = static_cast<Eigen::Index>(space::UniformIndex(rng, m));
  return surrogate::RawSample{data.x(r, c), data.y(r, Eigen::all)};
}

IdentificationOptions LoopOptions(const DidaTrainOptions& options) {
  IdentificationOptions loop;
  loop.name = surrogate::kDidaPrefix;
  loop.distance = PairDistance::kSquaredEuclidean;
  loop.epochs = options.epochs;
  loop.steps_per_epoch = options.steps_per_epoch;
  loop.batch = options.batch;
  loop.learning_rate = options.learning_rate;
  loop.threads = options.threads;
  return loop;
}

}  // namespace

surrogate::RawSample DrawPatch(const surrogate::RawSample& data,
                               const DidaTrainOptions& options,
                               space::Rng& rng) {
  const int rows = UniformIn(options.min_rows, options.max_rows, rng);
  return PatchWithRows(data, rows, options, rng);
}

std::vector<PatchPair> DrawPairs(
    const std::vector<surrogate::RawSample>& datasets, int count,
    const DidaTrainOptions& options, space::Rng& rng) {
  const uint64_t d = datasets.size();
  std::vector<PatchPair> pairs;
  pairs.reserve(static_cast<size_t>(count));
  for (int p = 0; p < count; ++p) {
    PatchPair pair;
    pair.same = p % 2 == 0;
    const uint64_t a = space::UniformIndex(rng, d);
    if (!options.equal_rows) {
      uint64_t b = a;
      if (!pair.same) b = (a + 1 + space::UniformIndex(rng, d - 1)) % d;
      pair.first = DrawPatch(datasets[a], options, rng);
      pair.second = DrawPatch(datasets[b], options, rng);
    } else {
      // Every other negative pair: one dataset at two different sizes.
      const bool resized = p % 4 == 1;
      uint64_t b = a;
      if (!pair.same && !resized) {
        b = (a + 1 + space::UniformIndex(rng, d - 1)) % d;
      }
      const int rows = UniformIn(options.min_rows, options.max_rows, rng);
      int other = rows;
      if (resized) {
        other = UniformIn(options.min_rows, options.max_rows - 1, rng);
        if (other >= rows) ++other;
      } else if (!pair.same) {
        other = UniformIn(options.min_rows, options.max_rows, rng);
      }
      pair.first = PatchWithRows(datasets[a], rows, options, rng);
      pair.second = PatchWithRows(datasets[b], other, options, rng);
    }
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

double IdentificationAccuracy(const surrogate::Dida& dida,
                              const std::vector<PatchPair>& pairs,
                              int threads) {
  return PairAccuracy(dida, pairs, PairDistance::kSquaredEuclidean, threads);
}

absl::StatusOr<DidaFit> TrainDida(
    const std::vector<surrogate::RawSample>& datasets,
    const DidaTrainOptions& options, Progress* progress) {
  if (datasets.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Dida: patch identification needs at least two training datasets "
        "with a sample; got ",
        datasets.size()));
  }
  if (options.epochs < 0 || options.steps_per_epoch < 1 ||
      options.batch < 2 || !(options.learning_rate > 0) ||
      options.min_rows < 2 || options.max_rows < options.min_rows ||
      options.min_features < 1 || options.max_features < options.min_features) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Dida training: epochs (", options.epochs, ") >= 0, steps per epoch (",
        options.steps_per_epoch, ") >= 1, batch (", options.batch,
        ") >= 2, learning rate (", options.learning_rate,
        ") > 0 and patch rows [", options.min_rows, ", ", options.max_rows,
        "] and features [", options.min_features, ", ", options.max_features,
        "] non-empty ranges from 2 and 1"));
  }
  if (options.equal_rows && options.max_rows == options.min_rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Dida training: equal_rows needs patch rows [", options.min_rows, ", ",
        options.max_rows, "] to hold two sizes"));
  }
  space::Rng rng(options.seed);
  METAOPT_ASSIGN_OR_RETURN(surrogate::Dida dida,
                           surrogate::Dida::Create(options.architecture, rng));
  space::Rng eval_rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
  const std::vector<PatchPair> held_out =
      DrawPairs(datasets, options.eval_pairs, options, eval_rng);
  DidaFit fit{dida, 0, 0};
  fit.initial_accuracy =
      IdentificationAccuracy(dida, held_out, options.threads);
  const PairSampler sample = [&](int count, space::Rng& r) {
    return DrawPairs(datasets, count, options, r);
  };
  METAOPT_ASSIGN_OR_RETURN(
      fit.accuracy, TrainByIdentification(LoopOptions(options), sample,
                                          held_out, fit.initial_accuracy, rng,
                                          progress, dida));
  fit.dida = std::move(dida);
  return fit;
}

}  // namespace metaopt::train
