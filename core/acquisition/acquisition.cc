#include "core/acquisition/acquisition.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"

namespace metaopt::acquisition {
namespace {

constexpr double kSqrt2 = 1.4142135623730950488;
constexpr double kSqrtHalfPi = 1.2533141373155002512;   // sqrt(pi / 2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kHalfLog2Pi = 0.91893853320467274178;  // log(2 pi) / 2

double LogNormalPdf(double z) { return -0.5 * z * z - kHalfLog2Pi; }

absl::Status CheckBatch(const Eigen::VectorXd& mean,
                        const Eigen::VectorXd& variance) {
  if (mean.size() != variance.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("acquisition: ", mean.size(), " means but ",
                     variance.size(), " variances"));
  }
  return absl::OkStatus();
}

absl::Status CheckBest(double best) {
  if (!std::isfinite(best)) {
    return absl::InvalidArgumentError(
        absl::StrCat("acquisition: best value must be finite, got ", best));
  }
  return absl::OkStatus();
}

}  // namespace

double NormalPdf(double z) { return kInvSqrt2Pi * std::exp(-0.5 * z * z); }

double NormalCdf(double z) { return 0.5 * std::erfc(-z / kSqrt2); }

double LogH(double z) {
  if (std::isnan(z)) return z;
  if (z > -1.0) return std::log(NormalPdf(z) + z * NormalCdf(z));
  if (z > -10.0) {
    // h(z) = phi(z) (1 - |z| sqrt(pi/2) erfcx(|z|/sqrt2)); x^2 <= 50, so
    // exp(x^2) is safe.
    const double x = -z / kSqrt2;
    const double erfcx = std::exp(x * x) * std::erfc(x);
    return LogNormalPdf(z) + std::log1p(z * kSqrtHalfPi * erfcx);
  }
  // Asymptotic series of the bracket, sum_k (-1)^(k+1) (2k-1)!! / z^(2k): for
  // |z| >= 10 its terms shrink by (2k+1)/z^2 <= 0.6 for the 30 terms needed,
  // with no cancellation.
  const double inv_z2 = 1.0 / (z * z);
  double term = inv_z2;
  double sum = 0.0;
  for (int k = 1; k <= 60; ++k) {
    sum += term;
    term *= -(2.0 * k + 1.0) * inv_z2;
    if (std::abs(term) <= 1e-17 * sum) break;
  }
  return LogNormalPdf(z) + std::log(sum);
}

double ExpectedImprovement(double mean, double variance, double best) {
  const double sd = std::sqrt(std::max(variance, 0.0));
  if (!(sd > 0.0)) return std::max(best - mean, 0.0);
  const double z = (best - mean) / sd;
  if (z > -1.0) return sd * (NormalPdf(z) + z * NormalCdf(z));
  return sd * std::exp(LogH(z));
}

double LogExpectedImprovement(double mean, double variance, double best) {
  const double sd = std::sqrt(std::max(variance, 0.0));
  if (!(sd > 0.0)) {
    const double improvement = best - mean;
    return improvement > 0.0 ? std::log(improvement)
                             : -std::numeric_limits<double>::infinity();
  }
  return std::log(sd) + LogH((best - mean) / sd);
}

absl::StatusOr<Eigen::VectorXd> ExpectedImprovement(
    const Eigen::VectorXd& mean, const Eigen::VectorXd& variance, double best) {
  METAOPT_RETURN_IF_ERROR(CheckBatch(mean, variance));
  METAOPT_RETURN_IF_ERROR(CheckBest(best));
  Eigen::VectorXd out(mean.size());
  for (Eigen::Index i = 0; i < mean.size(); ++i) {
    out[i] = ExpectedImprovement(mean[i], variance[i], best);
  }
  return out;
}

absl::StatusOr<Eigen::VectorXd> LogExpectedImprovement(
    const Eigen::VectorXd& mean, const Eigen::VectorXd& variance, double best) {
  METAOPT_RETURN_IF_ERROR(CheckBatch(mean, variance));
  METAOPT_RETURN_IF_ERROR(CheckBest(best));
  Eigen::VectorXd out(mean.size());
  for (Eigen::Index i = 0; i < mean.size(); ++i) {
    out[i] = LogExpectedImprovement(mean[i], variance[i], best);
  }
  return out;
}

}  // namespace metaopt::acquisition
