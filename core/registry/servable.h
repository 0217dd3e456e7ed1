// The typed models a model version decodes to (TensorFlow Serving's
// servable): built once, when the registry loads the version, from its
// validated artifact, and shared by every study bound to that version, so
// that building a study's policy copies or reads a decoded model instead of
// parsing the artifact's tensors again.
#ifndef METAOPT_CORE_REGISTRY_SERVABLE_H_
#define METAOPT_CORE_REGISTRY_SERVABLE_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "metaopt/v1/model.pb.h"

namespace metaopt::surrogate {
class DeepPipeModel;
class GrosiModel;
class PmfModel;
}  // namespace metaopt::surrogate

namespace metaopt::registry {

// A PMF model's warm-start ranks: its tensors "training_top_entries" [T, M]
// and "mean_ranks" [N] (train::AddPmfWarmStartData), for T training tasks
// and N catalogue entries. Immutable once built; thread-safe.
struct PmfRanks {
  // Row t: the catalogue entries best on training task t, best first (M of
  // them); -1 where the tensor holds no entry of the catalogue.
  std::vector<std::vector<int>> top_entries;
  // Entry n's mean rank over all training tasks.
  std::vector<double> mean_ranks;
};

// What a policy uses of a model version, decoded: at most one model, the one
// of the artifact's kind (portfolio models have none: their artifact is all
// there is). Immutable once built, and so are the models it shares;
// thread-safe. A policy that changes a model (partial binding, task
// features, a study's own parameters, fine-tuning) changes a copy.
struct Servable {
  // MODEL_KIND_DEEPPIPE and MODEL_KIND_FSBO: the meta-learned network with its
  // GP kernel.
  std::shared_ptr<const surrogate::DeepPipeModel> deeppipe;
  // MODEL_KIND_PMF: the latent model, and its warm-start ranks (null if the
  // artifact has none, or none that fit its catalogue and training tasks).
  std::shared_ptr<const surrogate::PmfModel> pmf;
  std::shared_ptr<const PmfRanks> pmf_ranks;
  // MODEL_KIND_GROSI: the dataset-conditioned surrogate.
  std::shared_ptr<const surrogate::GrosiModel> grosi;
};

// Decodes a validated artifact (registry::ValidateArtifact) into the model of
// its kind. INVALID_ARGUMENT from the model's reader (e.g.
// surrogate::DeepPipeModel::FromArtifact) if it does not decode: the version
// is broken.
absl::StatusOr<Servable> DecodeServable(const v1::ModelArtifact& artifact);

}  // namespace metaopt::registry

#endif  // METAOPT_CORE_REGISTRY_SERVABLE_H_
