// Acquisition functions over posterior marginals (fantasies for pending points
// live with the models: gp::GpPosterior::WithFantasies).
//
// Convention: every function here MINIMISES the objective the GP models. The
// caller maps goals (negate a maximised metric before fitting, or flip the sign
// of mean and best). `variance` is the latent-f variance from
// GpPosterior::Predict (in the same units as `mean` and `best`).
//
//   z = (best - mean) / sd,    EI = sd * h(z),    h(z) = phi(z) + z Phi(z).
//
// log-EI follows Ament et al. 2023 ("Unexpected improvements to expected
// improvement"): h(z) underflows for z below about -38 and loses digits well
// before, so LogH evaluates log h(z) = log phi(z) + log(1 - |z| sqrt(pi/2)
// erfcx(|z|/sqrt2)) for z <= -1, using the asymptotic series 1 - |z| sqrt(pi/2)
// erfcx(|z|/sqrt2) = sum_k (-1)^(k+1) (2k-1)!! / z^(2k) (no cancellation) for z
// <= -10. It is finite and accurate to ~1e-12 relative for every finite z with
// |z| < 1e150.
//
// Thread-safe: pure functions.
#ifndef METAOPT_CORE_ACQUISITION_ACQUISITION_H_
#define METAOPT_CORE_ACQUISITION_ACQUISITION_H_

#include "Eigen/Core"
#include "absl/status/statusor.h"

namespace metaopt::acquisition {

// Standard normal density and distribution function.
double NormalPdf(double z);
double NormalCdf(double z);
// log(phi(z) + z Phi(z)).
double LogH(double z);

// Scalar forms. A non-positive variance means a deterministic prediction: EI =
// max(best - mean, 0) and log-EI its log (-inf when there is no improvement).
double ExpectedImprovement(double mean, double variance, double best);
double LogExpectedImprovement(double mean, double variance, double best);

// Elementwise over a batch. INVALID_ARGUMENT if the sizes differ or best is not
// finite.
absl::StatusOr<Eigen::VectorXd> ExpectedImprovement(
    const Eigen::VectorXd& mean, const Eigen::VectorXd& variance, double best);
absl::StatusOr<Eigen::VectorXd> LogExpectedImprovement(
    const Eigen::VectorXd& mean, const Eigen::VectorXd& variance, double best);

}  // namespace metaopt::acquisition

#endif  // METAOPT_CORE_ACQUISITION_ACQUISITION_H_
