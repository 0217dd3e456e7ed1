// Partial binding (docs/algorithms.md): a meta-learned DeepPipe serving a
// study whose space masks, narrows or adds algorithms (ForStudySpace), and the
// objective FineTuneScope::kNewEncoders trains, which moves only the encoders
// ForStudySpace added and the GP hyperparameters and equals Loss bit for bit
// on those entries.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/space/random.h"
#include "core/surrogate/deeppipe_model.h"

namespace metaopt::surrogate {

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

}  // namespace metaopt::surrogate
