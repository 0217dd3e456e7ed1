// A strictly increasing warping of a GP's targets, fitted by maximum
// likelihood: Box-Cox ("An Analysis of Transformations", Box & Cox 1964)
// when every value is positive, else Yeo-Johnson ("A New Family of Power
// Transformations to Improve Normality or Symmetry", Yeo & Johnson 2000) of
// the values standardised, as HEBO warps its outputs ("HEBO: Pushing The
// Limits of Sample-Efficient Hyperparameter Optimisation", Cowen-Rivers et
// al.). A metric such as a fit time, spread over orders of magnitude, comes
// out near its logarithm (lambda ~ 0); a metric already near normal near
// itself (lambda ~ 1).
//
// Being increasing, the warp keeps the order of values, so dominance,
// feasibility against a warped bound and the incumbent are the same before
// and after it.
//
// A value type; thread-compatible.
#ifndef METAOPT_CORE_GP_POWER_TRANSFORM_H_
#define METAOPT_CORE_GP_POWER_TRANSFORM_H_

#include <string>

#include "absl/types/span.h"

namespace metaopt::gp {

class PowerTransform {
 public:
  enum class Family { kIdentity, kBoxCox, kYeoJohnson };

  // y -> y.
  PowerTransform() = default;

  // The family by the values' sign, lambda in [-2, 2] maximising the
  // profile log-likelihood of a normal model of the transformed values
  // (a grid of step 0.05, then golden-section refinement). The identity
  // for fewer than 3 values, values not all finite, or all equal.
  static PowerTransform Fit(absl::Span<const double> values);

  // Box-Cox at lambda = 0: the natural logarithm (positive values only).
  static PowerTransform Log() {
    return PowerTransform(Family::kBoxCox, 0.0, 0.0, 1.0);
  }

  // Whether Apply is defined at y (Box-Cox: y > 0; otherwise every finite y).
  bool InDomain(double y) const;
  // The warped value; strictly increasing in y on the domain.
  double Apply(double y) const;

  Family family() const { return family_; }
  double lambda() const { return lambda_; }
  // "identity", "box-cox(lambda=0.03)", "yeo-johnson(lambda=1.2)".
  std::string DebugString() const;

 private:
  PowerTransform(Family family, double lambda, double shift, double scale)
      : family_(family), lambda_(lambda), shift_(shift), scale_(scale) {}

  Family family_ = Family::kIdentity;
  double lambda_ = 1.0;
  // Yeo-Johnson reads (y - shift_) / scale_.
  double shift_ = 0.0;
  double scale_ = 1.0;
};

}  // namespace metaopt::gp

#endif  // METAOPT_CORE_GP_POWER_TRANSFORM_H_
