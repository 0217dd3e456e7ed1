#ifndef METAOPT_CORE_POLICY_POLICY_FACTORY_H_
#define METAOPT_CORE_POLICY_POLICY_FACTORY_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/policy/policy.h"

namespace metaopt::policy {

// Builds the policy of a study from its canonical spec and, when the study was
// fine-tuned before, the stored policy state. Algorithm kinds this build does
// not implement are UNIMPLEMENTED naming the kind. Thread-safe.
absl::StatusOr<std::shared_ptr<const Policy>> CreatePolicy(
    const v1::StudySpec& spec, const std::optional<std::string>& stored_state);

// OK if CreatePolicy can build a policy of this kind; UNIMPLEMENTED naming the
// kind otherwise.
absl::Status CheckAlgorithmSupported(const v1::AlgorithmSpec& algorithm);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_POLICY_FACTORY_H_
