// Optimal transport for Metabu ("Metabu: Learning Meta-features for Algorithm
// Selection and Hyperparameter Tuning", Rakotoarison et al., ICLR 2022, §3):
// the Wasserstein distance between the top configurations of two tasks, and
// the fused Gromov-Wasserstein (FGW) discrepancy that aligns mapped
// meta-features with those distances, with its gradient.
//
// Every function is pure and thread-safe.
#ifndef METAOPT_CORE_META_TRAINING_OPTIMAL_TRANSPORT_H_
#define METAOPT_CORE_META_TRAINING_OPTIMAL_TRANSPORT_H_

#include <vector>

#include "Eigen/Core"

namespace metaopt::train {

// D(i, j) = |a_i - b_j|^2 over the rows of `a` and `b` (same column count).
Eigen::MatrixXd SquaredDistances(const Eigen::MatrixXd& a,
                                 const Eigen::MatrixXd& b);

// A minimum-cost perfect matching of the square matrix `cost`: entry i is the
// column matched to row i (Hungarian algorithm with potentials, O(n^3)).
std::vector<int> MinCostAssignment(const Eigen::MatrixXd& cost);

// The Wasserstein distance between the uniform distributions on the rows of
// `a` and of `b` (same row and column counts) with squared Euclidean ground
// cost: the mean cost of the best one-to-one matching, which is optimal among
// all couplings of two uniform distributions of equal size (Birkhoff).
double UniformWasserstein(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b);

struct FgwOptions {
  // Weight of the Gromov-Wasserstein (structure) term; 1 - alpha weighs the
  // Wasserstein (feature) term. The Metabu authors' default.
  double alpha = 0.5;
  // Proximal-point iterations on the coupling, each with this many Sinkhorn
  // iterations (the authors' 10 and 5).
  int proximal_iterations = 10;
  int sinkhorn_iterations = 5;
};

struct FgwResult {
  double value = 0;
  Eigen::MatrixXd coupling;  // n x m, the transport plan T
  // d value / d source with the coupling held fixed (n x d), as in the
  // bilevel optimisation of Metabu: the plan is solved, then the map is
  // updated under it.
  Eigen::MatrixXd gradient;
};

// The FGW discrepancy between the point clouds `source` (n x d) and `target`
// (m x d'), both with uniform weights, structure matrices Cs and Ct of squared
// Euclidean distances and the square loss for the structure term:
//
//   value = sum_ij T_ij [ alpha L_ij + (1 - alpha) |s_i - t_j|^2 ]   (d = d')
//   L = f 1' + 1 g' - 2 Cs T Ct,  f_i = sum_k Cs_ik^2 / n,  g_j = sum_l Ct_jl^2
//   / m
//
// (L_ij = sum_kl |Cs_ik - Ct_jl|^2 T_kl for a plan with uniform marginals).
// T comes from proximal-point iterations (Xu et al., "Gromov-Wasserstein
// Learning for Graph Matching and Node Embedding"): T <- Sinkhorn projection
// of exp(-cost / max|cost|) * T onto the uniform marginals, starting from
// `initial_coupling` (n x m, non-negative; zero entries stay zero). A plan
// that turns non-finite is replaced by the uniform one.
FgwResult FusedGromovWasserstein(const Eigen::MatrixXd& source,
                                 const Eigen::MatrixXd& target,
                                 const Eigen::MatrixXd& initial_coupling,
                                 const FgwOptions& options = {});

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_OPTIMAL_TRANSPORT_H_
