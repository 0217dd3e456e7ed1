// DeepPipe ("Deep Pipeline Embeddings for AutoML", Pineda Arango & Grabocka,
// KDD 2023): a deep kernel GP over pipeline configurations whose feature
// network mirrors the pipeline's structure. DeepPipeModel is one value type
// whose parts live in files named for them:
//   deeppipe_network.{h,cc}          the architecture, construction, Embed
//                                    and the network's backward pass;
//   deeppipe_model.cc                parameters, task vector, accessors;
//   deeppipe_objective.{h,cc}        Loss, the meta-training objective;
//   deeppipe_fine_tune.{h,cc}        FineTune and its kernel-scope objective;
//   deeppipe_partial_binding.cc      ForStudySpace and the new-encoder
//                                    fine-tuning objective;
//   deeppipe_artifact.cc             ToArtifact / FromArtifact;
//   deeppipe_surrogate.{h,cc}        Posterior and the Surrogate it returns.
// This header declares the whole API (and includes the others).
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
// parameters keep their meaning. Loss works on targets as given. FSBO's GP
// (DeepKernelGp::kFsbo, MODEL_KIND_FSBO) standardises nothing: meta-training
// rescales each batch by a random range (task augmentation) and a study's
// targets are taken as they are (TargetStandardization), unless the model's
// option standardizes_fsbo_targets() says otherwise.
#ifndef METAOPT_CORE_SURROGATE_DEEPPIPE_MODEL_H_
#define METAOPT_CORE_SURROGATE_DEEPPIPE_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/gp/gaussian_process.h"
#include "core/nn/mlp.h"
#include "core/space/encoding.h"
#include "core/space/search_space.h"
#include "core/space/space_mapping.h"
#include "core/surrogate/deeppipe_fine_tune.h"
#include "core/surrogate/deeppipe_network.h"
#include "core/surrogate/deeppipe_objective.h"
#include "core/surrogate/deeppipe_surrogate.h"
#include "core/surrogate/feature_scaler.h"
#include "core/surrogate/surrogate.h"
#include "metaopt/v1/model.pb.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::surrogate {

struct DeepPipeFineTuneResult;

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

  // Writes kind (MODEL_KIND_DEEPPIPE; MODEL_KIND_FSBO for DeepKernelGp::kFsbo,
  // which FromArtifact reads back from the kind), search_space, tensors
  // ("encoder.<stage>.<algorithm>.layer<k>.{weight,bias}",
  // "aggregator.layer<k>.{weight,bias}", "mean_head.weight" if conditioned,
  // "gp.log_lengthscales", "gp.log_output_scale", "gp.log_noise", "gp.mean"),
  // int_options (encoder_layers, aggregation_layers, width_factor, hidden,
  // embedding, input_dim, task_features) and normalization (noise_floor,
  // target_standardization = 1 (0 for kFsbo), the feature statistics if
  // conditioned).
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
  // FSBO's GP (DeepKernelGp::kFsbo): the mean parameter is held at 0 (Loss
  // gives it no gradient, ClampKernelParameters sets it to 0).
  bool zero_mean() const { return architecture_.gp == DeepKernelGp::kFsbo; }
  // How Posterior and FineTune scale a study's targets y: by their mean and
  // standard deviation (DeepKernelGp::kDeepPipe; kFsbo with
  // standardizes_fsbo_targets()) or not at all (kFsbo, the paper's).
  gp::Standardization TargetStandardization(const Eigen::VectorXd& y) const;
  // An option of kFsbo models (off: the paper's raw targets): standardise a
  // study's targets as kDeepPipe does. The artifact records it
  // (normalization "target_standardization" 1); kDeepPipe always
  // standardises, whatever it says.
  bool standardizes_fsbo_targets() const { return standardize_fsbo_targets_; }
  void set_standardize_fsbo_targets(bool on) { standardize_fsbo_targets_ = on; }
  // Clamps a GP hyperparameter vector (num_kernel_parameters() entries, the
  // tail of parameters()) into the box the optimisers keep it in: log
  // lengthscales and log output scale in [-10, 10], log noise excess in
  // [-30, 5], mean in [-10, 10] (targets are standardised), or 0 with
  // zero_mean().
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
  // The search space, its encoder and the meta-features read: immutable,
  // shared by copies.
  struct Structure {
    Structure(v1::SearchSpace proto_in, const space::SearchSpace& space,
              FeatureScaler task_features_in)
        : proto(std::move(proto_in)),
          encoder(space),
          task_features(std::move(task_features_in)) {}

    v1::SearchSpace proto;
    space::Encoder encoder;
    FeatureScaler task_features;  // Empty: unconditioned.
  };
  // A forward pass kept for the backward one.
  template <typename Scalar>
  struct EmbedTrace {
    // Per layout block: the rows whose stage chose that algorithm, and the
    // trace of its encoder on them.
    std::vector<std::vector<Eigen::Index>> rows;
    std::vector<typename nn::BasicMlp<Scalar>::Trace> encoder_traces;
    typename nn::BasicMlp<Scalar>::Trace aggregator_trace;
  };
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
  bool standardize_fsbo_targets_ = false;
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

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_DEEPPIPE_MODEL_H_
