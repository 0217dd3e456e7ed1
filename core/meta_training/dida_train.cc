#include "core/meta_training/dida_train.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/status_macros.h"
#include "core/nn/optimizer.h"

namespace metaopt::train {
namespace {

int UniformIn(int low, int high, space::Rng& rng) {
  return low + static_cast<int>(space::UniformIndex(
                   rng, static_cast<uint64_t>(high - low + 1)));
}

// Runs fn(i) for i in [0, n) on `threads` threads (contiguous ranges).
template <typename Fn>
void ParallelRange(int n, int threads, const Fn& fn) {
  threads = std::clamp(threads, 1, std::max(1, n));
  if (threads == 1) {
    for (int i = 0; i < n; ++i) fn(i);
    return;
  }
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      for (int i = w * n / threads; i < (w + 1) * n / threads; ++i) fn(i);
    });
  }
  for (std::thread& worker : workers) worker.join();
}

// exp(-d2) > 1/2.
bool PredictsSame(double d2) { return d2 < std::log(2.0); }

}  // namespace

surrogate::RawSample DrawPatch(const surrogate::RawSample& data,
                               const DidaTrainOptions& options,
                               space::Rng& rng) {
  const int n = static_cast<int>(data.x.rows());
  const int m = static_cast<int>(data.x.cols());
  const int rows = UniformIn(options.min_rows, options.max_rows, rng);
  const int high = std::min(options.max_features, m);
  const int features = UniformIn(std::min(options.min_features, high), high,
                                 rng);
  std::vector<Eigen::Index> r(static_cast<size_t>(rows));
  std::vector<Eigen::Index> c(static_cast<size_t>(features));
  for (Eigen::Index& i : r) i = static_cast<Eigen::Index>(space::UniformIndex(rng, n));
  for (Eigen::Index& k : c) k = static_cast<Eigen::Index>(space::UniformIndex(rng, m));
  return surrogate::RawSample{data.x(r, c), data.y(r, Eigen::all)};
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
    uint64_t b = a;
    if (!pair.same) b = (a + 1 + space::UniformIndex(rng, d - 1)) % d;
    pair.first = DrawPatch(datasets[a], options, rng);
    pair.second = DrawPatch(datasets[b], options, rng);
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

double IdentificationAccuracy(const surrogate::Dida& dida,
                              const std::vector<PatchPair>& pairs,
                              int threads) {
  if (pairs.empty()) return 0;
  std::vector<char> right(pairs.size(), 0);
  ParallelRange(static_cast<int>(pairs.size()), threads, [&](int i) {
    const double d2 = (dida.Forward(pairs[i].first) -
                       dida.Forward(pairs[i].second))
                          .squaredNorm();
    right[i] = PredictsSame(d2) == pairs[i].same;
  });
  return static_cast<double>(std::count(right.begin(), right.end(), 1)) /
         static_cast<double>(pairs.size());
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
  space::Rng rng(options.seed);
  METAOPT_ASSIGN_OR_RETURN(surrogate::Dida dida,
                           surrogate::Dida::Create(options.architecture, rng));
  space::Rng eval_rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
  const std::vector<PatchPair> held_out =
      DrawPairs(datasets, options.eval_pairs, options, eval_rng);
  DidaFit fit{dida, 0, 0};
  fit.initial_accuracy =
      IdentificationAccuracy(dida, held_out, options.threads);
  const int p = dida.num_parameters();
  Eigen::VectorXd theta(p);
  dida.GetParameters(theta);
  nn::Adam adam(p);
  std::vector<Eigen::VectorXd> grads(static_cast<size_t>(options.batch));
  std::vector<double> losses(static_cast<size_t>(options.batch));
  double accuracy = fit.initial_accuracy;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    double epoch_loss = 0;
    for (int step = 0; step < options.steps_per_epoch; ++step) {
      const std::vector<PatchPair> batch =
          DrawPairs(datasets, options.batch, options, rng);
      ParallelRange(options.batch, options.threads, [&](int i) {
        surrogate::Dida::Trace ta, tb;
        const Eigen::VectorXd fa = dida.Forward(batch[i].first, &ta);
        const Eigen::VectorXd fb = dida.Forward(batch[i].second, &tb);
        const Eigen::VectorXd diff = fa - fb;
        const double d2 = std::max(diff.squaredNorm(), 1e-12);
        // -log p = d2 for a positive pair, -log(1 - p) = -log(-expm1(-d2))
        // for a negative one (Eq. 5.8 with p = exp(-d2)).
        double d_d2;
        if (batch[i].same) {
          losses[i] = d2;
          d_d2 = 1.0;
        } else {
          losses[i] = -std::log(-std::expm1(-d2));
          d_d2 = -1.0 / std::expm1(d2);
        }
        grads[i] = Eigen::VectorXd::Zero(p);
        const Eigen::VectorXd d_fa = (2.0 * d_d2 / options.batch) * diff;
        dida.Backward(ta, d_fa, grads[i]);
        dida.Backward(tb, -d_fa, grads[i]);
      });
      Eigen::VectorXd grad = Eigen::VectorXd::Zero(p);
      for (int i = 0; i < options.batch; ++i) {
        grad += grads[i];
        epoch_loss += losses[i];
      }
      if (!grad.allFinite()) {
        return absl::InternalError(absl::StrCat(
            "Dida training: a non-finite gradient at epoch ", epoch));
      }
      adam.Step(grad, options.learning_rate, theta);
      dida.SetParameters(theta);
    }
    accuracy = IdentificationAccuracy(dida, held_out, options.threads);
    if (progress != nullptr) {
      progress->Log(absl::StrFormat(
          "dida epoch %d/%d: loss %.4f, held-out patch identification %.3f",
          epoch, options.epochs,
          epoch_loss / (options.steps_per_epoch * options.batch), accuracy));
    }
  }
  fit.dida = std::move(dida);
  fit.accuracy = accuracy;
  return fit;
}

}  // namespace metaopt::train
