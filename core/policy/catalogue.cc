#include "core/policy/catalogue.h"

#include <utility>

#include "core/common/status_macros.h"
#include "core/policy/policy_factory.h"
#include "core/space/search_space.h"

namespace metaopt::policy {

absl::Status AddModelCatalogue(const registry::LoadedModel* model,
                               v1::StudySpec& spec) {
  absl::StatusOr<const AlgorithmKindDescriptor*> kind =
      FindAlgorithmKind(spec.algorithm().kind());
  if (!kind.ok() || !(*kind)->catalogue_from_model ||
      !spec.candidates().empty() || model == nullptr) {
    return absl::OkStatus();
  }
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  for (const v1::Configuration& entry : model->artifact.catalogue()) {
    auto canonical = space.Canonicalize(entry, "catalogue");
    if (canonical.ok()) *spec.add_candidates() = *std::move(canonical);
  }
  return absl::OkStatus();
}

}  // namespace metaopt::policy
