#include "core/policy/mosaic_options.h"

#include <cmath>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace metaopt::policy {

absl::StatusOr<MosaicPolicyOptions> MosaicOptionsFromSpec(
    const v1::StudySpec& spec, MosaicPolicyOptions base) {
  const v1::MosaicOptions& m = spec.algorithm().mosaic();
  auto bad = [](const char* field, double value, const char* rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.algorithm.mosaic.", field, ": ", value, " ", rule));
  };
  if (m.exploration() < 0 || !std::isfinite(m.exploration())) {
    return bad("exploration", m.exploration(), "must be finite and >= 0");
  }
  if (m.widening_exponent() < 0 || m.widening_exponent() > 1 ||
      std::isnan(m.widening_exponent())) {
    return bad("widening_exponent", m.widening_exponent(),
               "is outside (0, 1] (0: the default 0.6)");
  }
  if (m.prior_samples() < 0)
    return bad("prior_samples", m.prior_samples(), "is negative");
  if (m.playout_samples() < 0) {
    return bad("playout_samples", m.playout_samples(), "is negative");
  }
  if (m.random_per_algorithm() < 0) {
    return bad("random_per_algorithm", m.random_per_algorithm(), "is negative");
  }
  if (m.forest_trees() < 0)
    return bad("forest_trees", m.forest_trees(), "is negative");
  if (m.exploration() > 0) base.mcts.exploration = m.exploration();
  if (m.widening_exponent() > 0)
    base.mcts.widening_exponent = m.widening_exponent();
  if (m.prior_samples() > 0) base.prior_samples = m.prior_samples();
  if (m.playout_samples() > 0) base.playout_samples = m.playout_samples();
  if (m.has_random_per_algorithm())
    base.random_per_algorithm = m.random_per_algorithm();
  if (m.forest_trees() > 0) base.forest.num_trees = m.forest_trees();
  return base;
}

absl::StatusOr<std::vector<int>> MosaicLevels(const v1::StudySpec& spec) {
  const v1::SearchSpace& space = spec.search_space();
  absl::flat_hash_map<std::string, int> stage_index;
  for (int s = 0; s < space.stages_size(); ++s) {
    stage_index[space.stages(s).name()] = s;
  }
  std::vector<bool> placed(space.stages_size(), false);
  std::vector<int> levels;
  const auto& order = spec.algorithm().mosaic().stage_order();
  for (int i = 0; i < order.size(); ++i) {
    auto it = stage_index.find(order[i]);
    if (it == stage_index.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.algorithm.mosaic.stage_order[", i, "]: \"",
                       order[i], "\" is not a stage of the search space"));
    }
    if (placed[it->second]) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.algorithm.mosaic.stage_order[", i, "]: \"",
                       order[i], "\" is listed twice"));
    }
    placed[it->second] = true;
    if (space.stages(it->second).algorithms_size() > 1) {
      levels.push_back(it->second);
    }
  }
  for (int s = space.stages_size() - 1; s >= 0; --s) {
    if (!placed[s] && space.stages(s).algorithms_size() > 1)
      levels.push_back(s);
  }
  return levels;
}

}  // namespace metaopt::policy
