#include "core/surrogate/deeppipe_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/nn/optimizer.h"
#include "core/nn/tensor_io.h"
#include "core/space/search_space.h"

namespace metaopt::surrogate {

// Limits that keep a (possibly hostile) artifact from allocating absurd
// networks.
namespace {
constexpr int kMaxEncoderLayers = 8;
constexpr int kMaxAggregationLayers = 16;
constexpr int kMaxWidthFactor = 256;
constexpr int kMaxHidden = 8192;
constexpr int kMaxEmbedding = 1024;
constexpr int64_t kMaxNetworkParameters = int64_t{1} << 26;

constexpr char kKernelName[] = "matern52";

// Tensor and option names (see ToArtifact).
constexpr char kAggregatorPrefix[] = "aggregator";
constexpr char kLogLengthscales[] = "gp.log_lengthscales";
constexpr char kLogOutputScale[] = "gp.log_output_scale";
constexpr char kLogNoise[] = "gp.log_noise";
constexpr char kMean[] = "gp.mean";
constexpr char kMeanHead[] = "mean_head.weight";

}  // namespace

struct DeepPipeModel::Structure {
  Structure(v1::SearchSpace proto_in, const space::SearchSpace& space,
            FeatureScaler task_features_in)
      : proto(std::move(proto_in)),
        encoder(space),
        task_features(std::move(task_features_in)) {}

  v1::SearchSpace proto;
  space::Encoder encoder;
  FeatureScaler task_features;  // Empty: unconditioned.
};

template <typename Scalar>
struct DeepPipeModel::EmbedTrace {
  // Per layout block: the rows whose stage chose that algorithm, and the
  // trace of its encoder on them.
  std::vector<std::vector<Eigen::Index>> rows;
  std::vector<typename nn::BasicMlp<Scalar>::Trace> encoder_traces;
  typename nn::BasicMlp<Scalar>::Trace aggregator_trace;
};

DeepPipeModel::DeepPipeModel(std::shared_ptr<const Structure> structure,
                             DeepPipeArchitecture architecture,
                             std::vector<nn::Mlp> encoders,
                             std::vector<int> slot_offsets,
                             std::vector<int> slot_widths, nn::Mlp aggregator,
                             gp::GaussianProcess gp)
    : structure_(std::move(structure)),
      architecture_(architecture),
      encoders_(std::move(encoders)),
      slot_offsets_(std::move(slot_offsets)),
      slot_widths_(std::move(slot_widths)),
      aggregator_(std::move(aggregator)),
      mean_weights_(Eigen::VectorXd::Zero(
          structure_->task_features.empty() ? 0 : architecture.embedding)),
      task_(Eigen::VectorXd::Zero(structure_->task_features.size())),
      gp_(std::move(gp)) {}

const space::Encoder& DeepPipeModel::encoder() const {
  return structure_->encoder;
}

const v1::SearchSpace& DeepPipeModel::search_space() const {
  return structure_->proto;
}

int DeepPipeModel::input_dim() const { return structure_->encoder.dimension(); }

bool DeepPipeModel::conditioned() const {
  return !structure_->task_features.empty();
}

const FeatureScaler& DeepPipeModel::task_features() const {
  return structure_->task_features;
}

absl::Status DeepPipeModel::set_task(const Eigen::VectorXd& task) {
  if (task.size() != task_.size() || !task.allFinite()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeepPipe task vector: ", task.size(), " entries, expected ",
        task_.size(), " finite ones (one per meta-feature the model reads)"));
  }
  task_ = task;
  return absl::OkStatus();
}

Eigen::VectorXd DeepPipeModel::MeanOfEmbeddings(
    const Eigen::MatrixXd& Z) const {
  if (!conditioned()) return Eigen::VectorXd::Zero(Z.rows());
  return Z * mean_weights_;
}

absl::StatusOr<DeepPipeModel> DeepPipeModel::Build(
    const v1::SearchSpace& space_proto, DeepPipeArchitecture arch,
    double noise_floor, FeatureScaler task_features,
    const std::vector<int>* fixed_slot_widths) {
  METAOPT_ASSIGN_OR_RETURN(
      space::SearchSpace space,
      space::SearchSpace::Create(space_proto, "deeppipe.search_space"));
  auto check = [](const char* name, int value, int low,
                  int high) -> absl::Status {
    if (value < low || value > high) {
      return absl::InvalidArgumentError(
          absl::StrCat("DeepPipe architecture: ", name, " ", value,
                       " is outside [", low, ", ", high, "]"));
    }
    return absl::OkStatus();
  };
  METAOPT_RETURN_IF_ERROR(
      check("encoder_layers", arch.encoder_layers, 0, kMaxEncoderLayers));
  METAOPT_RETURN_IF_ERROR(check("aggregation_layers", arch.aggregation_layers,
                                0, kMaxAggregationLayers));
  METAOPT_RETURN_IF_ERROR(
      check("width_factor", arch.width_factor, 1, kMaxWidthFactor));
  METAOPT_RETURN_IF_ERROR(check("hidden", arch.hidden, 0, kMaxHidden));
  METAOPT_RETURN_IF_ERROR(check("embedding", arch.embedding, 1, kMaxEmbedding));
  if (arch.aggregation_layers == 0) {
    arch.aggregation_layers = std::max(1, 4 - arch.encoder_layers);
  }

  const int task_inputs = task_features.size();
  auto structure = std::make_shared<const Structure>(space_proto, space,
                                                     std::move(task_features));
  const space::EncodingLayout& layout = structure->encoder.layout();
  const int num_stages = static_cast<int>(layout.stages.size());

  // L_i = max_j max(1, |block_ij|); stage slots of width F * L_i.
  std::vector<int> slot_offsets(num_stages), slot_widths(num_stages);
  int sum_l = 0;
  int slot_total = 0;
  for (int s = 0; s < num_stages; ++s) {
    int l = 1;
    for (int a = 0; a < layout.stages[s].size; ++a) {
      l = std::max(l, layout.block(s, a).size);
    }
    sum_l += l;
    slot_offsets[s] = slot_total;
    slot_widths[s] = fixed_slot_widths != nullptr ? (*fixed_slot_widths)[s]
                                                  : arch.width_factor * l;
    slot_total += slot_widths[s];
  }
  if (arch.hidden == 0) arch.hidden = std::max(arch.width_factor * sum_l, 24);
  METAOPT_RETURN_IF_ERROR(check("hidden", arch.hidden, 1, kMaxHidden));

  int64_t num_params = 0;
  std::vector<nn::Mlp> encoders;
  int aggregator_input = layout.dimension;
  if (arch.encoder_layers > 0) {
    encoders.reserve(layout.blocks.size());
    for (const space::BlockLayout& block : layout.blocks) {
      const int width = slot_widths[block.stage];
      METAOPT_ASSIGN_OR_RETURN(
          nn::Mlp mlp,
          nn::Mlp::Create(std::max(1, block.size),
                          std::vector<int>(arch.encoder_layers, width),
                          /*relu_on_output=*/true));
      num_params += mlp.num_parameters();
      encoders.push_back(std::move(mlp));
    }
    aggregator_input = slot_total;
  }
  aggregator_input += task_inputs;
  std::vector<int> widths(arch.aggregation_layers - 1, arch.hidden);
  widths.push_back(arch.embedding);
  METAOPT_ASSIGN_OR_RETURN(nn::Mlp aggregator,
                           nn::Mlp::Create(aggregator_input, widths));
  num_params += aggregator.num_parameters();
  if (task_inputs > 0) num_params += arch.embedding;
  if (num_params > kMaxNetworkParameters) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeepPipe architecture: ", num_params,
        " network parameters exceed the limit of ", kMaxNetworkParameters));
  }
  if (!(noise_floor > 0.0) || !std::isfinite(noise_floor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeepPipe: noise floor ", noise_floor, " is not positive and finite"));
  }
  METAOPT_ASSIGN_OR_RETURN(
      gp::GaussianProcess gp,
      gp::GaussianProcess::Create(kKernelName, arch.embedding, noise_floor));
  return DeepPipeModel(std::move(structure), arch, std::move(encoders),
                       std::move(slot_offsets), std::move(slot_widths),
                       std::move(aggregator), std::move(gp));
}

absl::StatusOr<DeepPipeModel> DeepPipeModel::Create(
    const v1::SearchSpace& space, const DeepPipeArchitecture& architecture,
    uint64_t seed, FeatureScaler task_features) {
  METAOPT_ASSIGN_OR_RETURN(
      DeepPipeModel model,
      Build(space, architecture, kNoiseFloor, std::move(task_features)));
  space::Rng rng(seed);
  for (nn::Mlp& mlp : model.encoders_)
    mlp.Initialize(nn::InitScheme::kAuto, rng);
  model.aggregator_.Initialize(nn::InitScheme::kAuto, rng);
  return model;
}

absl::StatusOr<DeepPipeModel> DeepPipeModel::ForStudySpace(
    const v1::SearchSpace& study_space, uint64_t seed) const {
  absl::StatusOr<space::SpaceMapping> mapping =
      space::MapStudySpace(search_space(), study_space);
  if (!mapping.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeepPipe model over another space: ", mapping.status().message()));
  }
  if (mapping->new_algorithms.empty()) return *this;
  if (encoders_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "DeepPipe model without encoder layers cannot learn the new "
        "algorithm ",
        mapping->new_algorithms.front()));
  }
  METAOPT_ASSIGN_OR_RETURN(
      DeepPipeModel out,
      Build(space::ExtendedModelSpace(search_space(), study_space),
            architecture_, gp_.noise_floor(), structure_->task_features,
            &slot_widths_));
  // Blocks are stage by stage; a stage's known algorithms keep their
  // indices and the new ones follow.
  const space::EncodingLayout& old_layout = structure_->encoder.layout();
  const space::EncodingLayout& new_layout = out.structure_->encoder.layout();
  out.new_encoders_.assign(out.encoders_.size(), true);
  for (const space::BlockLayout& block : old_layout.blocks) {
    const int b = new_layout.block_start[block.stage] + block.algorithm;
    out.encoders_[b] =
        encoders_[old_layout.block_start[block.stage] + block.algorithm];
    out.new_encoders_[b] = false;
  }
  space::Rng rng(seed);
  for (size_t b = 0; b < out.encoders_.size(); ++b) {
    if (out.new_encoders_[b]) {
      out.encoders_[b].Initialize(nn::InitScheme::kAuto, rng);
    }
  }
  out.aggregator_ = aggregator_;
  out.mean_weights_ = mean_weights_;
  out.task_ = task_;
  out.gp_ = gp_;
  return out;
}

int DeepPipeModel::num_new_encoders() const {
  return static_cast<int>(
      std::count(new_encoders_.begin(), new_encoders_.end(), true));
}

std::vector<Eigen::Index> DeepPipeModel::NewEncoderParameterIndices() const {
  std::vector<Eigen::Index> indices;
  Eigen::Index offset = 0;
  for (size_t b = 0; b < encoders_.size(); ++b) {
    const Eigen::Index n = encoders_[b].num_parameters();
    if (b < new_encoders_.size() && new_encoders_[b]) {
      for (Eigen::Index i = 0; i < n; ++i) indices.push_back(offset + i);
    }
    offset += n;
  }
  const Eigen::Index first_kernel = num_network_parameters();
  for (int i = 0; i < num_kernel_parameters(); ++i) {
    indices.push_back(first_kernel + i);
  }
  return indices;
}

std::function<absl::StatusOr<DeepPipeLoss>(const Eigen::VectorXd&)>
DeepPipeModel::NewEncoderObjective(const Eigen::MatrixXd& X,
                                   const Eigen::VectorXd& y) const {
  // Fixed within a fit, and taken from one Loss-style forward pass so that
  // every value is Loss's: the rows per block, the new encoders' inputs and
  // the aggregator input (its frozen encoders' slots; a new algorithm's rows
  // are overwritten per call); the embeddings too if no row chooses a new
  // algorithm.
  struct State {
    DeepPipeModel work;
    Eigen::VectorXd y;
    std::vector<int> new_blocks;
    bool embeddings_move = false;
    EmbedTrace<double> trace;
    Eigen::MatrixXd aggregator_input;
    Eigen::MatrixXd fixed_embeddings;
  };
  auto state = std::make_shared<State>(State{*this, y, {}, false, {}, {}, {}});
  state->fixed_embeddings = EmbedImpl(X, &state->trace);
  state->aggregator_input = state->trace.aggregator_trace.outputs[0];
  for (size_t b = 0; b < new_encoders_.size(); ++b) {
    if (!new_encoders_[b]) continue;
    state->new_blocks.push_back(static_cast<int>(b));
    state->embeddings_move |= !state->trace.rows[b].empty();
  }
  return [state](const Eigen::VectorXd& q) -> absl::StatusOr<DeepPipeLoss> {
    DeepPipeModel& work = state->work;
    EmbedTrace<double>& trace = state->trace;
    const space::EncodingLayout& layout = work.structure_->encoder.layout();
    const int kp = work.num_kernel_parameters();
    if (!q.allFinite()) {
      return absl::InvalidArgumentError(
          "DeepPipe parameters: non-finite entries");
    }
    METAOPT_RETURN_IF_ERROR(work.gp_.set_hyperparameters(q.tail(kp)));
    Eigen::Index offset = 0;
    for (int b : state->new_blocks) {
      nn::Mlp& encoder = work.encoders_[b];
      encoder.SetParameters(q.segment(offset, encoder.num_parameters()));
      offset += encoder.num_parameters();
    }
    // Forward as EmbedWith, the frozen encoders' outputs reused.
    Eigen::MatrixXd Z;
    if (state->embeddings_move) {
      Eigen::MatrixXd& A = state->aggregator_input;
      for (int b : state->new_blocks) {
        if (trace.rows[b].empty()) continue;
        const int stage = layout.blocks[b].stage;
        nn::Mlp::Trace& encoder_trace = trace.encoder_traces[b];
        // Forward refills the trace, starting with its input.
        const Eigen::MatrixXd input = std::move(encoder_trace.outputs[0]);
        const Eigen::MatrixXd out =
            work.encoders_[b].Forward(input, &encoder_trace);
        A(trace.rows[b], Eigen::seqN(work.slot_offsets_[stage],
                                     work.slot_widths_[stage])) = out;
      }
      Z = work.aggregator_.Forward(A, &trace.aggregator_trace);
    }
    const Eigen::MatrixXd& embeddings =
        state->embeddings_move ? Z : state->fixed_embeddings;
    // The GP part as Loss (mean_loss_weight 0).
    const Eigen::VectorXd m = work.MeanOfEmbeddings(embeddings);
    METAOPT_ASSIGN_OR_RETURN(gp::NllResult nll,
                             work.gp_.NegativeLogMarginalLikelihood(
                                 embeddings, state->y - m,
                                 /*with_input_gradient=*/state->embeddings_move,
                                 /*float_inverse=*/false));
    const double inv_n = 1.0 / static_cast<double>(embeddings.rows());
    DeepPipeLoss loss;
    loss.value = nll.value * inv_n;
    loss.loo = nll.loo_nll * inv_n;
    loss.gradient = Eigen::VectorXd::Zero(q.size());
    loss.gradient.tail(kp) = nll.grad_hyper * inv_n;
    if (!state->embeddings_move) return loss;
    Eigen::MatrixXd dZ = nll.grad_inputs * inv_n;
    if (work.conditioned()) {
      const Eigen::VectorXd dm = -nll.grad_targets * inv_n;
      dZ.noalias() += dm * work.mean_weights_.transpose();
    }
    // Backward as BackwardNetwork, through the frozen aggregator into the new
    // encoders only.
    const Eigen::MatrixXd dA =
        work.aggregator_.InputGradient(trace.aggregator_trace, dZ);
    offset = 0;
    for (int b : state->new_blocks) {
      const nn::Mlp& encoder = work.encoders_[b];
      const int np = encoder.num_parameters();
      offset += np;
      if (trace.rows[b].empty()) continue;
      const int stage = layout.blocks[b].stage;
      const Eigen::MatrixXd dOut =
          dA(trace.rows[b],
             Eigen::seqN(work.slot_offsets_[stage], work.slot_widths_[stage]));
      encoder.Backward(trace.encoder_traces[b], dOut,
                       loss.gradient.segment(offset - np, np), nullptr);
    }
    return loss;
  };
}

int DeepPipeModel::num_network_parameters() const {
  int n = aggregator_.num_parameters() + static_cast<int>(mean_weights_.size());
  for (const nn::Mlp& mlp : encoders_) n += mlp.num_parameters();
  return n;
}

int DeepPipeModel::num_parameters() const {
  return num_network_parameters() + num_kernel_parameters();
}

Eigen::VectorXd DeepPipeModel::parameters() const {
  Eigen::VectorXd p(num_parameters());
  int offset = 0;
  for (const nn::Mlp& mlp : encoders_) {
    mlp.GetParameters(p.segment(offset, mlp.num_parameters()));
    offset += mlp.num_parameters();
  }
  aggregator_.GetParameters(p.segment(offset, aggregator_.num_parameters()));
  offset += aggregator_.num_parameters();
  p.segment(offset, mean_weights_.size()) = mean_weights_;
  p.tail(num_kernel_parameters()) = gp_.hyperparameters();
  return p;
}

absl::Status DeepPipeModel::set_parameters(
    const Eigen::Ref<const Eigen::VectorXd>& params) {
  if (params.size() != num_parameters()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe parameters: ", params.size(),
                     " entries, expected ", num_parameters()));
  }
  if (!params.allFinite()) {
    return absl::InvalidArgumentError(
        "DeepPipe parameters: non-finite entries");
  }
  METAOPT_RETURN_IF_ERROR(
      gp_.set_hyperparameters(params.tail(num_kernel_parameters())));
  int offset = 0;
  for (nn::Mlp& mlp : encoders_) {
    mlp.SetParameters(params.segment(offset, mlp.num_parameters()));
    offset += mlp.num_parameters();
  }
  aggregator_.SetParameters(
      params.segment(offset, aggregator_.num_parameters()));
  offset += aggregator_.num_parameters();
  mean_weights_ = params.segment(offset, mean_weights_.size());
  return absl::OkStatus();
}

void DeepPipeModel::ClampKernelParameters(
    Eigen::Ref<Eigen::VectorXd> kernel_params) const {
  const int kp = gp_.kernel().num_params();
  kernel_params.head(kp) =
      kernel_params.head(kp).cwiseMax(-10.0).cwiseMin(10.0);
  double& log_noise = kernel_params[gp_.noise_index()];
  log_noise = std::clamp(log_noise, -30.0, 5.0);
  double& mean = kernel_params[gp_.mean_index()];
  mean = std::clamp(mean, -10.0, 10.0);
}

absl::Status DeepPipeModel::ValidateInputs(const Eigen::MatrixXd& X,
                                           const char* what) const {
  if (X.cols() != input_dim()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe ", what, ": inputs have ", X.cols(),
                     " columns, expected ", input_dim()));
  }
  if (!X.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe ", what, ": non-finite inputs"));
  }
  return absl::OkStatus();
}

Eigen::MatrixXd DeepPipeModel::EmbedImpl(const Eigen::MatrixXd& X,
                                         EmbedTrace<double>* trace) const {
  return EmbedWith(encoders_, aggregator_, X, trace);
}

template <typename Scalar>
DeepPipeModel::MatrixT<Scalar> DeepPipeModel::EmbedWith(
    const std::vector<nn::BasicMlp<Scalar>>& encoders,
    const nn::BasicMlp<Scalar>& aggregator, const MatrixT<Scalar>& X,
    EmbedTrace<Scalar>* trace) const {
  using Matrix = MatrixT<Scalar>;
  typename nn::BasicMlp<Scalar>::Trace* aggregator_trace =
      trace != nullptr ? &trace->aggregator_trace : nullptr;
  const Eigen::Index n = X.rows();
  const Eigen::Index t = task_.size();
  const VectorT<Scalar> task = task_.cast<Scalar>();
  if (encoders.empty()) {
    if (t == 0) return aggregator.Forward(X, aggregator_trace);
    Matrix A(n, X.cols() + t);
    A << X, Matrix::Ones(n, 1) * task.transpose();
    return aggregator.Forward(A, aggregator_trace);
  }

  const space::EncodingLayout& layout = structure_->encoder.layout();
  const int num_blocks = static_cast<int>(layout.blocks.size());
  std::vector<std::vector<Eigen::Index>> rows(num_blocks);
  for (size_t s = 0; s < layout.stages.size(); ++s) {
    const space::StageLayout& stage = layout.stages[s];
    const int first = layout.block_start[s];
    for (Eigen::Index r = 0; r < n; ++r) {
      int active = 0;
      if (stage.size > 1) {
        X.row(r).segment(stage.offset, stage.size).maxCoeff(&active);
      }
      rows[first + active].push_back(r);
    }
  }

  Matrix A = Matrix::Zero(n, aggregator.input_dim());
  if (trace != nullptr) trace->encoder_traces.assign(num_blocks, {});
  for (int b = 0; b < num_blocks; ++b) {
    if (rows[b].empty()) continue;
    const space::BlockLayout& block = layout.blocks[b];
    const Eigen::Index m = static_cast<Eigen::Index>(rows[b].size());
    Matrix input;
    if (block.size > 0) {
      input = X(rows[b], Eigen::seqN(block.offset, block.size));
    } else {
      input = Matrix::Ones(m, 1);  // The dummy column.
    }
    const Matrix out = encoders[b].Forward(
        input, trace != nullptr ? &trace->encoder_traces[b] : nullptr);
    A(rows[b],
      Eigen::seqN(slot_offsets_[block.stage], slot_widths_[block.stage])) = out;
  }
  if (trace != nullptr) trace->rows = std::move(rows);
  if (t > 0) A.rightCols(t) = Matrix::Ones(n, 1) * task.transpose();
  return aggregator.Forward(A, aggregator_trace);
}

template <typename Scalar>
void DeepPipeModel::BackwardNetwork(
    const std::vector<nn::BasicMlp<Scalar>>& encoders,
    const nn::BasicMlp<Scalar>& aggregator, const EmbedTrace<Scalar>& trace,
    const MatrixT<Scalar>& dZ, Eigen::Ref<VectorT<Scalar>> grad) const {
  using Matrix = MatrixT<Scalar>;
  int offset = 0;
  std::vector<int> encoder_offsets(encoders.size());
  for (size_t b = 0; b < encoders.size(); ++b) {
    encoder_offsets[b] = offset;
    offset += encoders[b].num_parameters();
  }
  Matrix dA;
  aggregator.Backward(trace.aggregator_trace, dZ,
                      grad.segment(offset, aggregator.num_parameters()),
                      encoders.empty() ? nullptr : &dA);
  if (encoders.empty()) return;
  const space::EncodingLayout& layout = structure_->encoder.layout();
  for (size_t b = 0; b < encoders.size(); ++b) {
    if (trace.rows[b].empty()) continue;
    const space::BlockLayout& block = layout.blocks[b];
    const Matrix dOut =
        dA(trace.rows[b],
           Eigen::seqN(slot_offsets_[block.stage], slot_widths_[block.stage]));
    encoders[b].Backward(
        trace.encoder_traces[b], dOut,
        grad.segment(encoder_offsets[b], encoders[b].num_parameters()),
        nullptr);
  }
}

absl::StatusOr<Eigen::MatrixXd> DeepPipeModel::Embed(
    const Eigen::MatrixXd& X) const {
  METAOPT_RETURN_IF_ERROR(ValidateInputs(X, "Embed"));
  return EmbedImpl(X, nullptr);
}

absl::StatusOr<DeepPipeLoss> DeepPipeModel::Loss(
    const Eigen::MatrixXd& X, const Eigen::VectorXd& y, double mean_loss_weight,
    NetworkPrecision precision) const {
  METAOPT_RETURN_IF_ERROR(ValidateInputs(X, "Loss"));
  if (y.size() != X.rows() || X.rows() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe Loss: ", X.rows(), " inputs and ", y.size(),
                     " targets (need the same number, at least 1)"));
  }
  if (!(mean_loss_weight >= 0.0) || !std::isfinite(mean_loss_weight)) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe Loss: mean_loss_weight ", mean_loss_weight,
                     " is not finite and >= 0"));
  }
  const bool single = precision == NetworkPrecision::kFloat32;
  EmbedTrace<double> trace;
  EmbedTrace<float> trace_f;
  std::vector<nn::MlpF> encoders_f;
  std::optional<nn::MlpF> aggregator_f;
  Eigen::MatrixXd Z;
  if (single) {
    encoders_f.reserve(encoders_.size());
    for (const nn::Mlp& mlp : encoders_) {
      encoders_f.push_back(mlp.Cast<float>());
    }
    aggregator_f = aggregator_.Cast<float>();
    Z = EmbedWith<float>(encoders_f, *aggregator_f, X.cast<float>(), &trace_f)
            .cast<double>();
  } else {
    Z = EmbedImpl(X, &trace);
  }
  // A conditioned model's GP sees the residual y - Z w: its NLL depends on
  // Z also through the targets, and on w.
  const Eigen::VectorXd m = MeanOfEmbeddings(Z);
  METAOPT_ASSIGN_OR_RETURN(gp::NllResult nll, gp_.NegativeLogMarginalLikelihood(
                                                  Z, y - m,
                                                  /*with_input_gradient=*/true,
                                                  /*float_inverse=*/single));
  const double inv_n = 1.0 / static_cast<double>(X.rows());
  DeepPipeLoss loss;
  loss.value = nll.value * inv_n;
  loss.loo = nll.loo_nll * inv_n;
  loss.gradient = Eigen::VectorXd::Zero(num_parameters());
  loss.gradient.tail(num_kernel_parameters()) = nll.grad_hyper * inv_n;
  Eigen::MatrixXd dZ = nll.grad_inputs * inv_n;
  if (conditioned()) {
    // d loss / d m, then through m = Z w.
    Eigen::VectorXd dm = -nll.grad_targets * inv_n;
    if (mean_loss_weight > 0.0) {
      const int mean_index = num_network_parameters() + gp_.mean_index();
      const double c = gp_.hyperparameters()[gp_.mean_index()];
      const Eigen::VectorXd r = (y - m).array() - c;
      loss.value += mean_loss_weight * r.squaredNorm() * inv_n;
      const Eigen::VectorXd dr = -2.0 * mean_loss_weight * inv_n * r;
      dm += dr;
      loss.gradient[mean_index] += dr.sum();
    }
    dZ.noalias() += dm * mean_weights_.transpose();
    loss.gradient.segment(num_network_parameters() - mean_weights_.size(),
                          mean_weights_.size()) = Z.transpose() * dm;
  }
  if (single) {
    Eigen::VectorXf grad_f = Eigen::VectorXf::Zero(num_network_parameters());
    BackwardNetwork<float>(encoders_f, *aggregator_f, trace_f, dZ.cast<float>(),
                           grad_f);
    loss.gradient.head(num_network_parameters()) += grad_f.cast<double>();
  } else {
    BackwardNetwork<double>(encoders_, aggregator_, trace, dZ, loss.gradient);
  }
  return loss;
}

absl::StatusOr<std::shared_ptr<const DeepPipeSurrogate>>
DeepPipeModel::Posterior(const Eigen::MatrixXd& X,
                         const Eigen::VectorXd& y) const {
  METAOPT_RETURN_IF_ERROR(ValidateInputs(X, "Posterior"));
  METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd Z, Embed(X));
  const gp::Standardization standardization =
      gp::Standardization::FromTargets(y);
  // The GP models the residual of the mean head (in the study's units).
  Eigen::VectorXd residual = y;
  if (conditioned()) residual -= standardization.scale * MeanOfEmbeddings(Z);
  METAOPT_ASSIGN_OR_RETURN(
      gp::GpPosterior posterior,
      gp::GpPosterior::Create(gp_, std::move(Z), residual, standardization));
  return std::make_shared<const DeepPipeSurrogate>(
      std::make_shared<const DeepPipeModel>(*this), std::move(posterior));
}

absl::StatusOr<DeepPipeKernelObjective> DeepPipeKernelObjective::Create(
    const gp::GaussianProcess& gp, const Eigen::MatrixXd& Z,
    const Eigen::VectorXd& y) {
  if (gp.kernel().name() != kKernelName || Z.cols() != gp.input_dim() ||
      Z.rows() != y.size() || Z.rows() == 0 || !Z.allFinite() ||
      !y.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe kernel objective: need a ", kKernelName,
                     " GP over ", gp.input_dim(),
                     " dimensions and as many finite targets as "
                     "embeddings (got ",
                     Z.rows(), " x ", Z.cols(), " and ", y.size(), ")"));
  }
  const Eigen::Index n = Z.rows();
  Eigen::MatrixXd pair_d2(n * (n - 1) / 2, Z.cols());
  Eigen::Index p = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    for (Eigen::Index i = j + 1; i < n; ++i, ++p) {
      pair_d2.row(p) = (Z.row(i) - Z.row(j)).array().square();
    }
  }
  return DeepPipeKernelObjective(std::move(pair_d2), y, gp.noise_floor());
}

absl::StatusOr<DeepPipeLoss> DeepPipeKernelObjective::Evaluate(
    const Eigen::VectorXd& h) const {
  constexpr double kSqrt5 = 2.2360679774997896964;
  constexpr double kLog2Pi = 1.8378770664093454836;
  const Eigen::Index n = y_.size();
  const Eigen::Index z = pair_d2_.cols();
  if (h.size() != z + 3 || !h.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe kernel objective: ", h.size(),
                     " hyperparameters (need ", z + 3, ", finite)"));
  }
  const Eigen::VectorXd inv_l2 = (-2.0 * h.head(z)).array().exp();
  const double scale = std::exp(h[z]);
  const double noise_excess = std::exp(h[z + 1]);
  const double mean = h[z + 2];
  // Matérn-5/2 profile and its derivative w.r.t. r^2 over the pairs.
  const Eigen::ArrayXd r2 = (pair_d2_ * inv_l2).array().max(0.0);
  const Eigen::ArrayXd sr = kSqrt5 * r2.sqrt();
  const Eigen::ArrayXd e = scale * (-sr).exp();
  const Eigen::ArrayXd k = (1.0 + sr + (5.0 / 3.0) * r2) * e;
  const Eigen::ArrayXd dk = (-5.0 / 6.0) * (1.0 + sr) * e;

  Eigen::MatrixXd K(n, n);
  Eigen::Index p = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    K(j, j) = scale + noise_floor_ + noise_excess;
    for (Eigen::Index i = j + 1; i < n; ++i, ++p) K(i, j) = k[p];
  }
  METAOPT_ASSIGN_OR_RETURN(gp::JitteredCholesky chol,
                           gp::CholeskyWithJitter(std::move(K)));
  const auto L = chol.L.triangularView<Eigen::Lower>();
  const Eigen::VectorXd r = y_.array() - mean;
  Eigen::VectorXd alpha = L.solve(r);
  chol.L.transpose().triangularView<Eigen::Upper>().solveInPlace(alpha);
  const Eigen::MatrixXd k_inv = gp::InverseFromCholesky(chol.L);

  const double inv_n = 1.0 / static_cast<double>(n);
  DeepPipeLoss loss;
  loss.value = (0.5 * r.dot(alpha) + chol.L.diagonal().array().log().sum() +
                0.5 * static_cast<double>(n) * kLog2Pi) *
               inv_n;
  // G = 0.5 (K^-1 - alpha alpha'); the kernel gradients need G_ij for the
  // pairs (twice, by symmetry) and the diagonal.
  Eigen::VectorXd w(pair_d2_.rows());
  double grad_scale = 0.0;
  double trace = 0.0;
  double loo = 0.0;
  p = 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    const double c = k_inv(j, j);
    const double g_jj = 0.5 * (c - alpha[j] * alpha[j]);
    trace += g_jj;
    grad_scale += g_jj * scale;
    loo += 0.5 * (kLog2Pi - std::log(c) + alpha[j] * alpha[j] / c);
    for (Eigen::Index i = j + 1; i < n; ++i, ++p) {
      const double g = 0.5 * (k_inv(i, j) - alpha[i] * alpha[j]);
      grad_scale += 2.0 * g * k[p];
      w[p] = 2.0 * g * dk[p];
    }
  }
  loss.gradient.resize(z + 3);
  // d r2_ij / d log l_d = -2 (z_id - z_jd)^2 / l_d^2.
  loss.gradient.head(z) =
      -2.0 * (pair_d2_.transpose() * w).cwiseProduct(inv_l2) * inv_n;
  loss.gradient[z] = grad_scale * inv_n;
  loss.gradient[z + 1] = trace * noise_excess * inv_n;
  loss.gradient[z + 2] = -alpha.sum() * inv_n;
  loss.loo = loo * inv_n;
  return loss;
}

absl::StatusOr<DeepPipeFineTuneResult> DeepPipeModel::FineTune(
    const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
    const DeepPipeFineTuneOptions& options) const {
  const absl::Time start = absl::Now();
  METAOPT_RETURN_IF_ERROR(ValidateInputs(X, "FineTune"));
  if (y.size() != X.rows() || X.rows() == 0 || !y.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("DeepPipe FineTune: ", X.rows(), " inputs and ", y.size(),
                     " targets (need the same number, at least 1, finite)"));
  }
  if (options.max_steps < 0 || options.patience < 0 ||
      !(options.learning_rate > 0.0) || !std::isfinite(options.learning_rate) ||
      !(options.tolerance >= 0.0) || !(options.max_gradient_norm >= 0.0)) {
    return absl::InvalidArgumentError(
        "DeepPipe FineTune: need max_steps >= 0, patience >= 0, a positive "
        "finite learning rate, tolerance >= 0 and max_gradient_norm >= 0");
  }
  const Eigen::VectorXd ys = gp::Standardization::FromTargets(y).Apply(y);
  const bool full = options.scope == FineTuneScope::kFull;
  // The new encoders and the kernel: a subset of parameters() trained
  // through the whole network's loss (NewEncoderObjective).
  const bool subset =
      options.scope == FineTuneScope::kNewEncoders && num_new_encoders() > 0;
  const std::vector<Eigen::Index> trained =
      subset ? NewEncoderParameterIndices() : std::vector<Eigen::Index>();
  const int kp = num_kernel_parameters();

  Eigen::VectorXd all = parameters();
  Eigen::VectorXd p = full     ? all
                      : subset ? Eigen::VectorXd(all(trained))
                               : Eigen::VectorXd(all.tail(kp));
  DeepPipeModel work = *this;
  std::optional<DeepPipeKernelObjective> kernel_objective;
  std::function<absl::StatusOr<DeepPipeLoss>(const Eigen::VectorXd&)>
      new_encoder_objective;
  if (subset) new_encoder_objective = NewEncoderObjective(X, ys);
  if (!full && !subset) {
    const Eigen::MatrixXd Z_fixed = EmbedImpl(X, nullptr);
    METAOPT_ASSIGN_OR_RETURN(kernel_objective,
                             DeepPipeKernelObjective::Create(
                                 gp_, Z_fixed, ys - MeanOfEmbeddings(Z_fixed)));
  }

  // Loss and gradient w.r.t. p.
  auto evaluate =
      [&](const Eigen::VectorXd& q) -> absl::StatusOr<DeepPipeLoss> {
    if (full) {
      METAOPT_RETURN_IF_ERROR(work.set_parameters(q));
      return work.Loss(X, ys);
    }
    if (subset) return new_encoder_objective(q);
    return kernel_objective->Evaluate(q);
  };

  METAOPT_ASSIGN_OR_RETURN(DeepPipeLoss current, evaluate(p));
  DeepPipeFineTuneResult result{*this};
  result.loss_before = current.value;
  double best = current.value;
  Eigen::VectorXd best_p = p;
  double previous = current.value;
  int calm = 0;
  nn::Adam adam(static_cast<int>(p.size()));
  while (result.steps_run < options.max_steps) {
    if (absl::Now() - start >= options.time_budget) break;
    nn::ClipGradientNorm(current.gradient, options.max_gradient_norm);
    adam.Step(current.gradient, options.learning_rate, p);
    ClampKernelParameters(p.tail(kp));
    ++result.steps_run;
    absl::StatusOr<DeepPipeLoss> next = evaluate(p);
    if (!next.ok() || !std::isfinite(next->value)) break;
    current = *std::move(next);
    if (current.value < best) {
      best = current.value;
      best_p = p;
    }
    if (options.patience > 0) {
      calm =
          std::abs(current.value - previous) < options.tolerance ? calm + 1 : 0;
      if (calm > options.patience) {
        result.early_stopped = true;
        break;
      }
    }
    previous = current.value;
  }
  if (full) {
    all = best_p;
  } else if (subset) {
    all(trained) = best_p;
  } else {
    all.tail(kp) = best_p;
  }
  METAOPT_RETURN_IF_ERROR(result.model.set_parameters(all));
  result.loss_after = best;
  result.elapsed = absl::Now() - start;
  return result;
}

std::string DeepPipeModel::EncoderPrefix(int block) const {
  const space::BlockLayout& b = structure_->encoder.layout().blocks[block];
  const v1::Stage& stage = structure_->proto.stages(b.stage);
  return absl::StrCat("encoder.", stage.name(), ".",
                      stage.algorithms(b.algorithm).name());
}

std::vector<v1::Tensor> DeepPipeModel::ToArtifactTensors() const {
  std::vector<v1::Tensor> tensors;
  for (size_t b = 0; b < encoders_.size(); ++b) {
    encoders_[b].AppendTensors(EncoderPrefix(static_cast<int>(b)), &tensors);
  }
  aggregator_.AppendTensors(kAggregatorPrefix, &tensors);
  if (conditioned()) {
    tensors.push_back(nn::MakeTensor(
        kMeanHead, {static_cast<int>(mean_weights_.size())}, mean_weights_));
  }
  const Eigen::VectorXd h = gp_.hyperparameters();
  const int z = architecture_.embedding;
  tensors.push_back(nn::MakeTensor(kLogLengthscales, {z}, h.head(z)));
  tensors.push_back(nn::MakeTensor(kLogOutputScale, {1}, h.segment(z, 1)));
  tensors.push_back(
      nn::MakeTensor(kLogNoise, {1}, h.segment(gp_.noise_index(), 1)));
  tensors.push_back(nn::MakeTensor(kMean, {1}, h.segment(gp_.mean_index(), 1)));
  return tensors;
}

void DeepPipeModel::ToArtifact(v1::ModelArtifact* artifact) const {
  artifact->set_kind(v1::MODEL_KIND_DEEPPIPE);
  *artifact->mutable_search_space() = structure_->proto;
  artifact->clear_tensors();
  for (v1::Tensor& t : ToArtifactTensors()) {
    *artifact->add_tensors() = std::move(t);
  }
  auto& ints = *artifact->mutable_int_options();
  ints.clear();
  ints["encoder_layers"] = architecture_.encoder_layers;
  ints["aggregation_layers"] = architecture_.aggregation_layers;
  ints["width_factor"] = architecture_.width_factor;
  ints["hidden"] = architecture_.hidden;
  ints["embedding"] = architecture_.embedding;
  ints["input_dim"] = input_dim();
  ints["task_features"] = task_features().size();
  auto& norm = *artifact->mutable_normalization();
  norm.clear();
  norm["noise_floor"] = gp_.noise_floor();
  norm["target_standardization"] = 1.0;
  task_features().WriteTo(&norm);
}

absl::StatusOr<DeepPipeModel> DeepPipeModel::FromArtifact(
    const v1::ModelArtifact& artifact) {
  if (artifact.kind() != v1::MODEL_KIND_DEEPPIPE) {
    return absl::InvalidArgumentError(
        absl::StrCat("artifact.kind: ", v1::ModelKind_Name(artifact.kind()),
                     ", expected MODEL_KIND_DEEPPIPE"));
  }
  DeepPipeArchitecture arch;
  METAOPT_ASSIGN_OR_RETURN(
      arch.encoder_layers,
      nn::ReadIntOption(artifact, "encoder_layers", 0, kMaxEncoderLayers));
  METAOPT_ASSIGN_OR_RETURN(arch.aggregation_layers,
                           nn::ReadIntOption(artifact, "aggregation_layers", 1,
                                             kMaxAggregationLayers));
  METAOPT_ASSIGN_OR_RETURN(
      arch.width_factor,
      nn::ReadIntOption(artifact, "width_factor", 1, kMaxWidthFactor));
  METAOPT_ASSIGN_OR_RETURN(
      arch.hidden, nn::ReadIntOption(artifact, "hidden", 1, kMaxHidden));
  METAOPT_ASSIGN_OR_RETURN(
      arch.embedding,
      nn::ReadIntOption(artifact, "embedding", 1, kMaxEmbedding));
  double noise_floor = kNoiseFloor;
  if (auto it = artifact.normalization().find("noise_floor");
      it != artifact.normalization().end()) {
    noise_floor = it->second;
  }
  METAOPT_ASSIGN_OR_RETURN(FeatureScaler task_features,
                           FeatureScaler::ReadFrom(artifact.normalization()));
  // Artifacts older than conditioning have no "task_features" option.
  if (artifact.int_options().contains("task_features")) {
    METAOPT_ASSIGN_OR_RETURN(
        int count,
        nn::ReadIntOption(artifact, "task_features", task_features.size(),
                          task_features.size()));
    (void)count;
  } else if (!task_features.empty()) {
    return absl::InvalidArgumentError(
        "artifact.int_options[\"task_features\"]: missing, but "
        "artifact.normalization holds meta-feature statistics");
  }
  METAOPT_ASSIGN_OR_RETURN(DeepPipeModel model,
                           Build(artifact.search_space(), arch, noise_floor,
                                 std::move(task_features)));
  METAOPT_ASSIGN_OR_RETURN(
      int input_dim, nn::ReadIntOption(artifact, "input_dim", model.input_dim(),
                                       model.input_dim()));
  (void)input_dim;

  METAOPT_ASSIGN_OR_RETURN(nn::TensorMap tensors,
                           nn::IndexTensors(artifact.tensors()));
  const std::vector<v1::Tensor> expected = model.ToArtifactTensors();
  absl::flat_hash_set<std::string> expected_names;
  for (const v1::Tensor& t : expected) expected_names.insert(t.name());
  for (const v1::Tensor& t : artifact.tensors()) {
    if (!expected_names.contains(t.name())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact.tensors: unexpected tensor \"", t.name(), "\""));
    }
  }
  for (size_t b = 0; b < model.encoders_.size(); ++b) {
    METAOPT_RETURN_IF_ERROR(model.encoders_[b].ReadTensors(
        model.EncoderPrefix(static_cast<int>(b)), tensors));
  }
  METAOPT_RETURN_IF_ERROR(
      model.aggregator_.ReadTensors(kAggregatorPrefix, tensors));
  const int z = arch.embedding;
  if (model.conditioned()) {
    METAOPT_ASSIGN_OR_RETURN(model.mean_weights_,
                             nn::ReadTensor(tensors, kMeanHead, {z}));
  }
  Eigen::VectorXd h(model.num_kernel_parameters());
  METAOPT_ASSIGN_OR_RETURN(h.head(z),
                           nn::ReadTensor(tensors, kLogLengthscales, {z}));
  METAOPT_ASSIGN_OR_RETURN(h.segment(z, 1),
                           nn::ReadTensor(tensors, kLogOutputScale, {1}));
  METAOPT_ASSIGN_OR_RETURN(h.segment(model.gp_.noise_index(), 1),
                           nn::ReadTensor(tensors, kLogNoise, {1}));
  METAOPT_ASSIGN_OR_RETURN(h.segment(model.gp_.mean_index(), 1),
                           nn::ReadTensor(tensors, kMean, {1}));
  METAOPT_RETURN_IF_ERROR(model.gp_.set_hyperparameters(h));
  return model;
}

absl::StatusOr<gp::Prediction> DeepPipeSurrogate::Predict(
    const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd Z, model_->Embed(X));
  return PredictEmbedded(Z);
}

absl::StatusOr<gp::Prediction> DeepPipeSurrogate::PredictEmbedded(
    const Eigen::MatrixXd& Z) const {
  METAOPT_ASSIGN_OR_RETURN(gp::Prediction prediction, posterior_.Predict(Z));
  if (model_->conditioned()) {
    prediction.mean +=
        posterior_.standardization().scale * model_->MeanOfEmbeddings(Z);
  }
  return prediction;
}

absl::StatusOr<std::optional<gp::Prediction>>
DeepPipeSurrogate::PredictEmbeddedScreening(const Eigen::MatrixXd& Z) const {
  const int points = ScreeningPoints(posterior_.num_points());
  if (points == 0) return std::nullopt;
  METAOPT_ASSIGN_OR_RETURN(gp::Prediction prediction,
                           posterior_.PredictWithVarianceBound(Z, points));
  if (model_->conditioned()) {
    prediction.mean +=
        posterior_.standardization().scale * model_->MeanOfEmbeddings(Z);
  }
  return prediction;
}

absl::StatusOr<std::optional<gp::Prediction>>
DeepPipeSurrogate::PredictEmbeddedCatalogueScreening(
    const Eigen::MatrixXd& catalogue, const std::vector<int>& rows,
    gp::CatalogueKernelCache& cache) const {
  const int points = ScreeningPoints(posterior_.num_points());
  if (points == 0) return std::nullopt;
  METAOPT_ASSIGN_OR_RETURN(
      gp::Prediction prediction,
      posterior_.PredictWithVarianceBound(catalogue, rows, points, cache));
  if (model_->conditioned()) {
    prediction.mean += posterior_.standardization().scale *
                       model_->MeanOfEmbeddings(RowsOf(catalogue, rows));
  }
  return prediction;
}

absl::StatusOr<std::shared_ptr<const DeepPipeSurrogate>>
DeepPipeSurrogate::WithEmbeddedFantasies(const Eigen::MatrixXd& Z) const {
  if (Z.rows() == 0) {
    return std::make_shared<const DeepPipeSurrogate>(model_, posterior_);
  }
  // Fantasies take the posterior mean, so the residual GP conditions on its
  // own mean: the mean head's part needs no adjustment.
  METAOPT_ASSIGN_OR_RETURN(gp::GpPosterior conditioned,
                           posterior_.WithFantasies(Z));
  return std::make_shared<const DeepPipeSurrogate>(model_,
                                                   std::move(conditioned));
}

absl::StatusOr<std::unique_ptr<const Surrogate>>
DeepPipeEmbeddedSurrogate::WithFantasies(const Eigen::MatrixXd& Z) const {
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<const DeepPipeSurrogate> conditioned,
                           surrogate_->WithEmbeddedFantasies(Z));
  return std::make_unique<const DeepPipeEmbeddedSurrogate>(
      std::move(conditioned));
}

absl::StatusOr<std::unique_ptr<const Surrogate>>
DeepPipeSurrogate::WithFantasies(const Eigen::MatrixXd& X) const {
  METAOPT_ASSIGN_OR_RETURN(Eigen::MatrixXd Z, model_->Embed(X));
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<const DeepPipeSurrogate> conditioned,
                           WithEmbeddedFantasies(Z));
  return std::make_unique<const DeepPipeSurrogate>(*conditioned);
}

}  // namespace metaopt::surrogate
