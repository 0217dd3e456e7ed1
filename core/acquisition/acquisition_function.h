// What the acquisition optimizer ranks candidates by (acquisition_search.h):
// a score of each candidate's posterior marginal under a surrogate of an
// objective to MINIMISE; a higher score is a better candidate. A new
// acquisition function is one implementation of this interface.
//
// Thread-safe: implementations are immutable after construction.
#ifndef METAOPT_CORE_ACQUISITION_ACQUISITION_FUNCTION_H_
#define METAOPT_CORE_ACQUISITION_ACQUISITION_FUNCTION_H_

#include <deque>
#include <memory>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/common/mutex.h"
#include "core/gp/catalogue_kernel_cache.h"
#include "core/gp/gaussian_process.h"

namespace metaopt::acquisition {

// One gp::CatalogueKernelCache per further output of a study (its second and
// later objectives, then its constraints, in the order of the function that
// predicts them), created on first use and kept from one Suggest to the next
// beside the catalogue's own (EncodedCatalogue). Thread-safe.
class OutputKernelCaches {
 public:
  // The cache of output `output` (>= 0); its address is stable.
  gp::CatalogueKernelCache& ForOutput(int output) {
    MutexLock lock(&mu_);
    while (static_cast<int>(caches_.size()) <= output) caches_.emplace_back();
    return caches_[output];
  }

 private:
  Mutex mu_;
  // A deque: growing it moves no cache.
  std::deque<gp::CatalogueKernelCache> caches_ ABSL_GUARDED_BY(mu_);
};

// The rows a catalogue screen ranks: rows `rows` of the whole catalogue
// `catalogue` (the same matrix at every Suggest of a study) and the caches of
// the further outputs' kernels against it.
struct CatalogueRows {
  const Eigen::MatrixXd& catalogue;
  const std::vector<int>& rows;
  OutputKernelCaches& caches;
};

class AcquisitionFunction {
 public:
  virtual ~AcquisitionFunction() = default;

  // The score of each row of `prediction` (mean and latent variance of the
  // optimizer's surrogate, as Surrogate::Predict gives them) at the model
  // inputs `inputs` (one row each). A function of one output reads only
  // `prediction`; one of several outputs (pareto_acquisition.h) predicts its
  // other outputs at `inputs`. INVALID_ARGUMENT if the sizes differ.
  virtual absl::StatusOr<Eigen::VectorXd> Score(
      const gp::Prediction& prediction,
      const Eigen::MatrixXd& inputs) const = 0;

  // An upper bound on Score at each row for every prediction whose mean is
  // `bound.mean` and whose variance is at most `bound.variance` (a screening
  // prediction, Surrogate::PredictScreening): what the optimizer ranks rows
  // by before it scores the best of them exactly. Read only when
  // GrowsWithVariance(); the default, Score(bound, inputs), is then such a
  // bound.
  virtual absl::StatusOr<Eigen::VectorXd> ScoreBound(
      const gp::Prediction& bound, const Eigen::MatrixXd& inputs) const {
    return Score(bound, inputs);
  }

  // ScoreBound of catalogue rows (`inputs` are rows.rows of
  // rows.catalogue, in order): a function that predicts further outputs may
  // screen them through rows.caches, equal to ScoreBound up to rounding.
  // The default is ScoreBound.
  virtual absl::StatusOr<Eigen::VectorXd> ScoreCatalogueBound(
      const gp::Prediction& bound, const Eigen::MatrixXd& inputs,
      const CatalogueRows& rows) const {
    (void)rows;
    return ScoreBound(bound, inputs);
  }

  // The function for a batch's next pick once `input` (one row) was picked
  // and its surrogate believed to take its mean `mean` there (the optimizer
  // conditions its own surrogate on that fantasy); null when the function
  // stays the same (the default).
  virtual absl::StatusOr<std::unique_ptr<const AcquisitionFunction>> AfterPick(
      const Eigen::MatrixXd& input, double mean) const {
    (void)input;
    (void)mean;
    return nullptr;
  }

  // True if, for a fixed mean, the score never decreases as the variance
  // grows. Only then does a prediction whose variance is bounded above
  // (Surrogate::PredictScreening) bound the score, so that the optimizer may
  // skip exact predictions of rows whose bound cannot win.
  virtual bool GrowsWithVariance() const = 0;
};

// log EI(mean, variance; best) (acquisition.h: stable far in the tail), the
// first acquisition function: "Unexpected improvements to expected
// improvement" (Ament et al. 2023). `best` is the incumbent of the minimised
// objective and must be finite.
class LogExpectedImprovementFunction final : public AcquisitionFunction {
 public:
  explicit LogExpectedImprovementFunction(double best) : best_(best) {}

  absl::StatusOr<Eigen::VectorXd> Score(
      const gp::Prediction& prediction,
      const Eigen::MatrixXd& inputs) const override;
  bool GrowsWithVariance() const override { return true; }

  double best() const { return best_; }

 private:
  double best_;
};

}  // namespace metaopt::acquisition

#endif  // METAOPT_CORE_ACQUISITION_ACQUISITION_FUNCTION_H_
