// Encoding of canonical configurations as points of the unit cube, the input of
// the GP kernels and of DeepPipe's per-algorithm encoders, and the way back for
// acquisition optimizers.
#ifndef METAOPT_CORE_SPACE_ENCODING_H_
#define METAOPT_CORE_SPACE_ENCODING_H_

#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/container/flat_hash_map.h"
#include "core/space/random.h"
#include "core/space/search_space.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::space {

// The dimensions of one algorithm's parameters: [offset, offset + size) of the
// encoded vector.
struct BlockLayout {
  int stage;
  int algorithm;
  int offset;
  int size;
};

// The dimensions of one parameter inside its algorithm's block (absolute
// offsets): 1 for a number, the number of values for a categorical (one-hot in
// declaration order).
struct ParameterLayout {
  int stage;
  int algorithm;
  int parameter;
  int offset;
  int size;
};

// The one-hot of a stage's chosen algorithm (size = number of algorithms, even
// when that is 1).
struct StageLayout {
  int stage;
  int offset;
  int size;
};

// Where everything lives in an encoded vector. Stage by stage: the blocks of
// the stage's algorithms in declaration order, then the stage's one-hot.
// Indices are declaration indices in the space.
struct EncodingLayout {
  std::vector<BlockLayout> blocks;  // (stage, algorithm) in declaration order.
  std::vector<ParameterLayout>
      parameters;  // (stage, algorithm, parameter) in declaration order.
  std::vector<StageLayout> stages;  // One per stage.
  std::vector<int>
      block_start;  // Index into `blocks` of each stage's first algorithm.
  int dimension = 0;

  // The block of algorithm `algorithm` of stage `stage`.
  const BlockLayout& block(int stage, int algorithm) const {
    return blocks[block_start[stage] + algorithm];
  }
};

// Maps canonical configurations of a search space to vectors in [0,
// 1]^dimension and back:
//   numeric parameter -> one dimension, (x - low) / (high - low), on log10
//   scale where declared,
//                        integers by their value; 0.5 when low == high;
//   categorical       -> one-hot over its values;
//   inactive algorithms (not chosen in their stage) -> their whole block is
//   zero; each stage        -> one-hot of its chosen algorithm.
// Immutable after construction; thread-safe.
class Encoder {
 public:
  // Probabilities used by Neighbor().
  static constexpr double kSwitchAlgorithmProbability =
      0.1;  // Per stage with >= 2 algorithms.
  static constexpr double kFlipCategoryProbability =
      0.2;  // Per categorical with >= 2 values.

  explicit Encoder(const SearchSpace& space);

  const EncodingLayout& layout() const { return layout_; }
  int dimension() const { return layout_.dimension; }

  // The encoding of `canonical` (as returned by
  // SearchSpace::Canonicalize/Sample, Decode or Neighbor). Names not in the
  // space contribute nothing; out-of-domain numbers are clamped.
  Eigen::VectorXd Encode(const v1::Configuration& canonical) const;

  // One row per configuration.
  Eigen::MatrixXd EncodeBatch(
      const std::vector<v1::Configuration>& canonical) const;

  // The canonical configuration nearest to `x` (dimension() entries): per stage
  // the algorithm with the largest one-hot entry, numbers unscaled from [0, 1]
  // (clamped; NaN reads as 0.5) with integers rounded, categoricals by their
  // largest entry (ties: the first). Decode(Encode(c)) == c up to
  // floating-point rounding of non-integer numbers.
  v1::Configuration Decode(const Eigen::VectorXd& x) const;

  // A random configuration near `canonical`, for local search of the
  // acquisition function. Stage by stage: with probability
  // kSwitchAlgorithmProbability (stages with several algorithms only) the stage
  // switches to another algorithm, uniformly chosen, whose parameters are
  // sampled fresh as in SearchSpace::Sample. Otherwise every numeric parameter
  // moves by a N(0, step_sd^2) step in its encoded [0, 1] coordinate (clamped
  // to the cube; integers rounded) and every categorical with several values
  // flips, with probability kFlipCategoryProbability, to another value
  // uniformly chosen. The result is canonical; it may equal `canonical`.
  v1::Configuration Neighbor(const v1::Configuration& canonical, double step_sd,
                             Rng& rng) const;

 private:
  enum class Kind { kFloat, kInt, kCategorical };
  struct ParameterInfo {
    std::string name;
    Kind kind;
    double low = 0;  // Numeric only.
    double high = 0;
    bool log = false;
    std::vector<std::string> values;  // Categorical only.
    absl::flat_hash_map<std::string, int> value_index;
    int offset = 0;
  };
  struct AlgorithmInfo {
    std::string name;
    std::vector<ParameterInfo> parameters;
    int offset = 0;
    int size = 0;
  };
  struct StageInfo {
    std::string name;
    std::vector<AlgorithmInfo> algorithms;
    absl::flat_hash_map<std::string, int> algorithm_index;
    int one_hot_offset = 0;
  };

  // Numbers to and from their [0, 1] coordinate.
  static double ToUnit(const ParameterInfo& p, double x);
  static double FromUnit(const ParameterInfo& p, double u);

  // Writes the chosen algorithm's block and the stage one-hot of `assignment`
  // into `out`.
  void EncodeAssignment(const StageInfo& stage,
                        const v1::Assignment& assignment,
                        Eigen::Ref<Eigen::VectorXd> out) const;
  // Fills `assignment` with algorithm `a` of `stage` and freshly sampled
  // parameters.
  void SampleAlgorithm(const StageInfo& stage, int a, Rng& rng,
                       v1::Assignment* assignment) const;

  SearchSpace space_;
  std::vector<StageInfo> stages_;
  absl::flat_hash_map<std::string, int> stage_index_;
  EncodingLayout layout_;
};

}  // namespace metaopt::space

#endif  // METAOPT_CORE_SPACE_ENCODING_H_
