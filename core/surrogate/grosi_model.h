// GROSI: a gray-box surrogate conditioned on the dataset ("Zero-shot Transfer
// Learning for Gray-box Hyper-parameter Optimization", §4 and Table 1).
//
//   phi = h(z)                      meta-feature embedding (R^K, K = 16)
//   psi(x, phi) = psi2(psi1([x; phi]))             joint psi1 (the paper's)
//   psi(x, phi) = psi2([t_x(x), t_phi(phi)])       two towers (an option)
//
// z is the model's input for the dataset: its engineered meta-features,
// standardised with the training means and standard deviations (a missing
// feature is imputed with its training mean, i.e. 0, and |z| is clipped at
// kFeatureClip), and/or, in a model with a Dataset2Vec extractor, D2V(sample)
// of a raw sample of the dataset (core/surrogate/dataset2vec.h), as the paper
// learns phi end to end from the data: z = [engineered; D2V(sample)]. h is an
// MLP over z. Engineered meta-features alone are a deviation for the
// meta-datasets without raw data. A D2V model given no sample takes the mean
// D2V output over its training tasks (dataset2vec_mean()). psi1 reads the
// (configuration, meta-feature) pair jointly, as the paper's psi1 : R^K x
// Lambda -> R^{K_psi1} does; the two-tower option instead gives each input its
// own network, t_x and t_phi, which meet only in psi2. Either way psi1's
// widths halve down to `tower_width` (ReLU throughout); psi2 is an MLP whose
// widths halve down to `head_width`, then a linear Dense(1).
//
// The target is the task's normalised regret (0: the task's best evaluated
// configuration, 1: its worst), so the zero-shot design is the arg-min top K
// of psi (the paper's Algorithm 2).
//
// Losses of one inner step (task t, another task q; the paper's Eq. 3
// regression, Eq. 7 consistency, Eqs. 5-6 identification, Eq. 8 the total):
//   O = mean_i (psi(x_i, phi_t) - y_i)^2                      regression
//   R = w_tq mean_i (psi(x_i, phi_t) - psi(x_i, phi_q))^2     consistency
//   P = (-log s(phi_t, phi_t') - log(1 - s(phi_t, phi_q))) / 2  identification
// with s(a, b) = exp(-|a - b|), |.| = sqrt(squared norm + 1e-12), and the
// probabilities clipped to [1e-7, 1 - 1e-7] (zero gradient when clipped). R is
// weighted by the similarity w_tq = exp(-|phi_t - phi_q|), with gradients
// through the weight, as in the authors' public code for "Hyperparameter
// Optimization with Differentiable Metafeatures" (the paper's Eq. 7 writes the
// distance, which would penalise disagreement most between dissimilar
// datasets). phi_t' is a second view of task t: the paper uses two batches of
// the same dataset; here it is z_t with features dropped (imputed) at random
// (see train::GrosiTrainOptions). Total: w_O O + alpha R + delta P, alpha =
// 0.5 and delta = 1 (the paper's App. F.1).
#ifndef METAOPT_CORE_SURROGATE_GROSI_MODEL_H_
#define METAOPT_CORE_SURROGATE_GROSI_MODEL_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/nn/mlp.h"
#include "core/space/encoding.h"
#include "core/space/search_space.h"
#include "core/surrogate/dataset2vec.h"
#include "core/surrogate/feature_scaler.h"
#include "metaopt/v1/model.pb.h"

namespace metaopt::surrogate {

// Widths of the network (defaults: the paper's Table 1, "Architecture 3").
struct GrosiArchitecture {
  int embedding = 16;       // K, the dimension of phi.
  // Whether phi also reads a raw sample through a Dataset2Vec extractor.
  bool dataset2vec = false;
  Dataset2VecArchitecture d2v;
  int feature_hidden = 32;  // Hidden width of h (0 hidden layers if 0).
  // psi1 over [x; phi] (the paper's) instead of one tower per input.
  bool joint_psi1 = true;
  int tower_layers = 4;     // psi1 (each tower): widths 32-16-8-4.
  int tower_width = 4;
  int head_layers = 4;  // psi2: widths 128-64-32-16, then Dense(1).
  int head_width = 16;
};

// Weights of the three losses.
struct GrosiLossWeights {
  double regression = 1.0;
  double alpha = 0.5;  // consistency R
  double delta = 1.0;  // identification P
};

// The data of one inner step. The engineered parts of the views (empty in a
// model without engineered features) and, in a Dataset2Vec model, their raw
// samples (a null sample takes dataset2vec_mean(), without gradient).
struct GrosiStepBatch {
  Eigen::VectorXd features;  // z_t
  Eigen::VectorXd positive;  // z_t', another view of task t
  Eigen::VectorXd negative;  // z_q, q != t
  const RawSample* sample = nullptr;
  const RawSample* positive_sample = nullptr;
  const RawSample* negative_sample = nullptr;
  Eigen::MatrixXd X;         // encoded configurations of t (n x D)
  Eigen::VectorXd y;         // their normalised regrets
};

struct GrosiLoss {
  double value = 0.0;  // weighted total
  double regression = 0.0;
  double consistency = 0.0;
  double identification = 0.0;
  Eigen::VectorXd gradient;  // d value / d parameters()
};

// A plain copyable value; const methods are thread-safe.
class GrosiModel {
 public:
  // Standardised features are clipped to [-kFeatureClip, kFeatureClip].
  static constexpr double kFeatureClip = FeatureScaler::kClip;

  // A randomly initialised model over `space` (configurations encoded by
  // space::Encoder) and the named meta-features (sorted, distinct; non-empty
  // unless architecture.dataset2vec), with means 0 and standard deviations 1.
  // INVALID_ARGUMENT for a bad architecture or feature list.
  static absl::StatusOr<GrosiModel> Create(
      const v1::SearchSpace& space, std::vector<std::string> feature_names,
      const GrosiArchitecture& architecture, uint64_t seed);

  // Reads an artifact written by ToArtifact. INVALID_ARGUMENT naming the
  // field for anything missing or inconsistent.
  static absl::StatusOr<GrosiModel> FromArtifact(
      const v1::ModelArtifact& artifact);

  // Sets kind, search_space, tensors, int_options and the feature statistics
  // (normalization "feature_mean/<name>", "feature_std/<name>").
  void ToArtifact(v1::ModelArtifact* artifact) const;

  // Training means and standard deviations, one per feature_names() entry (a
  // standard deviation <= 0 standardises the feature to 0).
  absl::Status SetFeatureStatistics(const Eigen::VectorXd& means,
                                    const Eigen::VectorXd& stds);

  // z for a dataset's raw meta-features (FeatureScaler::Standardize).
  template <typename FeatureMap>
  Eigen::VectorXd Standardize(const FeatureMap& raw,
                              std::vector<std::string>* imputed) const {
    return scaler_.Standardize(raw, imputed);
  }

  // z for standardised engineered features (num_features() entries) and,
  // in a Dataset2Vec model, a raw sample (null: dataset2vec_mean()).
  Eigen::VectorXd Input(const Eigen::VectorXd& engineered,
                        const RawSample* sample) const;
  // phi = h(z), z of input_dim() entries.
  Eigen::VectorXd Embed(const Eigen::VectorXd& z) const;
  // psi(x, phi) for every row of X (encoded configurations).
  Eigen::VectorXd Predict(const Eigen::VectorXd& phi,
                          const Eigen::MatrixXd& X) const;

  // The weighted losses of one inner step and their gradient (through the
  // Dataset2Vec extractor for the views with a sample).
  GrosiLoss Loss(const GrosiStepBatch& batch,
                 const GrosiLossWeights& weights) const;
  // The regression loss O alone on (X, y) for the dataset input z (the
  // paper's refit on the target's observations, Eq. 3); the Dataset2Vec
  // extractor is not differentiated (its gradient entries are 0).
  GrosiLoss RegressionLoss(const Eigen::VectorXd& z, const Eigen::MatrixXd& X,
                           const Eigen::VectorXd& y) const;

  int num_parameters() const;
  Eigen::VectorXd parameters() const;
  // INVALID_ARGUMENT for a wrong size or a non-finite value.
  absl::Status set_parameters(const Eigen::VectorXd& params);

  // z's size: num_features() plus the Dataset2Vec output, if any.
  int input_dim() const;
  // The extractor, or null in a model without one.
  const Dataset2Vec* dataset2vec() const {
    return d2v_.has_value() ? &*d2v_ : nullptr;
  }
  // Mean D2V output over the training tasks (zeros until set).
  const Eigen::VectorXd& dataset2vec_mean() const { return d2v_mean_; }
  // INVALID_ARGUMENT unless the model has an extractor and `mean` has its
  // output size and finite values.
  absl::Status set_dataset2vec_mean(const Eigen::VectorXd& mean);

  const std::vector<std::string>& feature_names() const {
    return scaler_.names();
  }
  int num_features() const { return scaler_.size(); }
  const Eigen::VectorXd& feature_means() const { return scaler_.means(); }
  const Eigen::VectorXd& feature_stds() const { return scaler_.stds(); }
  const GrosiArchitecture& architecture() const { return architecture_; }
  const space::Encoder& encoder() const { return *encoder_; }
  const v1::SearchSpace& space_proto() const { return space_proto_; }

 private:
  GrosiModel(GrosiArchitecture architecture, v1::SearchSpace space_proto,
             std::shared_ptr<const space::Encoder> encoder,
             FeatureScaler scaler, nn::Mlp features,
             std::optional<nn::Mlp> phi_tower, nn::Mlp psi1, nn::Mlp head);

  // h, the phi tower (if any), psi1 and psi2: the order of parameters().
  template <typename Model>
  static auto Networks(Model& model) {
    std::vector<decltype(&model.features_)> networks = {&model.features_};
    if (model.phi_tower_.has_value()) networks.push_back(&*model.phi_tower_);
    networks.push_back(&model.psi1_);
    networks.push_back(&model.head_);
    return networks;
  }

  // psi1's output for the rows of X at each row of Phi (stacked: the rows of
  // X at Phi.row(0), then at Phi.row(1), ...). `trace` as nn::Mlp::Forward's.
  Eigen::MatrixXd Psi1(const Eigen::MatrixXd& Phi, const Eigen::MatrixXd& X,
                       nn::Mlp::Trace* psi1_trace,
                       nn::Mlp::Trace* phi_trace) const;
  // Backward through Psi1: adds psi1's (and the phi tower's) parameter
  // gradients to `gradient` (the layout after h) and returns dL/dPhi.
  Eigen::MatrixXd Psi1Backward(const nn::Mlp::Trace& psi1_trace,
                               const nn::Mlp::Trace& phi_trace,
                               const Eigen::MatrixXd& d_out, int heads,
                               Eigen::Index n,
                               Eigen::Ref<Eigen::VectorXd> gradient) const;

  // Losses of (X, y) at the input M.row(0) plus, when M has 3 rows, R and P
  // against its positive (row 1) and negative (row 2) views; sets *d_inputs to
  // dL/dM.
  GrosiLoss Evaluate(const Eigen::MatrixXd& M, const Eigen::MatrixXd& X,
                     const Eigen::VectorXd& y, const GrosiLossWeights& weights,
                     Eigen::MatrixXd* d_inputs) const;

  GrosiArchitecture architecture_;
  v1::SearchSpace space_proto_;
  std::shared_ptr<const space::Encoder> encoder_;
  FeatureScaler scaler_;
  nn::Mlp features_;                   // h
  std::optional<nn::Mlp> phi_tower_;   // t_phi (two-tower models only)
  nn::Mlp psi1_;                       // psi1 over [x; phi], or the tower t_x
  nn::Mlp head_;                       // psi2
  std::optional<Dataset2Vec> d2v_;
  Eigen::VectorXd d2v_mean_;
};

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_GROSI_MODEL_H_
