#include "core/study/suggestion.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/common/proto_time.h"
#include "core/policy/random_policy.h"
#include "core/space/search_space.h"
#include "core/study/request_validation.h"

namespace metaopt::study {
namespace {

// Each Suggest that runs the policy updates the study's cost estimate to
// max(measured, kCostDecay * previous): a slow run is remembered at once and
// forgotten over a few faster ones.
constexpr double kCostDecay = 0.75;

}  // namespace

space::Rng SuggestRng(const v1::StudySpec& spec, size_t trial_count) {
  std::seed_seq seq{static_cast<uint32_t>(spec.seed()),
                    static_cast<uint32_t>(spec.seed() >> 32),
                    static_cast<uint32_t>(trial_count), 0x6d657461u};
  return space::Rng(seq);
}

std::string DeadlineFallbackReason(absl::Duration left, absl::Duration cost,
                                   absl::Duration margin,
                                   const std::string& policy_name) {
  if (left >= margin + cost) return "";
  return absl::StrCat(
      DurationText(left), " left before the deadline, less than the ",
      DurationText(cost), " ", policy_name, " recently took plus a ",
      DurationText(margin), " margin");
}

absl::Duration NextSuggestCost(absl::Duration previous,
                               absl::Duration measured) {
  return std::max(measured, previous * kCostDecay);
}

int DropHeldAndRepeated(const policy::StudyView& study,
                        std::vector<v1::Configuration>& configurations) {
  const bool catalogue = !study.spec->candidates().empty();
  policy::HeldKeys scratch;
  const policy::HeldKeys* held =
      catalogue ? &policy::HeldConfigurationKeys(study, &scratch) : nullptr;
  absl::flat_hash_set<std::string> seen;
  size_t kept = 0;
  for (v1::Configuration& config : configurations) {
    std::string key = space::ConfigurationKey(config);
    if (held != nullptr && held->contains(key)) continue;
    if (!seen.insert(std::move(key)).second) continue;
    if (&configurations[kept] != &config) {
      configurations[kept] = std::move(config);
    }
    ++kept;
  }
  const int dropped = static_cast<int>(configurations.size() - kept);
  configurations.resize(kept);
  return dropped;
}

std::vector<v1::Trial> NewTrials(std::vector<v1::Configuration> configurations,
                                 int64_t first_id, const NewTrialInfo& info) {
  const google::protobuf::Timestamp create_time =
      ToProtoTimestamp(info.create_time);
  const google::protobuf::Timestamp lease_end =
      ToProtoTimestamp(info.create_time + info.lease);
  std::vector<v1::Trial> created;
  created.reserve(configurations.size());
  for (v1::Configuration& config : configurations) {
    v1::Trial trial;
    trial.set_id(first_id + static_cast<int64_t>(created.size()));
    *trial.mutable_configuration() = std::move(config);
    trial.set_state(v1::TRIAL_STATE_ACTIVE);
    trial.set_client_id(info.client_id);
    trial.set_study_incarnation(info.study_incarnation);
    *trial.mutable_create_time() = create_time;
    *trial.mutable_lease_expire_time() = lease_end;
    auto& metadata = *trial.mutable_metadata();
    metadata["policy"] = info.source;
    if (!info.fallback_reason.empty()) {
      metadata["source"] = "deadline-fallback";
      metadata["reason"] = info.fallback_reason;
    }
    created.push_back(std::move(trial));
  }
  return created;
}

std::vector<v1::Trial> SuggestedTrials(
    const policy::StudyView& study, int64_t trial_count,
    std::vector<v1::Configuration> configurations, const NewTrialInfo& info,
    int* dropped) {
  *dropped = DropHeldAndRepeated(study, configurations);
  std::vector<v1::Configuration> replacements;
  if (*dropped > 0) {
    policy::HeldConfigurations held(study);
    held.Add(configurations);
    space::Rng rng =
        SuggestRng(*study.spec, trial_count + configurations.size());
    replacements = policy::RandomPolicy::Sample(study, held, *dropped, rng);
  }
  std::vector<v1::Trial> created =
      NewTrials(std::move(configurations), trial_count + 1, info);
  if (!replacements.empty()) {
    NewTrialInfo replacement_info = info;
    replacement_info.source = "random";
    for (v1::Trial& trial :
         NewTrials(std::move(replacements), trial_count + 1 + created.size(),
                   replacement_info)) {
      created.push_back(std::move(trial));
    }
  }
  return created;
}

}  // namespace metaopt::study
