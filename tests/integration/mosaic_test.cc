// Mosaic through the server: structured suggestions over a multi-stage space,
// batches with pending trials, spec validation at CreateStudy, and identical
// suggestions after a restart.
#include <cmath>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class MosaicTest : public ::testing::Test {
 protected:
  MosaicTest() : server_(Options()) {}

  server::ServerOptions Options() {
    server::ServerOptions options;
    options.db_path = dir_.File("metaopt.db");
    options.models_dir = dir_.File("models");
    return options;
  }

  grpc::Status Create(const std::string& id, const v1::StudySpec& spec) {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = spec;
    v1::CreateStudyResponse response;
    return server_.stub().CreateStudy(ContextWithDeadline().get(), request,
                                      &response);
  }

  std::vector<v1::Trial> Suggest(const std::string& id, int count) {
    v1::SuggestRequest request;
    request.set_study_id(id);
    request.set_count(count);
    v1::SuggestResponse response;
    grpc::Status status =
        server_.stub().Suggest(ContextWithDeadline().get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return {response.trials().begin(), response.trials().end()};
  }

  void Observe(const std::string& id, const v1::Trial& trial) {
    v1::ObserveRequest request;
    request.set_study_id(id);
    request.set_trial_id(trial.id());
    request.set_value(PipelineAccuracy(trial.configuration()));
    v1::ObserveResponse response;
    grpc::Status status =
        server_.stub().Observe(ContextWithDeadline().get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
  }

  static v1::StudySpec MosaicSpec() {
    v1::StudySpec spec = PipelineSpec(v1::ALGORITHM_KIND_MOSAIC, 11);
    spec.mutable_algorithm()->set_initial_trials(4);
    return spec;
  }

  ScopedTempDir dir_;
  TestServer server_;
};

TEST_F(MosaicTest, StructuredSuggestionsResumeIdenticallyAfterRestart) {
  // Two identical studies get identical histories; one is asked before a
  // restart, the other after: the persisted tree gives the same suggestions.
  for (const char* id : {"mosaic", "twin"}) {
    ASSERT_TRUE(Create(id, MosaicSpec()).ok());
  }
  absl::flat_hash_set<std::string> sources;
  for (int round = 0; round < 6; ++round) {
    std::vector<v1::Trial> a = Suggest("mosaic", 2);
    std::vector<v1::Trial> b = Suggest("twin", 2);
    ASSERT_EQ(a.size(), 2u);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_NE(a[0].configuration().DebugString(),
              a[1].configuration().DebugString());
    for (int i = 0; i < 2; ++i) {
      EXPECT_THAT(a[i].metadata().at("policy"), StartsWith("mosaic/"));
      sources.insert(a[i].metadata().at("policy"));
      ASSERT_EQ(a[i].configuration().assignments_size(), 2);
      EXPECT_EQ(a[i].configuration().DebugString(),
                b[i].configuration().DebugString());
      Observe("mosaic", a[i]);
      Observe("twin", b[i]);
    }
  }
  EXPECT_TRUE(sources.contains("mosaic/initial-design"));
  EXPECT_TRUE(sources.contains("mosaic/mcts"));
  // A pending trial in each study, then the restart.
  const std::vector<v1::Trial> pending_a = Suggest("mosaic", 1);
  const std::vector<v1::Trial> pending_b = Suggest("twin", 1);
  ASSERT_EQ(pending_a.size(), 1u);
  EXPECT_EQ(pending_a[0].configuration().DebugString(),
            pending_b[0].configuration().DebugString());
  const std::vector<v1::Trial> before = Suggest("twin", 3);
  server_.Restart();
  const std::vector<v1::Trial> after = Suggest("mosaic", 3);
  ASSERT_EQ(before.size(), 3u);
  ASSERT_EQ(after.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(after[i].metadata().at("policy"), "mosaic/mcts");
    EXPECT_EQ(after[i].configuration().DebugString(),
              before[i].configuration().DebugString());
    EXPECT_NE(after[i].configuration().DebugString(),
              pending_a[0].configuration().DebugString());
  }
}

TEST_F(MosaicTest, CreateStudyValidatesTheMosaicOptions) {
  v1::StudySpec spec = MosaicSpec();
  spec.mutable_algorithm()->mutable_mosaic()->add_stage_order("regressor");
  grpc::Status status = Create("bad-order", spec);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("stage_order[0]: \"regressor\" is not a stage"));

  spec = MosaicSpec();
  spec.mutable_algorithm()->mutable_mosaic()->set_exploration(-1);
  status = Create("bad-c", spec);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("mosaic.exploration"));

  // The scaler decided first, by request.
  spec = MosaicSpec();
  spec.mutable_algorithm()->mutable_mosaic()->add_stage_order("scaler");
  EXPECT_TRUE(Create("scaler-first", spec).ok());
  EXPECT_EQ(Suggest("scaler-first", 2).size(), 2u);
}

}  // namespace
}  // namespace metaopt::testing
