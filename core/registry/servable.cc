#include "core/registry/servable.h"

#include <cstdint>
#include <string>
#include <utility>

#include "core/common/status_macros.h"
#include "core/surrogate/deeppipe_model.h"
#include "core/surrogate/grosi_model.h"
#include "core/surrogate/pmf_model.h"

namespace metaopt::registry {
namespace {

// Model::FromArtifact(artifact), shared.
template <typename Model>
absl::StatusOr<std::shared_ptr<const Model>> Decode(
    const v1::ModelArtifact& artifact) {
  METAOPT_ASSIGN_OR_RETURN(Model model, Model::FromArtifact(artifact));
  return std::make_shared<const Model>(std::move(model));
}

const v1::Tensor* FindTensor(const v1::ModelArtifact& artifact,
                             const std::string& name) {
  for (const v1::Tensor& tensor : artifact.tensors()) {
    if (tensor.name() == name) return &tensor;
  }
  return nullptr;
}

// Null unless both tensors are there and fit the training tasks and the
// catalogue (a PMF model serves without them: its warm start then keeps the
// study's order).
std::shared_ptr<const PmfRanks> DecodePmfRanks(
    const v1::ModelArtifact& artifact) {
  const v1::Tensor* top = FindTensor(artifact, "training_top_entries");
  const v1::Tensor* mean_ranks = FindTensor(artifact, "mean_ranks");
  const int T = artifact.training_features_size();
  const int N = artifact.catalogue_size();
  if (top == nullptr || top->shape_size() != 2 || top->shape(0) != T ||
      top->shape(1) < 1 || mean_ranks == nullptr ||
      mean_ranks->values_size() != N) {
    return nullptr;
  }
  const int64_t M = top->shape(1);
  auto ranks = std::make_shared<PmfRanks>();
  ranks->top_entries.resize(T);
  for (int t = 0; t < T; ++t) {
    ranks->top_entries[t].reserve(M);
    for (int64_t k = 0; k < M; ++k) {
      const double v = top->values(t * M + k);
      ranks->top_entries[t].push_back(v >= 0 && v < N ? static_cast<int>(v)
                                                      : -1);
    }
  }
  ranks->mean_ranks.assign(mean_ranks->values().begin(),
                           mean_ranks->values().end());
  return ranks;
}

}  // namespace

absl::StatusOr<Servable> DecodeServable(const v1::ModelArtifact& artifact) {
  Servable servable;
  // Braces: each assignment declares a temporary.
  switch (artifact.kind()) {
    case v1::MODEL_KIND_DEEPPIPE:
    case v1::MODEL_KIND_FSBO: {
      METAOPT_ASSIGN_OR_RETURN(servable.deeppipe,
                               Decode<surrogate::DeepPipeModel>(artifact));
      break;
    }
    case v1::MODEL_KIND_PMF: {
      METAOPT_ASSIGN_OR_RETURN(servable.pmf,
                               Decode<surrogate::PmfModel>(artifact));
      servable.pmf_ranks = DecodePmfRanks(artifact);
      break;
    }
    case v1::MODEL_KIND_GROSI: {
      METAOPT_ASSIGN_OR_RETURN(servable.grosi,
                               Decode<surrogate::GrosiModel>(artifact));
      break;
    }
    default:
      break;
  }
  return servable;
}

}  // namespace metaopt::registry
