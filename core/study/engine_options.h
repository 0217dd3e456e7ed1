// The study engine's configuration.
#ifndef METAOPT_CORE_STUDY_ENGINE_OPTIONS_H_
#define METAOPT_CORE_STUDY_ENGINE_OPTIONS_H_

#include <cstdint>
#include <functional>

#include "absl/time/time.h"
#include "core/space/search_space.h"

namespace metaopt::study {

// Defaults are the hard limits of core/space; CheckEngineOptions rejects
// values beyond them.
struct EngineOptions {
  // Largest `count` a Suggest may ask for.
  int max_suggest_count = 1000;
  // Largest page a List call returns; a page_size of 0 means
  // `default_page_size`.
  int max_page_size = 1000;
  int default_page_size = 100;
  // Largest ListStudies page in serialized bytes (specs can be large): a page
  // ends before the study that would cross it, but holds at least one study.
  // The server sets it below its largest message.
  int64_t max_page_bytes = int64_t{4} << 20;
  // Size limits of a study spec at CreateStudy (INVALID_ARGUMENT beyond them).
  int max_stages = space::kMaxStages;
  int max_algorithms_per_stage = space::kMaxAlgorithmsPerStage;
  int max_parameters_per_algorithm = space::kMaxParametersPerAlgorithm;
  int max_candidates = space::kMaxCandidates;
  // How long an ACTIVE trial stays leased to its client after Suggest handed it
  // out, Heartbeat or the same client_id's next Suggest; then it turns STALE.
  absl::Duration trial_lease = absl::Hours(1);
  // Time a Suggest keeps in hand before its deadline for storing and sending
  // the answer. When less than this margin plus the study's recent policy
  // latency remains, Suggest answers with random (untried) configurations
  // instead of running the policy.
  absl::Duration deadline_margin = absl::Milliseconds(50);
  // Studies one owner may hold; CreateStudy of one more is RESOURCE_EXHAUSTED.
  // 0: no limit.
  int max_studies_per_owner = 0;
  // Policy computations that saw the study change meanwhile are retried this
  // many times before the last attempt runs under the study lock.
  int optimistic_attempts = 2;
  // A study whose policy's recent Suggest took less than this (random search,
  // initial designs) runs the policy under the study lock, on the live
  // trials: copying a snapshot of a large study would cost more. 0: always on
  // a snapshot first.
  absl::Duration max_locked_policy_cost = absl::Milliseconds(1);
  // Source of "now" for timestamps (tests inject a fake).
  std::function<absl::Time()> clock = [] { return absl::Now(); };
};

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_ENGINE_OPTIONS_H_
