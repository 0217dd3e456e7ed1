// Standalone meta-training of the Dataset2Vec extractor
// (core/surrogate/dataset2vec.h) by its own meta-task, dataset identification
// ("Dataset2Vec: Learning Dataset Meta-Features", Jomaa, Schmidt-Thieme and
// Grabocka; Algorithm 5 and Eqs. 5-6 of "Zero-shot Transfer Learning for
// Gray-box Hyper-parameter Optimization"): two batches (random subsets of
// rows and features, all targets) of the training datasets are labelled
// similar iff they come from the same dataset, and the classifier
// exp(-||D2V(b) - D2V(b')||) (gamma = 1) is fitted by the negative
// log-likelihood with Adam, one positive and one negative pair sharing their
// first dataset (Algorithm 5's D^(t)). No regression head is involved (GROSI
// trains the same network jointly with its surrogate instead,
// grosi_train.h). A batch has n_b rows and m_b features uniform in their
// ranges, each drawn without replacement and capped at the dataset's n and m.
// The loop is pair_identification.h's.
#ifndef METAOPT_CORE_META_TRAINING_DATASET2VEC_TRAIN_H_
#define METAOPT_CORE_META_TRAINING_DATASET2VEC_TRAIN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/meta_training/pair_identification.h"
#include "core/meta_training/train_common.h"
#include "core/surrogate/dataset2vec.h"

namespace metaopt::train {

struct Dataset2VecTrainOptions {
  surrogate::Dataset2VecArchitecture architecture;
  int epochs = 10;
  int steps_per_epoch = 20;
  int batch = 32;  // pairs per Adam step, half of them positive
  double learning_rate = 1e-3;
  int min_rows = 32;  // n_b in [min_rows, max_rows]
  int max_rows = 64;
  int min_features = 2;  // m_b in [min_features, max_features]
  int max_features = 16;
  int eval_pairs = 256;  // held-out pairs scored after every epoch
  int threads = 1;       // the same result for any number
  uint64_t seed = 0;
};

// A batch of `data` as the header describes.
surrogate::RawSample DrawBatch(const surrogate::RawSample& data,
                               const Dataset2VecTrainOptions& options,
                               space::Rng& rng);

// `count` pairs of batches of `datasets` (at least two): pair 2i is positive
// (two batches of dataset t), pair 2i + 1 negative (a batch of the same t and
// one of another dataset), t uniform.
std::vector<PatchPair> DrawBatchPairs(
    const std::vector<surrogate::RawSample>& datasets, int count,
    const Dataset2VecTrainOptions& options, space::Rng& rng);

struct Dataset2VecFit {
  surrogate::Dataset2Vec d2v;
  double accuracy = 0;          // on the held-out pairs after the last epoch
  double initial_accuracy = 0;  // before training
};

// Trains a fresh Dataset2Vec on batches of `datasets` (at least two); logs
// the mean loss and the held-out identification accuracy (pairs of fresh
// batches) per epoch to `progress` when given. Deterministic for
// options.seed. INVALID_ARGUMENT for fewer than two datasets or bad options.
absl::StatusOr<Dataset2VecFit> TrainDataset2Vec(
    const std::vector<surrogate::RawSample>& datasets,
    const Dataset2VecTrainOptions& options, Progress* progress);

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_DATASET2VEC_TRAIN_H_
