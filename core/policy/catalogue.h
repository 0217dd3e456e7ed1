// The candidate catalogue a study runs over when its algorithm takes it from
// the study's registry model.
#ifndef METAOPT_CORE_POLICY_CATALOGUE_H_
#define METAOPT_CORE_POLICY_CATALOGUE_H_

#include "absl/status/status.h"
#include "core/registry/artifact.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::policy {

// A PMF study without candidates runs over its model's whole catalogue:
// fills `spec.candidates` (a canonical spec) with the entries of `model`'s
// catalogue that are configurations of the study's space, canonical, in
// catalogue order, so that exhaustion, duplicate checks and external
// observations are exact. Leaves other specs, and any spec without a model
// (null), as they are. Errors only if the spec's space does not build.
// Thread-safe.
absl::Status AddModelCatalogue(const registry::LoadedModel* model,
                               v1::StudySpec& spec);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_CATALOGUE_H_
