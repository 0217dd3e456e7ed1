// Metabu ("Metabu: Learning Meta-features for Algorithm Selection and
// Hyperparameter Tuning", Rakotoarison et al., ICLR 2022, Algorithm 1): learns
// a linear map psi from a task's basic meta-features to R^d such that
// Euclidean distances between mapped tasks mimic the Wasserstein distances
// between the tasks' top configurations.
//
//   1. C_ij = W(z_i, z_j): z_i the uniform distribution on task i's top-L
//      encoded configurations (UniformWasserstein), scaled to max 1.
//   2. d = the intrinsic dimension of C (TwoNN, IntrinsicDimension) unless
//      given; u = ClassicalMds(C, d), each column standardized.
//   3. psi = argmin FGW(psi(x), u) + lambda |psi|_1 by Adam, the coupling
//      solved first and held fixed for each gradient step (bilevel), with
//      early stopping on NDCG@k of the neighbours psi predicts.
//
// Deviations from the paper, each for a stated reason (docs/algorithms.md):
// no bootstrap augmentation of the datasets (the meta-datasets carry
// meta-features, not the raw data); classical MDS instead of SMACOF (exact
// for Euclidean targets, deterministic); the coupling starts from the known
// task-to-task correspondence, as the authors' code does.
#ifndef METAOPT_CORE_META_TRAINING_METABU_H_
#define METAOPT_CORE_META_TRAINING_METABU_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/meta_training/train_common.h"

namespace metaopt::train {

// One task as Metabu sees it.
struct MetabuTask {
  std::string id;
  Eigen::VectorXd features;  // standardized basic meta-features, no NaN
  Eigen::MatrixXd top;       // its top-L configurations, encoded, one per row
};

struct MetabuOptions {
  double alpha = 0.5;           // FGW trade-off (authors' default)
  double l1 = 1e-3;             // lambda of the L1 penalty on psi
  double learning_rate = 0.01;  // Adam
  int max_steps = 2000;
  // Steps without a better criterion before stopping (the authors use 10
  // epochs; chosen on the oboe validation split: the criterion still rises
  // after 10 steps).
  int patience = 100;
  int ndcg_k = 10;
  // d; 0: IntrinsicDimension of the training tasks' distances, clamped to
  // [2, number of training tasks - 1].
  int dimension = 0;
  uint64_t seed = 0;
};

struct MetabuFit {
  Eigen::MatrixXd projection;  // psi: d x number of features
  int dimension = 0;
  int steps = 0;                    // Adam steps taken
  int best_step = 0;                // the step whose psi is returned
  double ndcg = 0;                  // the criterion at best_step
  bool criterion_on_valid = false;  // NDCG of valid tasks vs training tasks
};

// TwoNN estimate (Facco et al., "Estimating the intrinsic dimension of
// datasets by a minimal neighborhood information"), as the Metabu authors
// compute it: mu_i = r2 / (r1 + 1e-3) from each row of `distances` (its
// distinct positive values off the diagonal), the smallest 90 % of the sorted
// mu, and the slope through the origin of -log(1 - i/N) against log mu_(i),
// rounded up. At least 1.
int IntrinsicDimension(const Eigen::MatrixXd& distances);

// Classical (Torgerson) MDS: the top `dimension` eigenvectors of
// -1/2 J D^2 J scaled by the square roots of their (non-negative)
// eigenvalues; n x dimension.
Eigen::MatrixXd ClassicalMds(const Eigen::MatrixXd& distances, int dimension);

// Mean over the rows of NDCG@k of the ranking by `predicted` distances
// against binary relevance "among the k nearest by `truth`" (the Metabu
// criterion). Rows with fewer than k columns use k = columns.
double NdcgAtK(const Eigen::MatrixXd& predicted, const Eigen::MatrixXd& truth,
               int k);

// The Wasserstein distance matrix between the tasks' top configurations
// (rows: `rows`, columns: `columns`).
Eigen::MatrixXd TargetDistances(const std::vector<MetabuTask>& rows,
                                const std::vector<MetabuTask>& columns);

// Fits psi on `train` (at least 3 tasks, equal feature and top sizes);
// `valid` (may be empty) gives the early-stopping criterion, otherwise the
// training tasks' own NDCG does. The Adam steps run as the epochs of
// RunTrainingLoop (patience: options.patience); `progress` (may be null)
// gets its lines. INVALID_ARGUMENT for inconsistent inputs.
absl::StatusOr<MetabuFit> FitMetabu(const std::vector<MetabuTask>& train,
                                    const std::vector<MetabuTask>& valid,
                                    const MetabuOptions& options,
                                    Progress* progress = nullptr);

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_METABU_H_
