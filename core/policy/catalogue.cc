#include "core/policy/catalogue.h"

#include <utility>

#include "core/common/status_macros.h"
#include "core/space/search_space.h"

namespace metaopt::policy {

absl::Status AddModelCatalogue(const registry::LoadedModel* model,
                               v1::StudySpec& spec) {
  if (spec.algorithm().kind() != v1::ALGORITHM_KIND_PMF ||
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
