// DeepPipe ("Deep Pipeline Embeddings for AutoML", Pineda Arango & Grabocka,
// KDD 2023): a deep
// kernel GP over pipeline configurations whose feature network mirrors the
// pipeline's structure.
//
//   x (space::Encoder row) --per stage i, per algorithm j--> encoder MLP
//   xi_ij over the block of algorithm j (ReLU after every layer, width F*L_i,
//   L_i = max_j max(1, block size)); only the stage's chosen algorithm's
//   output is kept (the others are masked to exactly zero, so they get zero
//   gradient) --concatenate over stages--> aggregator MLP (ReLU hidden
//   layers of width H = max(F * sum_i L_i, 24), linear output) --> z in R^Z
//   --> GP with a Matérn-5/2 ARD kernel (Z lengthscales, output scale),
//   constant mean and Gaussian noise (floor 1e-4, as the authors' code).
//
// With 0 encoder layers (the authors' transfer models) there are no encoders:
// the aggregator reads the whole encoded vector, i.e. the flat hyperparameter
// blocks of all algorithms (the inactive ones are exactly 0 in space::Encoder)
// followed by each stage's one-hot of its chosen algorithm. (We keep the
// one-hot of single-algorithm stages, a constant column the authors drop; it
// only shifts the first bias.) Depth: encoder_layers + aggregation_layers = 4
// by default, counting the output projection as an aggregation layer. An
// algorithm without parameters reads one constant 1 column (the paper's dummy
// column).
//
// Parameters, as one flat vector (parameters(), Loss gradients, FineTune):
//   [encoder (stage 0, algorithm 0) MLP, encoder (0, 1), ..., aggregator MLP,
//    mean head w (conditioned models only), GP hyperparameters = log l_1..log
//    l_Z, log s, log noise excess, mean]
// (nn::Mlp flat layouts; the GP part is gp::GaussianProcess's). The kernel
// parameters are the last num_kernel_parameters() entries.
//
// Task conditioning (an extension, not in the DeepPipe paper; the idea of
// conditioning the surrogate on the dataset's meta-features is that of
// "Zero-Shot AutoML with Pretrained Models", Öztürk et al., ICML 2022): a
// conditioned model also reads the study's dataset meta-features, standardized
// with the training statistics (FeatureScaler), as T extra aggregator inputs
// (the same T values on every row: the task vector t, set per study by
// set_task), and has a linear mean head, m(x) = w' z(x, t), added to the GP's
// constant mean. With t the embedding, and with w the mean, depend on the
// dataset from the first Suggest: before any observation the posterior mean is
// m(x), a meta-learned, task-specific ranking of configurations. Meta-training
// feeds each task its own t. Parameters: w (Z entries) follows the aggregator
// in the network part ("mean_head.weight"); the feature statistics are stored
// as FeatureScaler stores them.
//
// Targets: meta-training standardises each task's targets by their mean and
// standard deviation; Posterior and FineTune standardise a study's targets the
// same way (gp::Standardization::FromTargets), so the meta-learned kernel
// parameters keep their meaning. Loss works on targets as given.
#ifndef METAOPT_CORE_SURROGATE_DEEPPIPE_MODEL_H_
#define METAOPT_CORE_SURROGATE_DEEPPIPE_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/gp/gaussian_process.h"
#include "core/nn/mlp.h"
#include "core/space/encoding.h"
#include "core/space/space_mapping.h"
#include "core/surrogate/feature_scaler.h"
#include "core/surrogate/surrogate.h"
#include "metaopt/v1/model.pb.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::surrogate {

// The network shape. Zeros mean "the authors' default"; DeepPipeModel stores
// the resolved values.
struct DeepPipeArchitecture {
  int encoder_layers = 0;  // l_e >= 0.
  // l_a >= 1, including the linear output layer; 0: max(1, 4 - l_e).
  int aggregation_layers = 0;
  int width_factor = 8;  // F >= 1 (the authors' best, App. E).
  // Aggregator hidden width H >= 1; 0: max(F * sum_i L_i, 24).
  int hidden = 0;
  int embedding = 20;  // Z >= 1.
};

enum class FineTuneScope {
  kKernel,  // GP hyperparameters only (the authors' transfer setting).
  kFull,    // Network and GP hyperparameters.
  // The encoders ForStudySpace added (new algorithms) and the GP
  // hyperparameters; the meta-learned encoders, the aggregator and the mean
  // head are frozen (the paper's Experiment 4). Without new encoders: kKernel.
  kNewEncoders,
};

// Adam on the per-point NLL of the standardised targets (as the authors'
// fine-tuning): starts from the model's parameters, stops after
// max_steps, when the time budget runs out, or when the loss changed by less
// than `tolerance` for more than `patience` consecutive steps, and returns the
// lowest-loss parameters seen.
struct DeepPipeFineTuneOptions {
  FineTuneScope scope = FineTuneScope::kKernel;
  int max_steps = 100;
  double learning_rate = 1e-3;
  absl::Duration time_budget = absl::InfiniteDuration();
  int patience = 16;  // 0: no early stopping.
  double tolerance = 1e-4;
  double max_gradient_norm = 0.0;  // 0: no clipping.
};

// The arithmetic of Loss's forward and backward passes. The parameters, the
// GP's kernel matrix, its Cholesky factorisation, the NLL value and alpha
// stay double either way.
enum class NetworkPrecision {
  kFloat64,
  // The encoders and the aggregator run in float on a float copy of their
  // weights (made per call); embeddings are widened to double for the GP and
  // the embedding gradient rounded to float for backpropagation; the K^-1
  // that the gradients need comes from a float copy of the Cholesky factor
  // (gp::GaussianProcess::NegativeLogMarginalLikelihood's float_inverse).
  // Twice the SIMD width; gradients agree with kFloat64 to about 1e-4
  // relative (DeepPipeGradientTest checks 1e-3 against finite differences).
  kFloat32,
};

class DeepPipeModel;
class DeepPipeSurrogate;
struct DeepPipeFineTuneResult;

// Per-point negative log marginal likelihood and its gradient w.r.t.
// parameters() (same layout).
struct DeepPipeLoss {
  double value = 0.0;
  Eigen::VectorXd gradient;
  // The leave-one-out predictive NLL divided by n (gp::NllResult::loo_nll).
  double loo = 0.0;
};

// A DeepPipe network plus GP hyperparameters. Thread-compatible: const methods
// may run concurrently (they keep no caches); set_parameters needs external
// synchronisation. A copyable value (copies share the immutable encoder).
class DeepPipeModel {
 public:
  static constexpr double kNoiseFloor = 1e-4;

  // A randomly initialised model for `space` (nn::InitScheme::kAuto: He for
  // ReLU layers, Glorot for the output; GP defaults of gp::GaussianProcess),
  // conditioned on the meta-features of `task_features` when it is not empty
  // (mean head 0, task vector 0 = the training means). INVALID_ARGUMENT for
  // an invalid space or architecture.
  static absl::StatusOr<DeepPipeModel> Create(
      const v1::SearchSpace& space, const DeepPipeArchitecture& architecture,
      uint64_t seed, FeatureScaler task_features = {});

  // The model stored in `artifact` by ToArtifact. INVALID_ARGUMENT naming the
  // field for a wrong kind, an invalid space, missing or out-of-range
  // int_options, or missing, misshapen, non-finite or unexpected tensors.
  static absl::StatusOr<DeepPipeModel> FromArtifact(
      const v1::ModelArtifact& artifact);

  // Partial binding (docs/algorithms.md): this model serving a study over
  // `study_space`, which space::MapStudySpace must accept against
  // search_space(). Masked algorithms and narrowed ranges change nothing (the
  // model encodes in its own space, so a study value gets the model's
  // scaling). Each algorithm the study adds is appended to its stage
  // (space::ExtendedModelSpace) with a fresh encoder (nn::InitScheme::kAuto,
  // from `seed`) whose output fills the stage's existing slot; every other
  // parameter is this model's. INVALID_ARGUMENT for an incompatible space;
  // FAILED_PRECONDITION for new algorithms and a model without encoder
  // layers.
  absl::StatusOr<DeepPipeModel> ForStudySpace(
      const v1::SearchSpace& study_space, uint64_t seed) const;
  // How many encoders ForStudySpace added (0 for a model as trained).
  int num_new_encoders() const;

  // Writes kind (MODEL_KIND_DEEPPIPE), search_space, tensors
  // ("encoder.<stage>.<algorithm>.layer<k>.{weight,bias}",
  // "aggregator.layer<k>.{weight,bias}", "mean_head.weight" if conditioned,
  // "gp.log_lengthscales", "gp.log_output_scale", "gp.log_noise", "gp.mean"),
  // int_options (encoder_layers, aggregation_layers, width_factor, hidden,
  // embedding, input_dim, task_features) and normalization (noise_floor,
  // target_standardization = 1, the feature statistics if conditioned).
  // Replaces existing tensors, int_options and normalization; leaves
  // format_version, objective, portfolio and provenance to the caller.
  void ToArtifact(v1::ModelArtifact* artifact) const;
  // Just the tensors, in the order above.
  std::vector<v1::Tensor> ToArtifactTensors() const;

  const DeepPipeArchitecture& architecture() const { return architecture_; }
  const space::Encoder& encoder() const;
  const v1::SearchSpace& search_space() const;
  int input_dim() const;
  int embedding_dim() const { return architecture_.embedding; }

  // Task conditioning: the meta-features read (empty: unconditioned) and the
  // current task vector (standardized features, task_features().size()
  // entries; zeros until set).
  bool conditioned() const;
  const FeatureScaler& task_features() const;
  const Eigen::VectorXd& task() const { return task_; }
  // INVALID_ARGUMENT for a size mismatch or non-finite entries.
  absl::Status set_task(const Eigen::VectorXd& task);
  // Sets the task vector from a dataset's raw meta-features
  // (FeatureScaler::Standardize) and returns the imputed names; a no-op
  // returning nothing for an unconditioned model.
  template <typename FeatureMap>
  std::vector<std::string> SetTaskFeatures(const FeatureMap& raw) {
    std::vector<std::string> imputed;
    if (conditioned()) task_ = task_features().Standardize(raw, &imputed);
    return imputed;
  }
  // The mean head's value m(x) = w' z per row of embeddings Z (zeros for an
  // unconditioned model), in standardized target units.
  Eigen::VectorXd MeanOfEmbeddings(const Eigen::MatrixXd& Z) const;

  int num_parameters() const;
  int num_network_parameters() const;
  int num_kernel_parameters() const { return gp_.num_hyperparameters(); }
  Eigen::VectorXd parameters() const;
  // INVALID_ARGUMENT for a size mismatch or non-finite entries (then nothing
  // changes).
  absl::Status set_parameters(const Eigen::Ref<const Eigen::VectorXd>& params);
  const gp::GaussianProcess& gp() const { return gp_; }
  // Clamps a GP hyperparameter vector (num_kernel_parameters() entries, the
  // tail of parameters()) into the box the optimisers keep it in: log
  // lengthscales and log output scale in [-10, 10], log noise excess in
  // [-30, 5], mean in [-10, 10] (targets are standardised).
  void ClampKernelParameters(Eigen::Ref<Eigen::VectorXd> kernel_params) const;

  // The embeddings (n x Z) of encoded configurations X (n x input_dim()).
  // INVALID_ARGUMENT for a column mismatch or non-finite entries.
  absl::StatusOr<Eigen::MatrixXd> Embed(const Eigen::MatrixXd& X) const;

  // The GP negative log marginal likelihood of y (as given) at Embed(X),
  // divided by n, and its gradient w.r.t. every parameter (through the
  // kernel's input gradient into the aggregator and the encoders). n >= 1.
  // For a conditioned model with mean_loss_weight = lambda > 0, plus
  // lambda * mean_i (y_i - c - m(x_i))^2: the prior mean's zero-shot
  // regression error (c the GP's constant mean), which the marginal
  // likelihood alone barely trains when the kernel can explain a whole
  // task's batch. `precision` chooses the network's arithmetic
  // (NetworkPrecision). INTERNAL if the Cholesky factorisation fails.
  absl::StatusOr<DeepPipeLoss> Loss(
      const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
      double mean_loss_weight = 0.0,
      NetworkPrecision precision = NetworkPrecision::kFloat64) const;

  // The GP posterior given observations (X, y) (y standardised by its own mean
  // and standard deviation; n may be 0), as an immutable Surrogate that embeds
  // its queries with a copy of this model (its GP over embeddings is
  // DeepPipeSurrogate::posterior()).
  absl::StatusOr<std::shared_ptr<const DeepPipeSurrogate>> Posterior(
      const Eigen::MatrixXd& X, const Eigen::VectorXd& y) const;

  // Fine-tunes a copy on (X, y) (y standardised as in Posterior; n >= 1).
  // INVALID_ARGUMENT for bad data or options; INTERNAL if the loss cannot be
  // evaluated at the starting point. A failure later on stops early and keeps
  // the best parameters so far.
  absl::StatusOr<DeepPipeFineTuneResult> FineTune(
      const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
      const DeepPipeFineTuneOptions& options) const;

 private:
  template <typename Scalar>
  struct EmbedTrace;
  struct Structure;
  template <typename Scalar>
  using MatrixT = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic>;
  template <typename Scalar>
  using VectorT = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  DeepPipeModel(std::shared_ptr<const Structure> structure,
                DeepPipeArchitecture architecture,
                std::vector<nn::Mlp> encoders, std::vector<int> slot_offsets,
                std::vector<int> slot_widths, nn::Mlp aggregator,
                gp::GaussianProcess gp);

  // `slot_widths`, when given, fixes the stage slots (a model extended by
  // ForStudySpace keeps its aggregator's input).
  static absl::StatusOr<DeepPipeModel> Build(
      const v1::SearchSpace& space, DeepPipeArchitecture architecture,
      double noise_floor, FeatureScaler task_features,
      const std::vector<int>* slot_widths = nullptr);
  // The indices into parameters() that FineTuneScope::kNewEncoders trains.
  std::vector<Eigen::Index> NewEncoderParameterIndices() const;
  // FineTuneScope::kNewEncoders' objective on validated (X, y): at q (the
  // entries NewEncoderParameterIndices() lists), Loss(X, y) with those entries
  // of parameters() set to q and its gradient restricted to them, bit for bit.
  // Skips what cannot change them: the frozen encoders' outputs are computed
  // once, the frozen networks get no parameter gradients. The function is not
  // thread-safe (it reuses a copy of the model between calls).
  std::function<absl::StatusOr<DeepPipeLoss>(const Eigen::VectorXd& q)>
  NewEncoderObjective(const Eigen::MatrixXd& X, const Eigen::VectorXd& y) const;
  absl::Status ValidateInputs(const Eigen::MatrixXd& X, const char* what) const;
  Eigen::MatrixXd EmbedImpl(const Eigen::MatrixXd& X,
                            EmbedTrace<double>* trace) const;
  // The embedding with the given networks (this model's, or a copy of them in
  // another scalar type).
  template <typename Scalar>
  MatrixT<Scalar> EmbedWith(const std::vector<nn::BasicMlp<Scalar>>& encoders,
                            const nn::BasicMlp<Scalar>& aggregator,
                            const MatrixT<Scalar>& X,
                            EmbedTrace<Scalar>* trace) const;
  // Adds dL/d(network parameters) to grad.head(num_network_parameters())
  // (the mean head's entries untouched).
  template <typename Scalar>
  void BackwardNetwork(const std::vector<nn::BasicMlp<Scalar>>& encoders,
                       const nn::BasicMlp<Scalar>& aggregator,
                       const EmbedTrace<Scalar>& trace,
                       const MatrixT<Scalar>& dZ,
                       Eigen::Ref<VectorT<Scalar>> grad) const;
  std::string EncoderPrefix(int block) const;

  friend class DeepPipeModelTestAccess;

  // The search space, its encoder and names: immutable, shared by copies.
  std::shared_ptr<const Structure> structure_;
  DeepPipeArchitecture architecture_;
  // One per space::EncodingLayout block (empty without encoder layers).
  std::vector<nn::Mlp> encoders_;
  // Per encoder: added by ForStudySpace (empty: none added).
  std::vector<bool> new_encoders_;
  // Per stage: where its encoder output goes in the aggregator input.
  std::vector<int> slot_offsets_;
  std::vector<int> slot_widths_;
  nn::Mlp aggregator_;
  // Conditioned models: the mean head w (Z entries) and the task vector t.
  Eigen::VectorXd mean_weights_;
  Eigen::VectorXd task_;
  gp::GaussianProcess gp_;
};

// The kernel-scope fine-tuning loss: the per-point GP negative log marginal
// likelihood of targets y at fixed embeddings Z as a function of the GP
// hyperparameters (DeepPipeModel::gp() layout), with its gradient and the
// leave-one-out NLL, numerically equal to gp::GaussianProcess's Matérn-5/2
// computation. Built once per fine-tune: the per-dimension squared
// differences of every pair of embeddings are cached, so a step costs one
// matrix-vector product for the distances, one Matérn profile over the n(n-1)/2
// pairs, a Cholesky factorisation and K^-1, instead of recomputing distances
// and profiles for the kernel and again for its gradient. Immutable;
// thread-safe.
class DeepPipeKernelObjective {
 public:
  // `gp` supplies the kernel (Matérn-5/2 ARD over Z.cols() dimensions) and
  // the noise floor. INVALID_ARGUMENT for a size mismatch, n = 0, non-finite
  // data or another kernel.
  static absl::StatusOr<DeepPipeKernelObjective> Create(
      const gp::GaussianProcess& gp, const Eigen::MatrixXd& Z,
      const Eigen::VectorXd& y);

  // Loss at hyperparameters h (value and loo divided by n). INTERNAL if the
  // Cholesky factorisation fails.
  absl::StatusOr<DeepPipeLoss> Evaluate(const Eigen::VectorXd& h) const;

 private:
  DeepPipeKernelObjective(Eigen::MatrixXd pair_d2, Eigen::VectorXd y,
                          double noise_floor)
      : pair_d2_(std::move(pair_d2)),
        y_(std::move(y)),
        noise_floor_(noise_floor) {}

  // Row p = pair (i, j), i > j, in column-major lower-triangle order:
  // (z_i - z_j)^2 per dimension.
  Eigen::MatrixXd pair_d2_;
  Eigen::VectorXd y_;
  double noise_floor_;
};

// What DeepPipeModel::FineTune returns.
struct DeepPipeFineTuneResult {
  DeepPipeModel model;  // With the lowest-loss parameters seen.
  double loss_before = 0.0;
  double loss_after = 0.0;
  int steps_run = 0;  // Adam steps taken.
  absl::Duration elapsed;
  bool early_stopped = false;
};

// The Surrogate that DeepPipeModel::Posterior returns: a GP posterior over
// embeddings plus the network that embeds queries. Immutable; thread-safe.
class DeepPipeSurrogate final : public Surrogate {
 public:
  DeepPipeSurrogate(std::shared_ptr<const DeepPipeModel> model,
                    gp::GpPosterior posterior)
      : model_(std::move(model)), posterior_(std::move(posterior)) {}

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

#endif  // METAOPT_CORE_SURROGATE_DEEPPIPE_MODEL_H_
