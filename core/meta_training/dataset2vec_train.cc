#include "core/meta_training/dataset2vec_train.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"

namespace metaopt::train {
surrogate::RawSample DrawBatch(const surrogate::RawSample& data,
                               const Dataset2VecTrainOptions& options,
                               space::Rng& rng) {
  const int rows = UniformIn(options.min_rows, options.max_rows, rng);
  const int features =
      UniformIn(options.min_features, options.max_features, rng);
  return surrogate::SubSample(data, rows, features, rng);
}

std::vector<PatchPair> DrawBatchPairs(
    const std::vector<surrogate::RawSample>& datasets, int count,
    const Dataset2VecTrainOptions& options, space::Rng& rng) {
  const uint64_t d = datasets.size();
  std::vector<PatchPair> pairs;
  pairs.reserve(static_cast<size_t>(count));
  uint64_t t = 0;
  for (int p = 0; p < count; ++p) {
    PatchPair pair;
    pair.same = p % 2 == 0;
    if (pair.same) t = space::UniformIndex(rng, d);
    const uint64_t q =
        pair.same ? t : (t + 1 + space::UniformIndex(rng, d - 1)) % d;
    pair.first = DrawBatch(datasets[t], options, rng);
    pair.second = DrawBatch(datasets[q], options, rng);
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

absl::StatusOr<Dataset2VecFit> TrainDataset2Vec(
    const std::vector<surrogate::RawSample>& datasets,
    const Dataset2VecTrainOptions& options, Progress* progress) {
  if (datasets.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Dataset2Vec: dataset identification needs at least two training "
        "datasets with a sample; got ",
        datasets.size()));
  }
  if (options.epochs < 0 || options.steps_per_epoch < 1 || options.batch < 2 ||
      !(options.learning_rate > 0) || options.min_rows < 1 ||
      options.max_rows < options.min_rows || options.min_features < 1 ||
      options.max_features < options.min_features) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Dataset2Vec training: epochs (", options.epochs,
        ") >= 0, steps per epoch (", options.steps_per_epoch, ") >= 1, batch (",
        options.batch, ") >= 2, learning rate (", options.learning_rate,
        ") > 0 and batch rows [", options.min_rows, ", ", options.max_rows,
        "] and features [", options.min_features, ", ", options.max_features,
        "] non-empty ranges from 1"));
  }
  space::Rng rng(options.seed);
  METAOPT_ASSIGN_OR_RETURN(
      surrogate::Dataset2Vec d2v,
      surrogate::Dataset2Vec::Create(options.architecture, rng));
  space::Rng eval_rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
  const std::vector<PatchPair> held_out =
      DrawBatchPairs(datasets, options.eval_pairs, options, eval_rng);
  IdentificationOptions loop;
  loop.name = surrogate::kD2vSource;
  loop.distance = PairDistance::kEuclidean;
  loop.epochs = options.epochs;
  loop.steps_per_epoch = options.steps_per_epoch;
  loop.batch = options.batch;
  loop.learning_rate = options.learning_rate;
  loop.threads = options.threads;
  Dataset2VecFit fit{d2v, 0, 0};
  fit.initial_accuracy =
      PairAccuracy(d2v, held_out, loop.distance, options.threads);
  const PairSampler sample = [&](int count, space::Rng& r) {
    return DrawBatchPairs(datasets, count, options, r);
  };
  METAOPT_ASSIGN_OR_RETURN(
      fit.accuracy,
      TrainByIdentification(loop, sample, held_out, fit.initial_accuracy, rng,
                            progress, d2v));
  fit.d2v = std::move(d2v);
  return fit;
}

}  // namespace metaopt::train
