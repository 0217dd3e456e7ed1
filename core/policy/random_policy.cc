#include "core/policy/random_policy.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace metaopt::policy {

std::vector<v1::Configuration> RandomPolicy::Sample(const StudyView& study,
                                                    int count,
                                                    space::Rng& rng) {
  const HeldConfigurations held(study);
  return Sample(study, held, count, rng);
}

std::vector<v1::Configuration> RandomPolicy::Sample(
    const StudyView& study, const HeldConfigurations& held, int count,
    space::Rng& rng) {
  std::vector<v1::Configuration> out;
  if (!study.spec->candidates().empty()) {
    std::vector<const v1::Configuration*> untried =
        UntriedCandidates(study, held);
    const int take = std::min<int>(count, static_cast<int>(untried.size()));
    // Partial Fisher-Yates: the first `take` entries become a uniform sample
    // without replacement.
    for (int i = 0; i < take; ++i) {
      const size_t pick = i + space::UniformIndex(rng, untried.size() - i);
      std::swap(untried[i], untried[pick]);
      out.push_back(*untried[i]);
    }
    return out;
  }
  absl::flat_hash_set<std::string> drawn;
  // Tiny discrete spaces can run out of fresh points: give up after a bounded
  // number of draws.
  const int max_draws = 100 * count + 1000;
  for (int draw = 0; draw < max_draws && static_cast<int>(out.size()) < count;
       ++draw) {
    v1::Configuration config = study.space->Sample(rng);
    std::string key = space::ConfigurationKey(config);
    if (!held.contains(key) && drawn.insert(std::move(key)).second)
      out.push_back(std::move(config));
  }
  return out;
}

std::vector<v1::Configuration> RandomPolicy::SampleStructures(
    const StudyView& study, const HeldConfigurations& held, int count,
    space::Rng& rng) {
  if (study.spec->candidates().empty()) return Sample(study, held, count, rng);
  // The untried entries by structure, structures in catalogue order.
  std::vector<std::vector<const v1::Configuration*>> groups;
  absl::flat_hash_map<std::string, int> group_of;
  for (const v1::Configuration* c : UntriedCandidates(study, held)) {
    std::string structure;
    for (const v1::Assignment& a : c->assignments()) {
      absl::StrAppend(&structure, a.algorithm(), "\n");
    }
    auto [it, inserted] =
        group_of.emplace(std::move(structure), static_cast<int>(groups.size()));
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(c);
  }
  std::vector<v1::Configuration> out;
  while (static_cast<int>(out.size()) < count && !groups.empty()) {
    const size_t g = space::UniformIndex(rng, groups.size());
    std::vector<const v1::Configuration*>& group = groups[g];
    const size_t pick = space::UniformIndex(rng, group.size());
    out.push_back(*group[pick]);
    group[pick] = group.back();
    group.pop_back();
    if (group.empty()) {
      groups[g] = std::move(groups.back());
      groups.pop_back();
    }
  }
  return out;
}

absl::StatusOr<SuggestResult> RandomPolicy::Suggest(const StudyView& study,
                                                    int count,
                                                    space::Rng& rng) const {
  SuggestResult result;
  result.configurations =
      NextPortfolioEntries(study, design_.configurations, count);
  if (result.configurations.empty()) {
    result.configurations = Sample(study, count, rng);
    return result;
  }
  result.source = absl::StrCat("random/", design_.source);
  const int remaining = count - static_cast<int>(result.configurations.size());
  if (remaining > 0) {
    HeldConfigurations held(study);
    held.Add(result.configurations);
    for (v1::Configuration& c : Sample(study, held, remaining, rng)) {
      result.configurations.push_back(std::move(c));
    }
  }
  return result;
}

}  // namespace metaopt::policy
