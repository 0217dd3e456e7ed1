#include "core/surrogate/random_forest.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/space/random.h"

namespace metaopt::surrogate {
namespace {

absl::Status CheckOptions(const RandomForestOptions& o) {
  if (o.num_trees < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("random forest: num_trees ", o.num_trees, " < 1"));
  }
  if (!(o.max_features_ratio > 0 && o.max_features_ratio <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("random forest: max_features_ratio ", o.max_features_ratio,
                     " is outside (0, 1]"));
  }
  if (o.min_samples_leaf < 1 || o.min_samples_split < 2 || o.max_depth < 0 ||
      !(o.min_impurity >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("random forest: need min_samples_leaf >= 1 (",
                     o.min_samples_leaf, "), min_samples_split >= 2 (",
                     o.min_samples_split, "), max_depth >= 0 (", o.max_depth,
                     "), min_impurity >= 0 (", o.min_impurity, ")"));
  }
  return absl::OkStatus();
}

// The best split of `rows` found so far.
struct Split {
  int feature = -1;
  double threshold = 0;
  double sse = 0;  // summed squared error of the two sides
};

}  // namespace

RandomForest::RandomForest(Eigen::MatrixXd X, Eigen::VectorXd y,
                           RandomForestOptions options, std::vector<Tree> trees)
    : X_(std::move(X)),
      y_(std::move(y)),
      options_(std::move(options)),
      trees_(std::move(trees)) {}

absl::StatusOr<std::unique_ptr<const RandomForest>> RandomForest::Fit(
    const Eigen::MatrixXd& X, const Eigen::VectorXd& y,
    const RandomForestOptions& options) {
  if (auto s = CheckOptions(options); !s.ok()) return s;
  if (X.rows() == 0) {
    return absl::InvalidArgumentError("random forest: no training rows");
  }
  if (X.rows() != y.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random forest: ", X.rows(), " rows but ", y.size(), " targets"));
  }
  if (!X.allFinite() || !y.allFinite()) {
    return absl::InvalidArgumentError(
        "random forest: training data must be finite");
  }
  const int n = static_cast<int>(X.rows());
  space::Rng master(options.seed);
  std::vector<Tree> trees;
  trees.reserve(options.num_trees);
  for (int t = 0; t < options.num_trees; ++t) {
    const uint64_t tree_seed = master();
    space::Rng rng(tree_seed);
    std::vector<int> rows(n);
    if (options.bootstrap) {
      for (int& r : rows) r = static_cast<int>(space::UniformIndex(rng, n));
      std::sort(rows.begin(), rows.end());
    } else {
      std::iota(rows.begin(), rows.end(), 0);
    }
    trees.push_back(Grow(X, y, std::move(rows), options, rng()));
  }
  return std::unique_ptr<const RandomForest>(
      new RandomForest(X, y, options, std::move(trees)));
}

RandomForest::Tree RandomForest::Grow(const Eigen::MatrixXd& X,
                                      const Eigen::VectorXd& y,
                                      std::vector<int> rows,
                                      const RandomForestOptions& options,
                                      uint64_t seed) {
  space::Rng rng(seed);
  const int dim = static_cast<int>(X.cols());
  const int mtry = std::clamp(
      static_cast<int>(std::ceil(options.max_features_ratio * dim - 1e-9)), 1,
      std::max(dim, 1));
  Tree tree;
  // Work items: node index, row range [begin, end), depth.
  struct Item {
    int node, begin, end, depth;
  };
  std::vector<Item> stack;
  tree.emplace_back();
  stack.push_back({0, 0, static_cast<int>(rows.size()), 0});
  std::vector<int> features(dim);
  std::vector<std::pair<double, int>> sorted;  // (x value, row)
  while (!stack.empty()) {
    const Item item = stack.back();
    stack.pop_back();
    const int count = item.end - item.begin;
    double sum = 0, sum_sq = 0;
    for (int i = item.begin; i < item.end; ++i) {
      sum += y[rows[i]];
      sum_sq += y[rows[i]] * y[rows[i]];
    }
    const double mean = sum / count;
    const double variance = std::max(0.0, sum_sq / count - mean * mean);
    tree[item.node].mean = mean;
    tree[item.node].variance = variance;
    if (count < options.min_samples_split ||
        count < 2 * options.min_samples_leaf ||
        item.depth >= options.max_depth || variance <= options.min_impurity ||
        dim == 0) {
      continue;  // a leaf
    }
    // Random split features: a fresh permutation, tried in order; the first
    // `mtry` always, the rest only while no valid split has been found.
    std::iota(features.begin(), features.end(), 0);
    Split best;
    for (int k = 0; k < dim; ++k) {
      if (k >= mtry && best.feature >= 0) break;
      const int swap = k + static_cast<int>(space::UniformIndex(rng, dim - k));
      std::swap(features[k], features[swap]);
      const int f = features[k];
      sorted.clear();
      for (int i = item.begin; i < item.end; ++i) {
        sorted.emplace_back(X(rows[i], f), rows[i]);
      }
      std::sort(sorted.begin(), sorted.end());
      if (sorted.front().first == sorted.back().first) continue;
      double left_sum = 0, left_sq = 0;
      for (int i = 0; i + 1 < count; ++i) {
        const double yi = y[sorted[i].second];
        left_sum += yi;
        left_sq += yi * yi;
        const int left_n = i + 1;
        const int right_n = count - left_n;
        if (left_n < options.min_samples_leaf) continue;
        if (right_n < options.min_samples_leaf) break;
        if (sorted[i].first == sorted[i + 1].first) continue;
        const double right_sum = sum - left_sum;
        const double right_sq = sum_sq - left_sq;
        const double sse = (left_sq - left_sum * left_sum / left_n) +
                           (right_sq - right_sum * right_sum / right_n);
        if (best.feature < 0 || sse < best.sse) {
          best.feature = f;
          best.sse = sse;
          const double lo = sorted[i].first, hi = sorted[i + 1].first;
          double mid = lo + 0.5 * (hi - lo);
          if (!(mid < hi)) mid = lo;
          best.threshold = mid;
        }
      }
    }
    if (best.feature < 0) continue;  // no feature separates these rows
    auto middle = std::stable_partition(
        rows.begin() + item.begin, rows.begin() + item.end,
        [&](int r) { return X(r, best.feature) <= best.threshold; });
    const int split = static_cast<int>(middle - rows.begin());
    const int left = static_cast<int>(tree.size());
    tree.emplace_back();
    tree.emplace_back();
    Node& node = tree[item.node];
    node.feature = best.feature;
    node.threshold = best.threshold;
    node.left = left;
    node.right = left + 1;
    stack.push_back({left + 1, split, item.end, item.depth + 1});
    stack.push_back({left, item.begin, split, item.depth + 1});
  }
  return tree;
}

absl::StatusOr<gp::Prediction> RandomForest::Predict(
    const Eigen::MatrixXd& X) const {
  if (X.cols() != X_.cols()) {
    return absl::InvalidArgumentError(
        absl::StrCat("random forest: rows have ", X.cols(),
                     " columns; the forest was fitted on ", X_.cols()));
  }
  const Eigen::Index n = X.rows();
  gp::Prediction out;
  out.mean = Eigen::VectorXd::Zero(n);
  out.variance = Eigen::VectorXd::Zero(n);
  const double trees = static_cast<double>(trees_.size());
  for (Eigen::Index i = 0; i < n; ++i) {
    double sum = 0, sum_sq = 0, within = 0;
    for (const Tree& tree : trees_) {
      const Node* node = &tree[0];
      while (node->feature >= 0) {
        node = &tree[X(i, node->feature) <= node->threshold ? node->left
                                                            : node->right];
      }
      sum += node->mean;
      sum_sq += node->mean * node->mean;
      within += node->variance;
    }
    const double mean = sum / trees;
    out.mean[i] = mean;
    out.variance[i] =
        within / trees + std::max(0.0, sum_sq / trees - mean * mean);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<const Surrogate>> RandomForest::WithFantasies(
    const Eigen::MatrixXd& X) const {
  if (X.rows() == 0) {
    return std::unique_ptr<const Surrogate>(
        new RandomForest(X_, y_, options_, trees_));
  }
  auto prediction = Predict(X);
  if (!prediction.ok()) return prediction.status();
  if (!X.allFinite()) {
    return absl::InvalidArgumentError(
        "random forest: fantasy rows must be finite");
  }
  Eigen::MatrixXd X_all(X_.rows() + X.rows(), X_.cols());
  X_all << X_, X;
  Eigen::VectorXd y_all(y_.size() + X.rows());
  y_all << y_, prediction->mean;
  auto forest = Fit(X_all, y_all, options_);
  if (!forest.ok()) return forest.status();
  return std::unique_ptr<const Surrogate>(*std::move(forest));
}

}  // namespace metaopt::surrogate
