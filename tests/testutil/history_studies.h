// Test support for the history export and learner: studies run through a
// StudyEngine with a known objective.
#ifndef METAOPT_TESTS_TESTUTIL_HISTORY_STUDIES_H_
#define METAOPT_TESTS_TESTUTIL_HISTORY_STUDIES_H_

#include <set>
#include <string>

#include "absl/status/status.h"
#include "core/common/status_macros.h"
#include "core/study/study_engine.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::history {

inline study::CallContext OwnerContext(const std::string& owner) {
  study::CallContext context;
  context.owner = owner;
  return context;
}

// Creates study `id` of `owner` with `spec` and runs `trials` Suggest/Observe
// rounds, observing testing::PipelineAccuracy for PipelineSpec spaces (x for
// others); the trials whose round (1-based) is in `failed` are FAILED and in
// `infeasible` INFEASIBLE.
inline absl::Status RunStudy(study::StudyEngine& engine,
                             const std::string& owner, const std::string& id,
                             const v1::StudySpec& spec, int trials,
                             const std::set<int>& failed = {},
                             const std::set<int>& infeasible = {}) {
  const study::CallContext context = OwnerContext(owner);
  v1::CreateStudyRequest create;
  create.set_study_id(id);
  *create.mutable_spec() = spec;
  METAOPT_RETURN_IF_ERROR(engine.CreateStudy(create, context).status());
  for (int round = 1; round <= trials; ++round) {
    v1::SuggestRequest suggest;
    suggest.set_study_id(id);
    METAOPT_ASSIGN_OR_RETURN(v1::SuggestResponse suggested,
                             engine.Suggest(suggest, context));
    if (suggested.trials().empty()) break;
    const v1::Trial& trial = suggested.trials(0);
    v1::ObserveRequest observe;
    observe.set_study_id(id);
    observe.set_trial_id(trial.id());
    if (failed.count(round) || infeasible.count(round)) {
      observe.mutable_failure()->set_state(failed.count(round)
                                               ? v1::TRIAL_STATE_FAILED
                                               : v1::TRIAL_STATE_INFEASIBLE);
      observe.mutable_failure()->set_reason("test");
    } else {
      const v1::Configuration& config = trial.configuration();
      observe.set_value(
          config.assignments_size() == 2
              ? testing::PipelineAccuracy(config)
              : config.assignments(0).parameters().at("x").number());
    }
    METAOPT_RETURN_IF_ERROR(engine.Observe(observe, context).status());
  }
  return absl::OkStatus();
}

}  // namespace metaopt::history

#endif  // METAOPT_TESTS_TESTUTIL_HISTORY_STUDIES_H_
