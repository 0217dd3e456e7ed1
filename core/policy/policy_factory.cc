#include "core/policy/policy_factory.h"

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/policy/random_policy.h"

namespace metaopt::policy {

absl::Status CheckAlgorithmSupported(const v1::AlgorithmSpec& algorithm) {
  switch (algorithm.kind()) {
    case v1::ALGORITHM_KIND_RANDOM:
      return absl::OkStatus();
    case v1::ALGORITHM_KIND_UNSPECIFIED:
      return absl::InvalidArgumentError(
          "spec.algorithm.kind: ALGORITHM_KIND_UNSPECIFIED; set one of "
          "ALGORITHM_KIND_RANDOM, "
          "ALGORITHM_KIND_GP, ALGORITHM_KIND_DEEPPIPE, ALGORITHM_KIND_PMF, "
          "ALGORITHM_KIND_MOSAIC");
    default:
      return absl::UnimplementedError(absl::StrCat(
          "spec.algorithm.kind: ", v1::AlgorithmKind_Name(algorithm.kind()),
          " is not implemented by this server yet"));
  }
}

absl::StatusOr<std::shared_ptr<const Policy>> CreatePolicy(
    const v1::StudySpec& spec,
    const std::optional<std::string>& /*stored_state*/) {
  METAOPT_RETURN_IF_ERROR(CheckAlgorithmSupported(spec.algorithm()));
  switch (spec.algorithm().kind()) {
    case v1::ALGORITHM_KIND_RANDOM:
      return std::make_shared<const RandomPolicy>();
    default:
      return absl::InternalError("unreachable algorithm kind");
  }
}

}  // namespace metaopt::policy
