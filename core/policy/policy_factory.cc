#include "core/policy/policy_factory.h"

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/policy/deeppipe_policy.h"
#include "core/policy/gp_policy.h"
#include "core/policy/grosi_policy.h"
#include "core/policy/mosaic_policy.h"
#include "core/policy/pmf_policy.h"
#include "core/policy/random_policy.h"
#include "metaopt/v1/policy_state.pb.h"

namespace metaopt::policy {

absl::Status CheckAlgorithmSupported(const v1::AlgorithmSpec& algorithm) {
  switch (algorithm.kind()) {
    case v1::ALGORITHM_KIND_RANDOM:
    case v1::ALGORITHM_KIND_GP:
    case v1::ALGORITHM_KIND_DEEPPIPE:
    case v1::ALGORITHM_KIND_MOSAIC:
    case v1::ALGORITHM_KIND_PMF:
    case v1::ALGORITHM_KIND_GROSI:
      return absl::OkStatus();
    case v1::ALGORITHM_KIND_UNSPECIFIED:
      return absl::InvalidArgumentError(
          "spec.algorithm.kind: ALGORITHM_KIND_UNSPECIFIED; set one of "
          "ALGORITHM_KIND_RANDOM, "
          "ALGORITHM_KIND_GP, ALGORITHM_KIND_DEEPPIPE, ALGORITHM_KIND_PMF, "
          "ALGORITHM_KIND_MOSAIC, ALGORITHM_KIND_GROSI");
    default:
      return absl::UnimplementedError(absl::StrCat(
          "spec.algorithm.kind: ", v1::AlgorithmKind_Name(algorithm.kind()),
          " is not implemented by this server yet"));
  }
}

absl::StatusOr<std::shared_ptr<const Policy>> CreatePolicy(
    const v1::StudySpec& spec, const std::optional<std::string>& stored_state,
    std::shared_ptr<const registry::LoadedModel> model) {
  METAOPT_RETURN_IF_ERROR(CheckAlgorithmSupported(spec.algorithm()));
  v1::PolicyState state;
  if (stored_state.has_value() && !state.ParseFromString(*stored_state)) {
    return absl::DataLossError("stored policy state does not parse");
  }
  switch (spec.algorithm().kind()) {
    case v1::ALGORITHM_KIND_RANDOM: {
      if (model == nullptr) return std::make_shared<const RandomPolicy>();
      METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                               space::SearchSpace::Create(spec.search_space()));
      return std::make_shared<const RandomPolicy>(
          ZeroShotDesignForStudy(&model->artifact, spec, space));
    }
    case v1::ALGORITHM_KIND_DEEPPIPE: {
      std::optional<v1::DeepPipePolicyState> deeppipe_state;
      if (state.has_deeppipe()) deeppipe_state = state.deeppipe();
      return DeepPipePolicy::Create(spec, std::move(deeppipe_state),
                                    std::move(model));
    }
    case v1::ALGORITHM_KIND_GP: {
      std::optional<v1::GpPolicyState> gp_state;
      if (state.has_gp()) gp_state = state.gp();
      return GpPolicy::Create(spec, std::move(gp_state), std::move(model));
    }
    case v1::ALGORITHM_KIND_MOSAIC: {
      std::optional<v1::MosaicPolicyState> mosaic_state;
      if (state.has_mosaic()) mosaic_state = state.mosaic();
      return MosaicPolicy::Create(spec, std::move(mosaic_state),
                                  std::move(model));
    }
    case v1::ALGORITHM_KIND_PMF: {
      std::optional<v1::PmfPolicyState> pmf_state;
      if (state.has_pmf()) pmf_state = state.pmf();
      return PmfPolicy::Create(spec, std::move(pmf_state), std::move(model));
    }
    case v1::ALGORITHM_KIND_GROSI:
      // Refitted from the meta-learned model at every Suggest: no state.
      return GrosiPolicy::Create(spec, std::move(model));
    default:
      return absl::InternalError("unreachable algorithm kind");
  }
}

}  // namespace metaopt::policy
