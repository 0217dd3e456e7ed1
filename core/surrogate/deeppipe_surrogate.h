// The Surrogate a DeepPipe model gives for a study (defined in
// deeppipe_surrogate.cc with DeepPipeModel::Posterior): the GP posterior over
// the embeddings of the observations, plus the network that embeds queries;
// for a conditioned model the GP models the residual of the mean head, which
// predictions add back.
#ifndef METAOPT_CORE_SURROGATE_DEEPPIPE_SURROGATE_H_
#define METAOPT_CORE_SURROGATE_DEEPPIPE_SURROGATE_H_

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/gp/gaussian_process.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::surrogate {

class DeepPipeModel;  // deeppipe_model.h

// The Surrogate that DeepPipeModel::Posterior returns: a GP posterior over
// embeddings plus the network that embeds queries. Immutable; thread-safe.
class DeepPipeSurrogate final : public Surrogate {
 public:
  DeepPipeSurrogate(std::shared_ptr<const DeepPipeModel> model,
                    gp::GpPosterior posterior)
      : model_(std::move(model)), posterior_(std::move(posterior)) {}

  // Rows per block in which Predict embeds and predicts a large query with a
  // flat network (DeepPipeArchitecture::encoder_layers 0, FSBO's): equal bit
  // for bit to embedding the whole query at once, in a fraction of the
  // memory traffic. A multiple of the GP's prediction block and of 24, the
  // rows of Eigen's matrix-product micro-panels under SSE2 (4), AVX2 (12) and
  // AVX-512 (24): each block's rows then fall in the micro-panels they fall
  // in within the whole query (with fused multiply-adds a panel's edge
  // rounds otherwise than its body).
  static constexpr Eigen::Index kEmbedBlock = 2304;

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override;
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override;

  // Predict and WithFantasies for rows that are already embeddings
  // (model().Embed(X)), so a caller can embed a fixed candidate set once per
  // network.
  absl::StatusOr<gp::Prediction> PredictEmbedded(
      const Eigen::MatrixXd& Z) const;
  // Surrogate::PredictScreening for embedded rows.
  absl::StatusOr<std::optional<gp::Prediction>> PredictEmbeddedScreening(
      const Eigen::MatrixXd& Z) const;
  // Surrogate::PredictCatalogueScreening for an embedded catalogue.
  absl::StatusOr<std::optional<gp::Prediction>>
  PredictEmbeddedCatalogueScreening(const Eigen::MatrixXd& catalogue,
                                    const std::vector<int>& rows,
                                    gp::CatalogueKernelCache& cache) const;
  absl::StatusOr<std::shared_ptr<const DeepPipeSurrogate>>
  WithEmbeddedFantasies(const Eigen::MatrixXd& Z) const;

  const DeepPipeModel& model() const { return *model_; }
  // The GP over embeddings; for a conditioned model it models the residual
  // y - m(x) (PredictEmbedded adds the mean head back).
  const gp::GpPosterior& posterior() const { return posterior_; }

 private:
  std::shared_ptr<const DeepPipeModel> model_;
  gp::GpPosterior posterior_;
};

// A DeepPipeSurrogate whose queries are embeddings (DeepPipeModel::Embed
// rows), for candidate sets embedded once. Immutable; thread-safe.
class DeepPipeEmbeddedSurrogate final : public Surrogate {
 public:
  explicit DeepPipeEmbeddedSurrogate(
      std::shared_ptr<const DeepPipeSurrogate> surrogate)
      : surrogate_(std::move(surrogate)) {}

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& Z) const override {
    return surrogate_->PredictEmbedded(Z);
  }
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& Z) const override;
  absl::StatusOr<std::optional<gp::Prediction>> PredictScreening(
      const Eigen::MatrixXd& Z) const override {
    return surrogate_->PredictEmbeddedScreening(Z);
  }
  absl::StatusOr<std::optional<gp::Prediction>> PredictCatalogueScreening(
      const Eigen::MatrixXd& catalogue, const std::vector<int>& rows,
      gp::CatalogueKernelCache& cache) const override {
    return surrogate_->PredictEmbeddedCatalogueScreening(catalogue, rows,
                                                         cache);
  }

 private:
  std::shared_ptr<const DeepPipeSurrogate> surrogate_;
};

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_DEEPPIPE_SURROGATE_H_
