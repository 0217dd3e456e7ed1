// Helpers shared by the storage tests: proto matchers, fixtures.
#ifndef METAOPT_TESTS_TESTUTIL_STORAGE_FIXTURES_H_
#define METAOPT_TESTS_TESTUTIL_STORAGE_FIXTURES_H_

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "core/storage/storage.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "metaopt/v1/study.pb.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::storage {

using ::metaopt::testing::ScopedTempDir;

MATCHER_P(EqualsProto, expected, "equals " + expected.ShortDebugString()) {
  return google::protobuf::util::MessageDifferencer::Equals(arg, expected);
}

// The key of study `study_id` of `owner` ("": the shared namespace).
inline StudyKey Key(const std::string& study_id,
                    const std::string& owner = "") {
  return StudyKey{owner, study_id};
}

// A study with every stored field set (and the derived ones too).
inline v1::Study MakeStudy(const std::string& study_id) {
  v1::Study study;
  study.set_study_id(study_id);
  v1::StudySpec& spec = *study.mutable_spec();
  spec.set_seed(42);
  spec.mutable_objective()->set_name("accuracy");
  spec.mutable_objective()->set_goal(v1::GOAL_MAXIMIZE);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  (*spec.mutable_dataset_features())["rows"] = 1000;
  v1::Stage& stage = *spec.mutable_search_space()->add_stages();
  stage.set_name("model");
  v1::Algorithm& algorithm = *stage.add_algorithms();
  algorithm.set_name("svm");
  v1::Parameter& parameter = *algorithm.add_parameters();
  parameter.set_name("C");
  parameter.mutable_float_domain()->set_low(1e-3);
  parameter.mutable_float_domain()->set_high(1e3);
  parameter.mutable_float_domain()->set_log(true);
  study.mutable_create_time()->set_seconds(1700000000);
  study.mutable_create_time()->set_nanos(123456000);
  study.set_bound_model("deeppipe@3");
  return study;
}

inline v1::Trial MakeTrial(int64_t id,
                           v1::TrialState state = v1::TRIAL_STATE_ACTIVE) {
  v1::Trial trial;
  trial.set_id(id);
  trial.set_state(state);
  trial.set_client_id("worker-" + std::to_string(id % 3));
  v1::Assignment& assignment =
      *trial.mutable_configuration()->add_assignments();
  assignment.set_stage("model");
  assignment.set_algorithm("svm");
  (*assignment.mutable_parameters())["C"].set_number(0.5 *
                                                     static_cast<double>(id));
  if (state == v1::TRIAL_STATE_COMPLETED) {
    trial.set_value(0.25 * static_cast<double>(id));
    (*trial.mutable_metrics())["loss"] = 1.0 / static_cast<double>(id + 1);
  }
  trial.mutable_create_time()->set_seconds(1700000000 + id);
  return trial;
}

}  // namespace metaopt::storage

#endif  // METAOPT_TESTS_TESTUTIL_STORAGE_FIXTURES_H_
