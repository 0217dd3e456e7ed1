// The Dataset2Vec meta-feature extractor ("Dataset2Vec: Learning Dataset
// Meta-Features", Jomaa, Schmidt-Thieme and Grabocka, §3; the phi of
// "Zero-shot Transfer Learning for Gray-box Hyper-parameter Optimization",
// Eq. 4): a dataset (x: n x m features, y: n x c targets) is a set of sets of
// scalar pairs (x_im, y_ic), and
//
//   D2V(x, y) = h( 1/(m c) sum_{j,k} g( 1/n sum_i f(x_ij, y_ik) ) )
//
// with f: R^2 -> R^Kf, g: R^Kf -> R^Kg, h: R^Kg -> R^K. Two mean-pools (over
// rows for every (feature, target) pair, then over the pairs) make it
// invariant to permutations of rows, columns and targets and independent of
// the schema's size. f and g are ReLU networks (ReLU on their outputs too), h
// ends linear. Deviation: the paper's f and h stack residual blocks of width
// 16-32 (f: Dense, 6-8 residual blocks of 3 layers, Dense); ours are plain
// ReLU MLPs of `f_layers` / `g_layers` / `h_layers` layers, because f runs on
// up to 256 x 16 x 3 = 12288 pairs per dataset on a CPU.
//
// Parameters are flattened as [f, g, h] (nn::Mlp layout); tensors
// "<prefix>.f.layer<k>.*", "<prefix>.g.*", "<prefix>.h.*".
#ifndef METAOPT_CORE_SURROGATE_DATASET2VEC_H_
#define METAOPT_CORE_SURROGATE_DATASET2VEC_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/nn/mlp.h"
#include "core/nn/tensor_io.h"
#include "core/space/random.h"
#include "metaopt/v1/model.pb.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::surrogate {

// A raw dataset sample: x (n x m) and y (n x c), n, m, c >= 1.
struct RawSample {
  Eigen::MatrixXd x;
  Eigen::MatrixXd y;
};

// The sample of a v1::DatasetSample (validated by
// space::ValidateDatasetSample; INVALID_ARGUMENT if it is inconsistent).
// Feature values are clipped to [-kSampleClip, kSampleClip] (clients send
// standardised values, so this only tames outliers).
inline constexpr double kSampleClip = 10.0;
absl::StatusOr<RawSample> RawSampleFromProto(const v1::DatasetSample& sample);

// A random sub-batch of `sample`: min(rows, n) rows and min(columns, m)
// columns, each drawn without replacement, all targets (the paper's training
// batches; two of the same dataset are a positive pair).
RawSample SubSample(const RawSample& sample, int rows, int columns,
                    space::Rng& rng);

struct Dataset2VecArchitecture {
  int f_width = 32;
  int f_layers = 3;  // 2 -> f_width x (f_layers - 1) -> g_input
  int g_width = 32;
  int g_layers = 2;
  int h_width = 32;
  int h_layers = 2;
  int output = 16;  // K
};

// A plain copyable value; const methods are thread-safe.
class Dataset2Vec {
 public:
  // The activations of one forward pass, kept for Backward.
  struct Trace {
    int n = 0;
    int pairs = 0;  // m c
    nn::Mlp::Trace f, g, h;
  };

  // INVALID_ARGUMENT for widths or layer counts out of [1, 1024] / [1, 8].
  static absl::StatusOr<Dataset2Vec> Create(
      const Dataset2VecArchitecture& architecture, space::Rng& rng);

  // D2V(sample) (output() entries); fills `trace` if not null.
  Eigen::VectorXd Forward(const RawSample& sample,
                          Trace* trace = nullptr) const;
  // Adds dL/d(parameters) to `grad` (num_parameters() entries) given dL/dD2V.
  void Backward(const Trace& trace, const Eigen::VectorXd& d_output,
                Eigen::Ref<Eigen::VectorXd> grad) const;

  int output() const { return architecture_.output; }
  int num_parameters() const;
  void GetParameters(Eigen::Ref<Eigen::VectorXd> out) const;
  void SetParameters(const Eigen::Ref<const Eigen::VectorXd>& params);
  const Dataset2VecArchitecture& architecture() const { return architecture_; }

  // Tensors "<prefix>.{f,g,h}.layer<k>.{weight,bias}" and int_options
  // "<prefix>_{f,g,h}_{width,layers}", "<prefix>_output".
  void Write(const std::string& prefix, v1::ModelArtifact* artifact) const;
  // Reads what Write wrote; INVALID_ARGUMENT naming the option or tensor.
  static absl::StatusOr<Dataset2Vec> Read(const std::string& prefix,
                                          const v1::ModelArtifact& artifact,
                                          const nn::TensorMap& tensors);

 private:
  Dataset2Vec(Dataset2VecArchitecture architecture, nn::Mlp f, nn::Mlp g,
              nn::Mlp h)
      : architecture_(architecture),
        f_(std::move(f)),
        g_(std::move(g)),
        h_(std::move(h)) {}

  Dataset2VecArchitecture architecture_;
  nn::Mlp f_, g_, h_;
};

// A task design's Dataset2Vec extractor (registry/task_design.h): its
// feature_source and meta-feature names "d2v_0", "d2v_1", ... (kD2vSource),
// and the prefix of its tensors and options in the artifact (not GROSI's own
// "d2v", so that a design can sit on a GROSI model with an extractor).
inline constexpr char kD2vSource[] = "d2v";
inline constexpr char kDesignD2vPrefix[] = "design_d2v";

// Meta-features by name: {"<prefix>_k": f(k)}.
std::map<std::string, double> NamedMetaFeatures(const std::string& prefix,
                                                const Eigen::VectorXd& f);

// D2V(sample) by meta-feature name: "d2v_0", "d2v_1", ...
std::map<std::string, double> Dataset2VecFeatures(const Dataset2Vec& d2v,
                                                  const RawSample& sample);

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_DATASET2VEC_H_
