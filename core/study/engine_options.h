// The study engine's configuration.
#ifndef METAOPT_CORE_STUDY_ENGINE_OPTIONS_H_
#define METAOPT_CORE_STUDY_ENGINE_OPTIONS_H_

#include <cstdint>
#include <functional>

#include "absl/time/time.h"
#include "core/space/search_space.h"
#include "core/storage/storage.h"

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
  // Largest ListStudies and ListTrials page in serialized bytes (specs and
  // trials can be large): a page ends before the study or trial that would
  // cross it, but holds at least one. It also bounds one trial: an Observe or
  // ReportIntermediate whose trial would serialize to more is
  // RESOURCE_EXHAUSTED and not stored, so every stored trial fits a response.
  // The server sets it below its largest message.
  int64_t max_page_bytes = int64_t{4} << 20;
  // Size limits of a study spec at CreateStudy (INVALID_ARGUMENT beyond them).
  int max_stages = space::kMaxStages;
  int max_algorithms_per_stage = space::kMaxAlgorithmsPerStage;
  int max_parameters_per_algorithm = space::kMaxParametersPerAlgorithm;
  int max_candidates = space::kMaxCandidates;
  // Largest number of parameters over the whole space. A study's resident
  // memory grows by about 1.7 KB per parameter (bench/spec_memory.py), so the
  // default keeps the largest accepted space near 30 MB.
  int max_parameters = kDefaultMaxParameters;
  static constexpr int kDefaultMaxParameters = 16384;
  static constexpr int kHardMaxParameters = space::kMaxStages *
                                            space::kMaxAlgorithmsPerStage *
                                            space::kMaxParametersPerAlgorithm;
  // Largest encoded dimension (space::Encoder: one column per numeric
  // parameter, per categorical value and per algorithm of a stage) of a study
  // whose kind fits a surrogate over encoded configurations (GP, DeepPipe,
  // Mosaic, GROSI). Their Suggest cost and transient memory grow with it
  // (docs/reliability.md, measured with bench/spec_memory.py: about 0.5 s and
  // 180 MB for one GP Suggest at 1,150 dimensions, 18 s and 450 MB at 35,000).
  // RANDOM and PMF studies are bounded by the space limits alone.
  int max_model_dimension = kDefaultMaxModelDimension;
  static constexpr int kDefaultMaxModelDimension = 2048;
  static constexpr int kHardMaxModelDimension = 65536;
  // Entries of spec.dataset_features at CreateStudy (INVALID_ARGUMENT beyond
  // it). Each costs about 200 bytes per study in memory and storage; the
  // default is far above the meta-feature sets the models read (PyMFE and
  // Metabu sets hold a few hundred).
  int max_dataset_features = kDefaultMaxDatasetFeatures;
  static constexpr int kDefaultMaxDatasetFeatures = 1024;
  static constexpr int kHardMaxDatasetFeatures = 1 << 20;
  // Entries of the metrics map of one Observe or ReportIntermediate
  // (INVALID_ARGUMENT beyond it).
  int max_metrics = kDefaultMaxMetrics;
  static constexpr int kDefaultMaxMetrics = 256;
  static constexpr int kHardMaxMetrics = 4096;
  // Intermediate values (ReportIntermediate steps) one trial keeps; one more
  // is RESOURCE_EXHAUSTED and not stored.
  int max_intermediate_values = kDefaultMaxIntermediateValues;
  static constexpr int kDefaultMaxIntermediateValues = 10000;
  static constexpr int kHardMaxIntermediateValues = 1000000;
  // Serialized bytes of one trial's intermediate values (with their metrics);
  // a report that would take the trial past it is RESOURCE_EXHAUSTED and not
  // stored. It also bounds a trial in a response (GetTrial, and a report's
  // answer unless it omits the values).
  int64_t max_trial_intermediate_bytes = kDefaultMaxTrialIntermediateBytes;
  static constexpr int64_t kDefaultMaxTrialIntermediateBytes = int64_t{1} << 20;
  // Serialized bytes of the intermediate values of all trials of one study
  // (RESOURCE_EXHAUSTED beyond it, nothing stored): a loaded study keeps them
  // in memory.
  int64_t max_study_intermediate_bytes = kDefaultMaxStudyIntermediateBytes;
  static constexpr int64_t kDefaultMaxStudyIntermediateBytes = int64_t{128}
                                                               << 20;
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
  // Studies the engine keeps loaded in memory. Beyond it, the least recently
  // used studies that no call is using are dropped from memory (down to 7/8 of
  // the limit at once); they stay in storage and load again on their next
  // call, as after a restart. 0: no limit.
  int max_loaded_studies = kDefaultMaxLoadedStudies;
  static constexpr int kDefaultMaxLoadedStudies = 4096;
  // Called after an Observe was stored, with the study's key and how many
  // COMPLETED trials it now holds (the history learner's trigger,
  // core/history). Runs under the study's lock: it must be quick, thread-safe
  // and must not call back into the engine. Empty: none.
  std::function<void(const storage::StudyKey& key, int64_t completed_trials)>
      on_observed;
  // Background fits (FitPreparer): threads that prepare a study's policy fit
  // after each Observe (0: none; Suggests then fit inline), and how many
  // studies keep a prepared fit in memory at once.
  int prepare_threads = 1;
  int max_prepared_fits = 64;
  // Nice value of those threads on Linux (0..19). 0 by default: a Suggest
  // that arrives while its fit is being prepared waits for it, so a lower
  // priority would make that Suggest slower on a loaded machine (priority
  // inversion) than fitting inline; the thread count bounds their share.
  int prepare_nice = 0;
  // Source of "now" for timestamps (tests inject a fake).
  std::function<absl::Time()> clock = [] { return absl::Now(); };
};

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_ENGINE_OPTIONS_H_
