// Meta-training of the Dida extractor (core/surrogate/dida.h) by the patch
// identification task of "Distribution-Based Invariant Deep Networks for
// Learning Meta-Features" (Task 1, Algorithm 3): two patches are drawn from
// the training datasets, from the same one or from two different ones, and
// the Siamese classifier exp(-||F(z) - F(z')||^2) is trained to tell which
// (cross-entropy, Eq. 5.8) with Adam at learning rate 1e-3 on batches of 32
// pairs, as the chapter does.
//
// A patch of a dataset takes n_z rows and d_z features, each drawn uniformly
// with replacement, n_z and d_z uniform in their ranges (the chapter's
// generate_patches). Deviation: a pair is positive iff both patches come
// from the same dataset; the chapter also asks n_z = n_z', which makes the
// label depend on the sizes rather than on the data (`equal_rows` restores
// it: a positive pair's patches then have as many rows, and half the
// negative pairs are two patches of one dataset with different row counts).
// The training loop is pair_identification.h's.
#ifndef METAOPT_CORE_META_TRAINING_DIDA_TRAIN_H_
#define METAOPT_CORE_META_TRAINING_DIDA_TRAIN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/meta_training/pair_identification.h"
#include "core/meta_training/train_common.h"
#include "core/surrogate/dida.h"

namespace metaopt::train {

struct DidaTrainOptions {
  surrogate::DidaArchitecture architecture;
  int epochs = 15;
  int steps_per_epoch = 20;
  int batch = 32;  // pairs per Adam step, half of them positive
  double learning_rate = 1e-3;
  int min_rows = 32;  // n_z in [min_rows, max_rows]
  int max_rows = 64;
  int min_features = 2;  // d_z in [min_features, min(max_features, m)]
  int max_features = 16;
  // The chapter's label rule: positive iff the same dataset and n_z = n_z'
  // (needs max_rows > min_rows).
  bool equal_rows = false;
  int eval_pairs = 256;  // held-out pairs scored after every epoch
  int threads = 1;       // the same result for any number
  uint64_t seed = 0;
};

// A patch of `data` as the header describes.
surrogate::RawSample DrawPatch(const surrogate::RawSample& data,
                               const DidaTrainOptions& options,
                               space::Rng& rng);

// `count` pairs of patches of `datasets` (at least two), alternately positive
// and negative, each dataset uniformly chosen (with options.equal_rows, see
// the header).
std::vector<PatchPair> DrawPairs(
    const std::vector<surrogate::RawSample>& datasets, int count,
    const DidaTrainOptions& options, space::Rng& rng);

// The share of `pairs` the classifier exp(-||F(z) - F(z')||^2) > 1/2 labels
// right.
double IdentificationAccuracy(const surrogate::Dida& dida,
                              const std::vector<PatchPair>& pairs,
                              int threads = 1);

struct DidaFit {
  surrogate::Dida dida;
  double accuracy = 0;         // on the held-out pairs after the last epoch
  double initial_accuracy = 0;  // before training
};

// Trains a fresh Dida on patches of `datasets` (at least two); logs the mean
// loss and the held-out identification accuracy (pairs of fresh patches) per
// epoch to `progress` when given. Deterministic for options.seed.
// INVALID_ARGUMENT for fewer than two datasets or bad options (equal_rows
// with min_rows = max_rows among them).
absl::StatusOr<DidaFit> TrainDida(
    const std::vector<surrogate::RawSample>& datasets,
    const DidaTrainOptions& options, Progress* progress);

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_DIDA_TRAIN_H_
