#ifndef METAOPT_CORE_POLICY_RANDOM_POLICY_H_
#define METAOPT_CORE_POLICY_RANDOM_POLICY_H_

#include "core/policy/policy.h"

namespace metaopt::policy {

// Uniform random search. Over a catalogue: a uniform sample without replacement
// of the untried entries (fewer than `count` once they run out). Otherwise:
// uniform samples of the space (log-uniform where declared), distinct from each
// other and from every configuration already held by a trial. Thread-safe
// (stateless).
//
// With a zero-shot design (the portfolio or task-aware design of a registry
// model the study names), its entries come first.
class RandomPolicy final : public Policy {
 public:
  explicit RandomPolicy(ZeroShotDesign design = {})
      : design_(std::move(design)) {}

  // The sampling itself, shared with policies that fall back to random search
  // (initial designs): never a configuration in `held` (by default the
  // study's held ones).
  static std::vector<v1::Configuration> Sample(const StudyView& study,
                                               const HeldConfigurations& held,
                                               int count, space::Rng& rng);
  static std::vector<v1::Configuration> Sample(const StudyView& study,
                                               int count, space::Rng& rng);
  // As Sample, but over a catalogue each draw first picks a structure (the
  // algorithm of every stage) uniformly among those of the untried entries,
  // then one of its untried entries uniformly, as sampling the space and
  // snapping to the catalogue would: an algorithm with few entries is drawn
  // as often as one with many. Over a space, Sample.
  static std::vector<v1::Configuration> SampleStructures(
      const StudyView& study, const HeldConfigurations& held, int count,
      space::Rng& rng);

  absl::StatusOr<SuggestResult> Suggest(const StudyView& study, int count,
                                        space::Rng& rng) const override;
  std::string name() const override { return "random"; }
  // Reads only the held keys (NextPortfolioEntries, Sample).
  bool ReadsTrials() const override { return false; }

 private:
  const ZeroShotDesign design_;
};

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_RANDOM_POLICY_H_
