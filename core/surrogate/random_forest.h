// RandomForest: a regression random forest over encoded configurations, the
// surrogate of SMAC and of Mosaic (H. Rakotoarison's thesis "Contributions to
// AutoML: hyper-parameter optimization and meta-learning", §4.3.1:
// "Mosaic shares the hyper-parameters of SMAC").
#ifndef METAOPT_CORE_SURROGATE_RANDOM_FOREST_H_
#define METAOPT_CORE_SURROGATE_RANDOM_FOREST_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::surrogate {

// Defaults are SMAC's random forest (SMAC3 RandomForestWithInstances, the
// settings Mosaic shares): 10 trees, bootstrap, 5/6 of the features tried per
// split, at least 3 samples to split and 3 per leaf.
struct RandomForestOptions {
  int num_trees = 10;
  // Each tree sees n rows drawn with replacement (false: all rows once).
  bool bootstrap = true;
  // Features tried per split (mtry) = max(1, ceil(ratio * dimension)). When
  // none of them splits validly, the remaining features are tried too (as
  // scikit-learn does), so a tree only stops where no feature can split.
  double max_features_ratio = 5.0 / 6.0;
  int min_samples_split = 3;
  int min_samples_leaf = 3;
  int max_depth = 64;
  // Leaves whose target variance is below this are not split further.
  double min_impurity = 1e-12;
  uint64_t seed = 0;
};

// A fitted forest. Predict gives, at each row, the mean over trees of the leaf
// means and the variance by the law of total variance over the trees' leaves:
//
//   mean     = (1/T) sum_t m_t,
//   variance = (1/T) sum_t v_t + (1/T) sum_t (m_t - mean)^2,
//
// where m_t and v_t are the mean and (population) variance of the training
// targets in the leaf of tree t that holds the row (bootstrap duplicates
// counted). The first term is the spread of the data the leaves pooled, the
// second the disagreement between trees; both grow where the forest has little
// or conflicting data. Unlike the public Mosaic code (which called the whole
// forest inside its per-tree loop, so sigma was always 0) this variance is
// real.
//
// Deterministic: the same data, options and seed give the same forest on every
// platform (space::Rng draws only). Immutable and thread-safe.
class RandomForest final : public Surrogate {
 public:
  // Fits on rows of X (finite) with targets y. INVALID_ARGUMENT for no rows,
  // mismatched sizes, non-finite values or options out of range.
  static absl::StatusOr<std::unique_ptr<const RandomForest>> Fit(
      const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
      const RandomForestOptions& options);

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override;

  // The forest refitted (same options and seed) on its data plus the rows of X
  // with their current predicted means as targets (kriging believer). The mean
  // stays close to the current one (it is not exactly unchanged: a refit
  // re-draws the splits), and the variance shrinks around X because the leaves
  // there now hold agreeing targets.
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override;

  int num_trees() const { return static_cast<int>(trees_.size()); }
  const RandomForestOptions& options() const { return options_; }

 private:
  // Internal nodes have feature >= 0 and children; leaves have feature == -1.
  struct Node {
    int feature = -1;
    double threshold = 0;  // rows with x[feature] <= threshold go left
    int left = -1;
    int right = -1;
    double mean = 0;
    double variance = 0;
  };
  using Tree = std::vector<Node>;

  RandomForest(Eigen::MatrixXd X, Eigen::VectorXd y,
               RandomForestOptions options, std::vector<Tree> trees);

  // Grows one tree on the rows `rows` of X (bootstrap duplicates repeated).
  static Tree Grow(const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
                   std::vector<int> rows, const RandomForestOptions& options,
                   uint64_t seed);

  const Eigen::MatrixXd X_;  // training data, kept for WithFantasies
  const Eigen::VectorXd y_;
  const RandomForestOptions options_;
  const std::vector<Tree> trees_;
};

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_RANDOM_FOREST_H_
