#ifndef METAOPT_CORE_POLICY_POLICY_FACTORY_H_
#define METAOPT_CORE_POLICY_POLICY_FACTORY_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/policy/policy.h"
#include "core/registry/artifact.h"

namespace metaopt::policy {

// Builds the policy of a study from its canonical spec, the stored policy state
// (absent for a new study) and the registry model the study is bound to (null
// for none). Algorithm kinds this build does not implement are UNIMPLEMENTED
// naming the kind. Thread-safe.
absl::StatusOr<std::shared_ptr<const Policy>> CreatePolicy(
    const v1::StudySpec& spec, const std::optional<std::string>& stored_state,
    std::shared_ptr<const registry::LoadedModel> model = nullptr);

// OK if CreatePolicy can build a policy of this kind; UNIMPLEMENTED naming the
// kind otherwise.
absl::Status CheckAlgorithmSupported(const v1::AlgorithmSpec& algorithm);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_POLICY_FACTORY_H_
