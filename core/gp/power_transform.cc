#include "core/gp/power_transform.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_format.h"

namespace metaopt::gp {
namespace {

constexpr double kMinLambda = -2.0;
constexpr double kMaxLambda = 2.0;
constexpr double kGridStep = 0.05;

// (exp(lambda u) - 1) / lambda, and its limit u at lambda = 0.
double PowerOfLog(double u, double lambda) {
  if (std::abs(lambda) < 1e-12) return u;
  return std::expm1(lambda * u) / lambda;
}

double BoxCox(double y, double lambda) {
  return PowerOfLog(std::log(y), lambda);
}

double YeoJohnson(double z, double lambda) {
  if (z >= 0) return PowerOfLog(std::log1p(z), lambda);
  return -PowerOfLog(std::log1p(-z), 2.0 - lambda);
}

// The profile log-likelihood (up to a constant) of lambda: a normal model of
// the transformed values, its variance at the maximum, plus the log of the
// transform's Jacobian.
double ProfileLogLikelihood(const std::vector<double>& values, bool box_cox,
                            double lambda) {
  const double n = static_cast<double>(values.size());
  double sum = 0;
  double log_jacobian = 0;
  std::vector<double> t(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = values[i];
    t[i] = box_cox ? BoxCox(v, lambda) : YeoJohnson(v, lambda);
    sum += t[i];
    log_jacobian += box_cox ? std::log(v)
                            : std::copysign(std::log1p(std::abs(v)), v);
  }
  const double mean = sum / n;
  double squares = 0;
  for (double x : t) squares += (x - mean) * (x - mean);
  const double variance = squares / n;
  if (!(variance > 0) || !std::isfinite(variance)) {
    return -std::numeric_limits<double>::infinity();
  }
  return -0.5 * n * std::log(variance) + (lambda - 1.0) * log_jacobian;
}

double BestLambda(const std::vector<double>& values, bool box_cox) {
  auto ll = [&](double lambda) {
    return ProfileLogLikelihood(values, box_cox, lambda);
  };
  double best = 1.0;
  double best_ll = ll(best);
  const int steps =
      static_cast<int>(std::lround((kMaxLambda - kMinLambda) / kGridStep));
  for (int i = 0; i <= steps; ++i) {
    const double lambda = kMinLambda + i * kGridStep;
    const double value = ll(lambda);
    if (value > best_ll) {
      best = lambda;
      best_ll = value;
    }
  }
  // Golden-section search around the grid's best.
  double lo = std::max(kMinLambda, best - kGridStep);
  double hi = std::min(kMaxLambda, best + kGridStep);
  const double ratio = (std::sqrt(5.0) - 1.0) / 2.0;
  double a = hi - ratio * (hi - lo);
  double b = lo + ratio * (hi - lo);
  double fa = ll(a);
  double fb = ll(b);
  for (int i = 0; i < 40; ++i) {
    if (fa > fb) {
      hi = b;
      b = a;
      fb = fa;
      a = hi - ratio * (hi - lo);
      fa = ll(a);
    } else {
      lo = a;
      a = b;
      fa = fb;
      b = lo + ratio * (hi - lo);
      fb = ll(b);
    }
  }
  const double refined = 0.5 * (lo + hi);
  return ll(refined) > best_ll ? refined : best;
}

}  // namespace

PowerTransform PowerTransform::Fit(absl::Span<const double> values) {
  if (values.size() < 3) return PowerTransform();
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  double sum = 0;
  for (double v : values) {
    if (!std::isfinite(v)) return PowerTransform();
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  if (!(hi > lo)) return PowerTransform();
  std::vector<double> data(values.begin(), values.end());
  if (lo > 0) {
    return PowerTransform(Family::kBoxCox, BestLambda(data, true), 0.0, 1.0);
  }
  const double mean = sum / static_cast<double>(data.size());
  double squares = 0;
  for (double v : data) squares += (v - mean) * (v - mean);
  const double sd = std::sqrt(squares / static_cast<double>(data.size()));
  for (double& v : data) v = (v - mean) / sd;
  return PowerTransform(Family::kYeoJohnson, BestLambda(data, false), mean,
                        sd);
}

bool PowerTransform::InDomain(double y) const {
  if (!std::isfinite(y)) return false;
  return family_ != Family::kBoxCox || y > 0;
}

double PowerTransform::Apply(double y) const {
  switch (family_) {
    case Family::kIdentity:
      return y;
    case Family::kBoxCox:
      return BoxCox(y, lambda_);
    case Family::kYeoJohnson:
      return YeoJohnson((y - shift_) / scale_, lambda_);
  }
  return y;
}

std::string PowerTransform::DebugString() const {
  switch (family_) {
    case Family::kIdentity:
      return "identity";
    case Family::kBoxCox:
      return absl::StrFormat("box-cox(lambda=%.3g)", lambda_);
    case Family::kYeoJohnson:
      return absl::StrFormat("yeo-johnson(lambda=%.3g)", lambda_);
  }
  return "identity";
}

}  // namespace metaopt::gp
