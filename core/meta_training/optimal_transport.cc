#include "core/meta_training/optimal_transport.h"

#include <cmath>
#include <limits>
#include <vector>

namespace metaopt::train {

Eigen::MatrixXd SquaredDistances(const Eigen::MatrixXd& a,
                                 const Eigen::MatrixXd& b) {
  Eigen::MatrixXd d = (-2.0 * a * b.transpose()).eval();
  d.colwise() += a.rowwise().squaredNorm();
  d.rowwise() += b.rowwise().squaredNorm().transpose();
  return d.cwiseMax(0.0);  // rounding can leave -1e-16 on the diagonal
}

std::vector<int> MinCostAssignment(const Eigen::MatrixXd& cost) {
  // Shortest augmenting paths with row and column potentials (u, v); rows and
  // columns are 1-based inside, column 0 is the virtual start.
  const int n = static_cast<int>(cost.rows());
  const double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> u(n + 1, 0.0), v(n + 1, 0.0);
  std::vector<int> row_of_column(n + 1, 0), previous(n + 1, 0);
  for (int row = 1; row <= n; ++row) {
    row_of_column[0] = row;
    int column = 0;
    std::vector<double> slack(n + 1, kInf);
    std::vector<bool> used(n + 1, false);
    do {
      used[column] = true;
      const int r = row_of_column[column];
      double delta = kInf;
      int next = 0;
      for (int c = 1; c <= n; ++c) {
        if (used[c]) continue;
        const double reduced = cost(r - 1, c - 1) - u[r] - v[c];
        if (reduced < slack[c]) {
          slack[c] = reduced;
          previous[c] = column;
        }
        if (slack[c] < delta) {
          delta = slack[c];
          next = c;
        }
      }
      for (int c = 0; c <= n; ++c) {
        if (used[c]) {
          u[row_of_column[c]] += delta;
          v[c] -= delta;
        } else {
          slack[c] -= delta;
        }
      }
      column = next;
    } while (row_of_column[column] != 0);
    do {  // augment along the path back to the start
      const int from = previous[column];
      row_of_column[column] = row_of_column[from];
      column = from;
    } while (column != 0);
  }
  std::vector<int> assignment(n, -1);
  for (int c = 1; c <= n; ++c) assignment[row_of_column[c] - 1] = c - 1;
  return assignment;
}

double UniformWasserstein(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  if (a.rows() == 0) return 0.0;
  const Eigen::MatrixXd cost = SquaredDistances(a, b);
  const std::vector<int> assignment = MinCostAssignment(cost);
  double total = 0.0;
  for (int i = 0; i < static_cast<int>(assignment.size()); ++i) {
    total += cost(i, assignment[i]);
  }
  return total / static_cast<double>(a.rows());
}

namespace {

// L = f 1' + 1 g' - 2 Cs T Ct (see FusedGromovWasserstein).
Eigen::MatrixXd StructureCost(const Eigen::MatrixXd& cs,
                              const Eigen::MatrixXd& ct,
                              const Eigen::MatrixXd& plan) {
  const Eigen::VectorXd f =
      cs.array().square().rowwise().sum() / static_cast<double>(cs.rows());
  const Eigen::VectorXd g =
      ct.array().square().rowwise().sum() / static_cast<double>(ct.rows());
  Eigen::MatrixXd cost = -2.0 * cs * plan * ct;
  cost.colwise() += f;
  cost.rowwise() += g.transpose();
  return cost;
}

}  // namespace

FgwResult FusedGromovWasserstein(const Eigen::MatrixXd& source,
                                 const Eigen::MatrixXd& target,
                                 const Eigen::MatrixXd& initial_coupling,
                                 const FgwOptions& options) {
  const Eigen::Index n = source.rows();
  const Eigen::Index m = target.rows();
  const double alpha = options.alpha;
  const Eigen::MatrixXd cs = SquaredDistances(source, source);
  const Eigen::MatrixXd ct = SquaredDistances(target, target);
  const Eigen::MatrixXd feature_cost = SquaredDistances(source, target);
  const Eigen::VectorXd p =
      Eigen::VectorXd::Constant(n, 1.0 / static_cast<double>(n));
  const Eigen::VectorXd q =
      Eigen::VectorXd::Constant(m, 1.0 / static_cast<double>(m));

  Eigen::MatrixXd plan = initial_coupling;
  Eigen::VectorXd a = p;
  for (int it = 0; it < options.proximal_iterations; ++it) {
    const Eigen::MatrixXd cost =
        alpha * StructureCost(cs, ct, plan) + (1 - alpha) * feature_cost;
    const double scale = cost.cwiseAbs().maxCoeff();
    Eigen::MatrixXd kernel = plan;
    if (scale > 0) kernel.array() *= (-cost / scale).array().exp();
    Eigen::VectorXd b = q.cwiseQuotient(kernel.transpose() * a);
    for (int s = 0; s < options.sinkhorn_iterations; ++s) {
      a = p.cwiseQuotient(kernel * b);
      b = q.cwiseQuotient(kernel.transpose() * a);
    }
    plan = a.asDiagonal() * kernel * b.asDiagonal();
  }
  if (!plan.allFinite()) {
    plan = Eigen::MatrixXd::Constant(n, m, 1.0 / static_cast<double>(n * m));
  }

  FgwResult result;
  result.value = (plan.cwiseProduct(alpha * StructureCost(cs, ct, plan) +
                                    (1 - alpha) * feature_cost))
                     .sum();
  // d value / d Cs(i, k) = alpha (2 r_i Cs_ik / n - 2 (T Ct T')_ik), with
  // r = T 1; Cs_ik = |s_i - s_k|^2 moves with s_i and s_k.
  const Eigen::VectorXd r = plan.rowwise().sum();
  Eigen::MatrixXd d_cs =
      alpha * (2.0 / static_cast<double>(n)) * (r.asDiagonal() * cs) -
      2.0 * alpha * (plan * ct * plan.transpose());
  const Eigen::MatrixXd w = d_cs + d_cs.transpose();
  // sum_k w_ik 2 (s_i - s_k) + (1 - alpha) sum_j T_ij 2 (s_i - t_j)
  result.gradient =
      2.0 * (w.rowwise().sum().asDiagonal() * source - w * source);
  result.gradient +=
      2.0 * (1 - alpha) * (r.asDiagonal() * source - plan * target);
  result.coupling = std::move(plan);
  return result;
}

}  // namespace metaopt::train
