// Siamese meta-training of a dataset meta-feature extractor F by dataset
// identification, the task of "Dataset2Vec: Learning Dataset Meta-Features"
// (Jomaa, Schmidt-Thieme and Grabocka; the standalone meta-feature learning
// of "Zero-shot Transfer Learning for Gray-box Hyper-parameter Optimization",
// Algorithm 5 and Eqs. 5-6) that "Distribution-Based Invariant Deep Networks
// for Learning Meta-Features" reuses as patch identification (Task 1,
// Algorithm 3, Eq. 5.8): two sub-samples of the training datasets, from the
// same dataset or not, and the classifier p = exp(-s(F(z) - F(z'))) trained by
// cross-entropy with Adam on batches of pairs, half of them positive.
//
// s is ||.|| for Dataset2Vec (gamma = 1) and ||.||^2 for Dida. Shared by
// dida_train.h and dataset2vec_train.h; the extractors are any type with
// Trace, Forward(sample, trace), Backward(trace, d_output, grad),
// num_parameters(), GetParameters and SetParameters (surrogate::Dida,
// surrogate::Dataset2Vec). Deterministic for a seed with any thread count.
#ifndef METAOPT_CORE_META_TRAINING_PAIR_IDENTIFICATION_H_
#define METAOPT_CORE_META_TRAINING_PAIR_IDENTIFICATION_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/parallel.h"
#include "core/meta_training/train_common.h"
#include "core/nn/optimizer.h"
#include "core/space/random.h"
#include "core/surrogate/dataset2vec.h"

namespace metaopt::train {

struct PatchPair {
  surrogate::RawSample first, second;
  bool same = false;  // both from the same dataset
};

// The distance s of the classifier p(same) = exp(-s).
enum class PairDistance {
  kEuclidean,         // ||F(z) - F(z')||: Dataset2Vec
  kSquaredEuclidean,  // ||F(z) - F(z')||^2: Dida
};

struct IdentificationOptions {
  std::string name;  // in the progress lines ("dida", "d2v")
  PairDistance distance = PairDistance::kSquaredEuclidean;
  int epochs = 10;
  int steps_per_epoch = 20;
  int batch = 32;  // pairs per Adam step
  double learning_rate = 1e-3;
  int threads = 1;
};

// Draws `count` pairs with `rng`.
using PairSampler =
    std::function<std::vector<PatchPair>(int count, space::Rng& rng)>;

// A uniform integer in [low, high] (low <= high): a sub-sample's size.
inline int UniformIn(int low, int high, space::Rng& rng) {
  return low + static_cast<int>(space::UniformIndex(
                   rng, static_cast<uint64_t>(high - low + 1)));
}

// s for a difference with squared norm `d2` (floored away from 0).
inline double PairDistanceOf(double d2, PairDistance distance) {
  return distance == PairDistance::kSquaredEuclidean
             ? std::max(d2, 1e-12)
             : std::sqrt(std::max(d2, 1e-12));
}

// The share of `pairs` the classifier exp(-s) > 1/2 labels right.
template <typename Extractor>
double PairAccuracy(const Extractor& extractor,
                    const std::vector<PatchPair>& pairs, PairDistance distance,
                    int threads) {
  if (pairs.empty()) return 0;
  std::vector<char> right(pairs.size(), 0);
  ParallelFor(static_cast<int>(pairs.size()), threads, [&](int i) {
    const double s = PairDistanceOf(
        (extractor.Forward(pairs[i].first) - extractor.Forward(pairs[i].second))
            .squaredNorm(),
        distance);
    right[i] = (s < std::log(2.0)) == pairs[i].same;
  });
  return static_cast<double>(std::count(right.begin(), right.end(), 1)) /
         static_cast<double>(pairs.size());
}

// Trains `extractor` in place: options.epochs x options.steps_per_epoch Adam
// steps, each on `sample(options.batch, rng)`; after every epoch logs the mean
// loss and the accuracy on `held_out` to `progress` when given. Returns the
// accuracy on `held_out` after the last epoch (`initial_accuracy`, the
// untrained extractor's, for no epoch). INTERNAL for a non-finite gradient.
// The options are the caller's to validate.
template <typename Extractor>
absl::StatusOr<double> TrainByIdentification(
    const IdentificationOptions& options, const PairSampler& sample,
    const std::vector<PatchPair>& held_out, double initial_accuracy,
    space::Rng& rng, Progress* progress, Extractor& extractor) {
  const int p = extractor.num_parameters();
  Eigen::VectorXd theta(p);
  extractor.GetParameters(theta);
  nn::Adam adam(p);
  std::vector<Eigen::VectorXd> grads(static_cast<size_t>(options.batch));
  std::vector<double> losses(static_cast<size_t>(options.batch));
  double accuracy = initial_accuracy;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    double epoch_loss = 0;
    for (int step = 0; step < options.steps_per_epoch; ++step) {
      const std::vector<PatchPair> batch = sample(options.batch, rng);
      ParallelFor(options.batch, options.threads, [&](int i) {
        typename Extractor::Trace ta, tb;
        const Eigen::VectorXd fa = extractor.Forward(batch[i].first, &ta);
        const Eigen::VectorXd fb = extractor.Forward(batch[i].second, &tb);
        const Eigen::VectorXd diff = fa - fb;
        const double s = PairDistanceOf(diff.squaredNorm(), options.distance);
        // -log p = s for a positive pair, -log(1 - p) = -log(-expm1(-s))
        // for a negative one (p = exp(-s)).
        double d_s;
        if (batch[i].same) {
          losses[i] = s;
          d_s = 1.0;
        } else {
          losses[i] = -std::log(-std::expm1(-s));
          d_s = -1.0 / std::expm1(s);
        }
        grads[i] = Eigen::VectorXd::Zero(p);
        // ds/d(fa) = 2 diff (squared) or diff / s.
        const Eigen::VectorXd d_fa =
            options.distance == PairDistance::kSquaredEuclidean
                ? Eigen::VectorXd((2.0 * d_s / options.batch) * diff)
                : Eigen::VectorXd((d_s / (s * options.batch)) * diff);
        extractor.Backward(ta, d_fa, grads[i]);
        extractor.Backward(tb, -d_fa, grads[i]);
      });
      Eigen::VectorXd grad = Eigen::VectorXd::Zero(p);
      for (int i = 0; i < options.batch; ++i) {
        grad += grads[i];
        epoch_loss += losses[i];
      }
      if (!grad.allFinite()) {
        return absl::InternalError(absl::StrCat(
            options.name, " training: a non-finite gradient at epoch ", epoch));
      }
      adam.Step(grad, options.learning_rate, theta);
      extractor.SetParameters(theta);
    }
    accuracy =
        PairAccuracy(extractor, held_out, options.distance, options.threads);
    if (progress != nullptr) {
      progress->Log(absl::StrFormat(
          "%s epoch %d/%d: loss %.4f, held-out identification %.3f",
          options.name, epoch, options.epochs,
          epoch_loss / (options.steps_per_epoch * options.batch), accuracy));
    }
  }
  return accuracy;
}

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_PAIR_IDENTIFICATION_H_
