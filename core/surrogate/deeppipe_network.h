// The DeepPipe network ("Deep Pipeline Embeddings for AutoML", Pineda Arango &
// Grabocka, KDD 2023): its shape, and the limits every DeepPipeModel keeps.
// deeppipe_network.cc builds the network (DeepPipeModel::Create) and runs it
// forward (Embed) and backward (the parameter gradients Loss needs).
//
//   x (space::Encoder row) --per stage i, per algorithm j--> encoder MLP
//   xi_ij over the block of algorithm j (ReLU after every layer, width F*L_i,
//   L_i = max_j max(1, block size)); only the stage's chosen algorithm's
//   output is kept (the others are masked to exactly zero, so they get zero
//   gradient) --concatenate over stages--> aggregator MLP (ReLU hidden
//   layers of width H = max(F * sum_i L_i, 24), linear output) --> z in R^Z
//   --> GP with a Matérn-5/2 ARD kernel (Z lengthscales, output scale),
//   constant mean and Gaussian noise (floor 1e-4, as the authors' code);
//   FSBO's GP (DeepKernelGp::kFsbo) instead.
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
#ifndef METAOPT_CORE_SURROGATE_DEEPPIPE_NETWORK_H_
#define METAOPT_CORE_SURROGATE_DEEPPIPE_NETWORK_H_

#include <cstdint>

namespace metaopt::surrogate {

// The GP over the embeddings.
enum class DeepKernelGp {
  // DeepPipe's: Matérn-5/2 ARD, a learned constant mean, targets standardised
  // by their mean and standard deviation (MODEL_KIND_DEEPPIPE artifacts).
  kDeepPipe,
  // FSBO's ("Few-Shot Bayesian Optimization with Deep Kernel Surrogates",
  // Wistuba & Grabocka, ICLR 2021): squared-exponential ARD, zero mean (the
  // mean parameter is held at 0), targets as given (the paper normalises no
  // target task: task augmentation taught the kernel offsets and ranges)
  // (MODEL_KIND_FSBO artifacts).
  kFsbo,
};

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
  DeepKernelGp gp = DeepKernelGp::kDeepPipe;
};

// FSBO's deep kernel: a plain MLP over the encoded configuration, d_in -> 128
// (ReLU) -> 128 (linear), and kFsbo's GP ("two-layer neural network (128 ->
// 128) with ReLU activations and a squared-exponential kernel").
DeepPipeArchitecture FsboArchitecture();

namespace deeppipe_internal {

// Limits that keep a (possibly hostile) artifact from allocating absurd
// networks: DeepPipeModel::Create enforces them, FromArtifact reads within
// them.
inline constexpr int kMaxEncoderLayers = 8;
inline constexpr int kMaxAggregationLayers = 16;
inline constexpr int kMaxWidthFactor = 256;
inline constexpr int kMaxHidden = 8192;
inline constexpr int kMaxEmbedding = 1024;
inline constexpr int64_t kMaxNetworkParameters = int64_t{1} << 26;

// The GP kernel over embeddings (gp::GaussianProcess's name for it).
inline constexpr char kKernelName[] = "matern52";
inline constexpr char kFsboKernelName[] = "rbf";

}  // namespace deeppipe_internal
}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_DEEPPIPE_NETWORK_H_
