// Dida, the distribution-based invariant network of "Distribution-Based
// Invariant Deep Networks for Learning Meta-Features" (De Bie, Rakotoarison,
// Peyré and Sebag; Chapter 5 of Rakotoarison's thesis "Some contributions to
// AutoML"): a meta-feature extractor over a raw dataset sample z = (x_i,
// y_i), i = 1..n, invariant to permutations of rows, features and classes and
// agnostic to the number of rows and features.
//
// The first invariant layer (Eqs. 5.1, 5.4-5.6) averages a pairwise
// interaction over the rows:
//
//   h1_i = 1/n sum_j v( sum_k u(x_ik, x_jk, y_i, y_j) ),
//   u = (relu(A_u [x_ik; x_jk] + b_u), c(y_i, y_j)),   v = relu(A_v . + b_v),
//
// with the label contrast c = 1_{y_i != y_j} for one-hot class targets. An
// optional second invariant layer (the chapter's 2L-Dida) is
// h2_i = 1/n sum_j relu(A_2 [h1_i; h1_j] + b_2). The rows are then averaged
// and three fully connected layers (ReLU, ReLU, linear) give the
// meta-features F(z).
//
// Deviations: c is 1/2 ||y_i - y_j||_1, which is 1_{y_i != y_j} for one-hot
// rows and |y_i - y_j| for a standardised regression target (the chapter only
// has classes); the meta-features are the last layer's output because the
// patch-identification classifier exp(-||F(z) - F(z')||^2) is the
// parameter-free head on top of them (the chapter's "penultimate layer" with
// the classifier as the last). Pairs cost O(n^2 m) per sample (the chapter's
// cost too; samples have at most 256 rows).
//
// Flat parameters: [u, v, second layer (if any), head], each nn::Mlp's layout;
// tensors "<prefix>.{u,v,l2,head}.layer<k>.{weight,bias}".
#ifndef METAOPT_CORE_SURROGATE_DIDA_H_
#define METAOPT_CORE_SURROGATE_DIDA_H_

#include <map>
#include <string>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/nn/mlp.h"
#include "core/nn/tensor_io.h"
#include "core/space/random.h"
#include "core/surrogate/dataset2vec.h"
#include "metaopt/v1/model.pb.h"

namespace metaopt::surrogate {

struct DidaArchitecture {
  int pair_width = 16;    // t: u's width
  int interaction = 32;   // r: v's width (the first layer's output)
  int second_layer = 32;  // the second invariant layer's width; 0: none
  int hidden = 64;        // the first two fully connected layers
  int output = 16;        // the meta-features
};

// A plain copyable value; const methods are thread-safe.
class Dida {
 public:
  // The activations of one forward pass, kept for Backward.
  struct Trace {
    Eigen::MatrixXd x;         // n x m
    nn::Mlp::Trace v;          // over the n^2 pairs, row i n + j
    Eigen::MatrixXd h1;        // n x r
    Eigen::MatrixXd g;         // n^2 x second_layer (relu outputs)
    nn::Mlp::Trace head;
  };

  // INVALID_ARGUMENT for a width out of [1, 1024] (second_layer: [0, 1024]).
  static absl::StatusOr<Dida> Create(const DidaArchitecture& architecture,
                                     space::Rng& rng);

  // F(sample) (output() entries); fills `trace` if not null.
  Eigen::VectorXd Forward(const RawSample& sample,
                          Trace* trace = nullptr) const;
  // Adds dL/d(parameters) to `grad` (num_parameters() entries) given dL/dF.
  void Backward(const Trace& trace, const Eigen::VectorXd& d_output,
                Eigen::Ref<Eigen::VectorXd> grad) const;

  int output() const { return architecture_.output; }
  int num_parameters() const;
  void GetParameters(Eigen::Ref<Eigen::VectorXd> out) const;
  void SetParameters(const Eigen::Ref<const Eigen::VectorXd>& params);
  const DidaArchitecture& architecture() const { return architecture_; }

  // Tensors "<prefix>.{u,v,l2,head}.layer<k>.{weight,bias}" and int_options
  // "<prefix>_{pair_width,interaction,second_layer,hidden,output}".
  void Write(const std::string& prefix, v1::ModelArtifact* artifact) const;
  // Reads what Write wrote; INVALID_ARGUMENT naming the option or tensor.
  static absl::StatusOr<Dida> Read(const std::string& prefix,
                                   const v1::ModelArtifact& artifact);

 private:
  Dida(DidaArchitecture architecture, nn::Mlp u, nn::Mlp v, nn::Mlp l2,
       nn::Mlp head)
      : architecture_(architecture),
        u_(std::move(u)),
        v_(std::move(v)),
        l2_(std::move(l2)),
        head_(std::move(head)) {}

  DidaArchitecture architecture_;
  nn::Mlp u_;     // 2 -> t (its weights; the pairs are formed by Forward)
  nn::Mlp v_;     // t + 1 -> r, ReLU
  nn::Mlp l2_;    // 2 r -> second_layer (no layers without one)
  nn::Mlp head_;  // -> hidden -> hidden -> output
};

// The prefix of a served extractor's tensors and options in an artifact.
inline constexpr char kDidaPrefix[] = "dida";

// F(sample) by meta-feature name: "dida_0", "dida_1", ...
std::map<std::string, double> DidaFeatures(const Dida& dida,
                                           const RawSample& sample);

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_DIDA_H_
