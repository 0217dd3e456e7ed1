#include "core/acquisition/pareto_acquisition.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/acquisition/acquisition.h"
#include "core/common/parallel.h"
#include "core/common/status_macros.h"

namespace metaopt::acquisition {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Rows times boxes of an EHVI pass worth the compute threads: about 1 ms of
// shortfalls (a catalogue screen of 5,000 rows against a front of a few
// points); below it starting threads costs more than it saves.
constexpr Eigen::Index kParallelBoxTerms = 20000;

// The model's prediction at `inputs`: exact, or with `bound` its screening
// prediction (Predict when it has none), through the kernel cache of output
// `output` when `rows` gives the inputs' catalogue rows.
absl::StatusOr<gp::Prediction> PredictOutput(const surrogate::Surrogate& model,
                                             const Eigen::MatrixXd& inputs,
                                             bool bound,
                                             const CatalogueRows* rows = nullptr,
                                             int output = 0) {
  if (bound && rows != nullptr) {
    METAOPT_ASSIGN_OR_RETURN(
        std::optional<gp::Prediction> screening,
        model.PredictCatalogueScreening(rows->catalogue, rows->rows,
                                        rows->caches.ForOutput(output)));
    if (screening.has_value()) return *std::move(screening);
  } else if (bound) {
    METAOPT_ASSIGN_OR_RETURN(std::optional<gp::Prediction> screening,
                             model.PredictScreening(inputs));
    if (screening.has_value()) return *std::move(screening);
  }
  return model.Predict(inputs);
}

}  // namespace

double LogNormalCdf(double z) {
  if (z > -30) return std::log(0.5 * std::erfc(-z / std::sqrt(2.0)));
  // Mills ratio: Phi(z) = phi(z) / |z| (1 - 1/z^2 + 3/z^4 - ...).
  const double z2 = z * z;
  return -0.5 * z2 - 0.5 * std::log(2 * M_PI) - std::log(-z) +
         std::log1p(-1 / z2 + 3 / (z2 * z2));
}

ParetoAcquisition::ParetoAcquisition(
    std::vector<std::shared_ptr<const surrogate::Surrogate>> objectives,
    std::vector<ModeledConstraint> constraints,
    std::vector<std::vector<double>> front, std::vector<double> reference)
    : objectives_(std::move(objectives)),
      constraints_(std::move(constraints)),
      front_(std::move(front)),
      reference_(std::move(reference)),
      boxes_(front_, reference_) {}

absl::StatusOr<Eigen::VectorXd> ParetoAcquisition::Score(
    const gp::Prediction& prediction, const Eigen::MatrixXd& inputs) const {
  return Scores(prediction, inputs, /*bound=*/false);
}

absl::StatusOr<Eigen::VectorXd> ParetoAcquisition::ScoreBound(
    const gp::Prediction& bound, const Eigen::MatrixXd& inputs) const {
  return Scores(bound, inputs, /*bound=*/true);
}

absl::StatusOr<Eigen::VectorXd> ParetoAcquisition::ScoreCatalogueBound(
    const gp::Prediction& bound, const Eigen::MatrixXd& inputs,
    const CatalogueRows& rows) const {
  return Scores(bound, inputs, /*bound=*/true, &rows);
}

absl::StatusOr<Eigen::VectorXd> ParetoAcquisition::Scores(
    const gp::Prediction& prediction, const Eigen::MatrixXd& inputs,
    bool bound, const CatalogueRows* rows) const {
  const Eigen::Index n = prediction.mean.size();
  if (prediction.variance.size() != n || inputs.rows() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pareto acquisition: ", n, " means, ", prediction.variance.size(),
        " variances and ", inputs.rows(), " inputs"));
  }
  Eigen::VectorXd score = Eigen::VectorXd::Zero(n);
  int output = static_cast<int>(objectives_.size());
  for (const ModeledConstraint& constraint : constraints_) {
    METAOPT_ASSIGN_OR_RETURN(
        gp::Prediction metric,
        PredictOutput(*constraint.model, inputs, bound, rows, output++));
    for (Eigen::Index i = 0; i < n; ++i) {
      const double sd = std::sqrt(std::max(metric.variance[i], 0.0));
      const double margin = constraint.at_most
                                ? constraint.bound - metric.mean[i]
                                : metric.mean[i] - constraint.bound;
      if (bound && margin >= 0) continue;  // log 1 bounds log Phi(margin / sd)
      score[i] += sd > 0 ? LogNormalCdf(margin / sd)
                         : (margin >= 0 ? 0.0 : -kInf);
    }
  }
  if (front_.empty()) return score;  // nothing feasible yet: feasibility alone
  if (objectives_.empty()) {
    double best = kInf;
    for (const std::vector<double>& p : front_) best = std::min(best, p[0]);
    METAOPT_ASSIGN_OR_RETURN(
        Eigen::VectorXd log_ei,
        LogExpectedImprovement(prediction.mean, prediction.variance, best));
    return (score + log_ei).eval();
  }
  std::vector<gp::Prediction> others;
  for (size_t k = 0; k < objectives_.size(); ++k) {
    METAOPT_ASSIGN_OR_RETURN(
        gp::Prediction other,
        PredictOutput(*objectives_[k], inputs, bound, rows,
                      static_cast<int>(k)));
    others.push_back(std::move(other));
  }
  const int D = objectives();
  // Rows in blocks, on the compute threads when a catalogue's worth of them
  // (each row its own EHVI: the same bits on any number of threads).
  constexpr Eigen::Index kBlock = 256;
  const int blocks = static_cast<int>((n + kBlock - 1) / kBlock);
  const int threads =
      n * boxes_.size() >= kParallelBoxTerms ? ComputeThreads() : 1;
  ParallelFor(blocks, threads, [&](int block) {
    std::vector<double> mean(D);
    std::vector<double> sd(D);
    const Eigen::Index end = std::min(n, (block + 1) * kBlock);
    for (Eigen::Index i = block * kBlock; i < end; ++i) {
      mean[0] = prediction.mean[i];
      sd[0] = std::sqrt(std::max(prediction.variance[i], 0.0));
      for (int d = 1; d < D; ++d) {
        mean[d] = others[d - 1].mean[i];
        sd[d] = std::sqrt(std::max(others[d - 1].variance[i], 0.0));
      }
      score[i] += std::log(boxes_.Expected(mean, sd));
    }
  });
  return score;
}

absl::StatusOr<std::unique_ptr<const AcquisitionFunction>>
ParetoAcquisition::AfterPick(const Eigen::MatrixXd& input, double mean) const {
  std::vector<double> believed = {mean};
  std::vector<std::shared_ptr<const surrogate::Surrogate>> objectives;
  for (const auto& model : objectives_) {
    METAOPT_ASSIGN_OR_RETURN(gp::Prediction at, model->Predict(input));
    believed.push_back(at.mean[0]);
    METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<const surrogate::Surrogate> next,
                             model->WithFantasies(input));
    objectives.push_back(std::move(next));
  }
  bool feasible = true;
  std::vector<ModeledConstraint> constraints;
  for (const ModeledConstraint& constraint : constraints_) {
    METAOPT_ASSIGN_OR_RETURN(gp::Prediction at,
                             constraint.model->Predict(input));
    feasible = feasible && (constraint.at_most ? at.mean[0] <= constraint.bound
                                               : at.mean[0] >= constraint.bound);
    ModeledConstraint next = constraint;
    METAOPT_ASSIGN_OR_RETURN(next.model, constraint.model->WithFantasies(input));
    constraints.push_back(std::move(next));
  }
  std::vector<std::vector<double>> front = front_;
  if (feasible) front.push_back(std::move(believed));
  return std::unique_ptr<const AcquisitionFunction>(
      new ParetoAcquisition(std::move(objectives), std::move(constraints),
                            std::move(front), reference_));
}

}  // namespace metaopt::acquisition
