// Stationary ARD covariance functions for Gaussian processes.
//
// A kernel maps two sets of points (rows of Eigen matrices) to their covariance
// matrix
//   k(x, x') = s * phi(r^2),   r^2 = sum_d (x_d - x'_d)^2 / l_d^2,
// with per-dimension lengthscales l_d and an output scale s (the prior variance
// k(x, x)). Hyperparameters live in log space: log_params() = [log l_1, ...,
// log l_D, log s].
//
// Besides the matrix itself a kernel provides the two vector-Jacobian products
// a GP needs: the gradient of a scalar loss L w.r.t. the log-hyperparameters
// and w.r.t. the inputs X, both given dL/dK for the training matrix K =
// Matrix(X). The input gradient is what a deep kernel (DeepPipe, FSBO)
// backpropagates into its feature network.
//
// Kernels are created by name through CreateKernel ("matern52", "rbf").
#ifndef METAOPT_CORE_GP_KERNEL_H_
#define METAOPT_CORE_GP_KERNEL_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace metaopt::gp {

// Doubles per SIMD register in this build (2 with SSE2, 4 with AVX2, 8 with
// AVX-512: CMakeLists.txt, METAOPT_CPU). A coefficient-wise Eigen expression
// over an array of N entries evaluates the first N - N % kSimdDoubles of them
// with vector instructions and the rest one by one, and the two paths of
// exp or sqrt can round differently: code that promises a result independent
// of how it splits a matrix pads its pieces to multiples of this.
inline constexpr Eigen::Index kSimdDoubles =
    Eigen::internal::packet_traits<double>::size;

// Thread-compatible: const methods may be called concurrently; set_log_params
// needs external synchronisation. Const methods keep no caches.
class Kernel {
 public:
  virtual ~Kernel() = default;

  // The factory name ("matern52", "rbf").
  virtual std::string_view name() const = 0;
  // A deep copy.
  virtual std::unique_ptr<Kernel> Clone() const = 0;

  int input_dim() const { return input_dim_; }
  // input_dim() lengthscales plus one output scale.
  int num_params() const { return input_dim_ + 1; }
  // [log l_1, ..., log l_D, log s].
  const Eigen::VectorXd& log_params() const { return log_params_; }
  // INVALID_ARGUMENT on a size mismatch or a non-finite entry; the kernel is
  // then unchanged.
  absl::Status set_log_params(
      const Eigen::Ref<const Eigen::VectorXd>& log_params);

  // Convenience accessors (exponentiated).
  Eigen::VectorXd lengthscales() const;
  double output_scale() const;

  // Cross-covariance, X1.rows() x X2.rows(). Both must have input_dim()
  // columns.
  Eigen::MatrixXd Matrix(const Eigen::Ref<const Eigen::MatrixXd>& X1,
                         const Eigen::Ref<const Eigen::MatrixXd>& X2) const;
  // Training matrix K(X, X): exactly symmetric with exactly s on the diagonal.
  Eigen::MatrixXd Matrix(const Eigen::Ref<const Eigen::MatrixXd>& X) const;
  // k(x_i, x_i) for every row (s for a stationary kernel).
  Eigen::VectorXd Diagonal(const Eigen::Ref<const Eigen::MatrixXd>& X) const;

  // Rows of X divided by the lengthscales: the squared scaled distance of two
  // inputs is the squared distance of these rows.
  Eigen::MatrixXd DividedByLengthscales(
      const Eigen::Ref<const Eigen::MatrixXd>& X) const;
  // s * phi(r2) for each squared scaled distance in r2 (the profile Matrix
  // applies), every entry on the vectorised path: an entry's result depends
  // on its value alone, bit for bit.
  Eigen::VectorXd FromSquaredDistances(const Eigen::VectorXd& r2) const;

  // dL/d(log_params) for K = Matrix(X), given dL_dK (n x n, need not be
  // symmetric: the result is sum_ij dL_dK(i,j) dK(i,j)/d(log_params)).
  Eigen::VectorXd GradientHyper(
      const Eigen::Ref<const Eigen::MatrixXd>& X,
      const Eigen::Ref<const Eigen::MatrixXd>& dL_dK) const;
  // dL/dX (n x input_dim) for K = Matrix(X), given dL_dK (x_i enters row i and
  // column i).
  Eigen::MatrixXd GradientInputs(
      const Eigen::Ref<const Eigen::MatrixXd>& X,
      const Eigen::Ref<const Eigen::MatrixXd>& dL_dK) const;

  // The training matrix with what its gradients need, for a caller that wants
  // K and its gradients at the same X (a GP's NLL): the distances and the
  // kernel profile are computed once instead of once per call. Results equal
  // Matrix(X), GradientHyper(X, .) and GradientInputs(X, .) bit for bit.
  struct Gram {
    Eigen::MatrixXd k;              // Matrix(X)
    Eigen::MatrixXd scaled;         // X shifted and divided by lengthscales
    Eigen::MatrixXd dk_dr2;         // s * dphi/d(r2), elementwise
    Eigen::MatrixXd dk_dlog_scale;  // dK/d(log s) (equal to K)
  };
  Gram TrainingGram(const Eigen::Ref<const Eigen::MatrixXd>& X) const;
  Eigen::VectorXd GradientHyper(
      const Gram& gram, const Eigen::Ref<const Eigen::MatrixXd>& dL_dK) const;
  Eigen::MatrixXd GradientInputs(
      const Gram& gram, const Eigen::Ref<const Eigen::MatrixXd>& dL_dK) const;

 protected:
  explicit Kernel(int input_dim);
  Kernel(const Kernel&) = default;
  Kernel& operator=(const Kernel&) = default;

  // The kernel from squared scaled distances, elementwise: *k = scale * phi(r2)
  // and, unless null, *dk_dr2 = scale * dphi/d(r2) and *dk_dlog_scale =
  // dk/d(log scale) (= k, possibly rounded otherwise). phi(0) must be 1.
  // Implementations must be smooth at r2 = 0 (no division by r).
  virtual void Profile(const Eigen::ArrayXXd& r2, double scale,
                       Eigen::MatrixXd* k, Eigen::MatrixXd* dk_dr2,
                       Eigen::MatrixXd* dk_dlog_scale) const = 0;

 private:
  // k = Profile of the squared scaled distances r2 (n x m, column-major; k
  // may be r2 itself), evaluated a chunk of columns at a time, equal to
  // Profile of the whole matrix bit for bit.
  void ProfileInChunks(const double* r2, Eigen::Index n, Eigen::Index m,
                       double* k) const;
  // Inputs divided by the lengthscales, shifted by `shift` (a row vector
  // subtracted from every row before scaling) to reduce cancellation in the
  // squared-distance expansion.
  Eigen::MatrixXd Scaled(const Eigen::Ref<const Eigen::MatrixXd>& X,
                         const Eigen::RowVectorXd& shift) const;
  // Squared scaled distances of the training set (symmetric, zero diagonal) and
  // the scaled inputs used to compute them.
  Eigen::ArrayXXd SquaredDistances(const Eigen::Ref<const Eigen::MatrixXd>& X,
                                   Eigen::MatrixXd* scaled) const;

  int input_dim_;
  Eigen::VectorXd log_params_;
};

// Matérn-5/2: phi(r) = (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r).
// Thread-compatible.
class Matern52Kernel final : public Kernel {
 public:
  explicit Matern52Kernel(int input_dim) : Kernel(input_dim) {}
  std::string_view name() const override { return "matern52"; }
  std::unique_ptr<Kernel> Clone() const override;

 protected:
  void Profile(const Eigen::ArrayXXd& r2, double scale, Eigen::MatrixXd* k,
               Eigen::MatrixXd* dk_dr2,
               Eigen::MatrixXd* dk_dlog_scale) const override;
};

// Squared exponential: phi(r) = exp(-r^2 / 2). Thread-compatible.
class RbfKernel final : public Kernel {
 public:
  explicit RbfKernel(int input_dim) : Kernel(input_dim) {}
  std::string_view name() const override { return "rbf"; }
  std::unique_ptr<Kernel> Clone() const override;

 protected:
  void Profile(const Eigen::ArrayXXd& r2, double scale, Eigen::MatrixXd* k,
               Eigen::MatrixXd* dk_dr2,
               Eigen::MatrixXd* dk_dlog_scale) const override;
};

// Creates a kernel by name with all log-hyperparameters 0 (unit lengthscales
// and scale). INVALID_ARGUMENT for an unknown name or input_dim < 1.
absl::StatusOr<std::unique_ptr<Kernel>> CreateKernel(std::string_view name,
                                                     int input_dim);

// The names CreateKernel accepts.
std::vector<std::string> KernelNames();

}  // namespace metaopt::gp

#endif  // METAOPT_CORE_GP_KERNEL_H_
