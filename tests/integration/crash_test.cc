// kill -9 durability and graceful shutdown of the real metaopt-server binary.
#include <signal.h>
#include <sys/wait.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "metaopt/v1/optimizer_service.grpc.pb.h"
#include "tests/integration/server_process.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::testing {
namespace {

std::unique_ptr<v1::OptimizerService::Stub> Connect(int port) {
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                     grpc::InsecureChannelCredentials());
  return v1::OptimizerService::NewStub(channel);
}

class CrashTest : public ::testing::Test {
 protected:
  ServerProcess MakeServer() {
    return ServerProcess(
        METAOPT_SERVER_BINARY,
        {"--listen=127.0.0.1:0", "--db=" + dir_.File("metaopt.db"),
         "--models=" + dir_.File("models")},
        dir_.File("server.log"));
  }

  // Creates `study_id` over PipelineSpec (or finds it, after a restart) and
  // lists its trials in `state` (unspecified: all).
  static void CreateAndList(v1::OptimizerService::Stub& stub,
                            const std::string& study_id, v1::TrialState state,
                            v1::CreateStudyResponse* created,
                            v1::ListTrialsResponse* listed) {
    v1::CreateStudyRequest create;
    create.set_study_id(study_id);
    *create.mutable_spec() = PipelineSpec();
    ASSERT_TRUE(
        stub.CreateStudy(ContextWithDeadline().get(), create, created).ok());
    v1::ListTrialsRequest list;
    list.set_study_id(study_id);
    list.set_page_size(1000);
    list.set_state(state);
    ASSERT_TRUE(stub.ListTrials(ContextWithDeadline().get(), list, listed).ok());
  }
  ScopedTempDir dir_;
};

TEST_F(CrashTest, AcknowledgedObservationsSurviveKill9) {
  std::map<int64_t, double> acknowledged;
  for (int cycle = 0; cycle < 3; ++cycle) {
    ServerProcess server = MakeServer();
    const int port = server.Start();
    ASSERT_GT(port, 0);
    auto stub = Connect(port);
    v1::CreateStudyResponse created;
    v1::ListTrialsResponse listed;
    ASSERT_NO_FATAL_FAILURE(CreateAndList(
        *stub, "crash", v1::TRIAL_STATE_COMPLETED, &created, &listed));
    EXPECT_EQ(created.created(), cycle == 0);
    // Everything acknowledged in earlier cycles is there.
    std::map<int64_t, double> stored;
    for (const v1::Trial& t : listed.trials()) stored[t.id()] = t.value();
    EXPECT_EQ(stored, acknowledged) << "cycle " << cycle;

    for (int i = 0; i < 15; ++i) {
      v1::SuggestRequest suggest;
      suggest.set_study_id("crash");
      suggest.set_count(2);
      v1::SuggestResponse suggested;
      ASSERT_TRUE(
          stub->Suggest(ContextWithDeadline().get(), suggest, &suggested).ok());
      // Observe the first; leave the second ACTIVE.
      v1::ObserveRequest observe;
      observe.set_study_id("crash");
      observe.set_trial_id(suggested.trials(0).id());
      observe.set_value(cycle * 100 + i);
      v1::ObserveResponse observed;
      ASSERT_TRUE(
          stub->Observe(ContextWithDeadline().get(), observe, &observed).ok());
      acknowledged[observed.trial().id()] = observed.trial().value();
    }
    const int status = server.Kill(SIGKILL);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  }
}

// A Suggest's trials are stored before its answer: killed right after a run
// of Suggests with no Observe after them, the server must still find every
// trial it handed out, with its configuration, so that no id is handed out
// twice.
TEST_F(CrashTest, AcknowledgedSuggestsSurviveKill9WithoutAnObserve) {
  std::map<int64_t, v1::Configuration> handed_out;
  for (int cycle = 0; cycle < 3; ++cycle) {
    ServerProcess server = MakeServer();
    const int port = server.Start();
    ASSERT_GT(port, 0);
    auto stub = Connect(port);
    v1::CreateStudyResponse created;
    v1::ListTrialsResponse listed;
    ASSERT_NO_FATAL_FAILURE(CreateAndList(
        *stub, "suggests", v1::TRIAL_STATE_UNSPECIFIED, &created, &listed));
    ASSERT_EQ(listed.trials_size(), static_cast<int>(handed_out.size()))
        << "cycle " << cycle;
    for (const v1::Trial& t : listed.trials()) {
      ASSERT_EQ(handed_out.count(t.id()), 1u) << "id " << t.id();
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
          t.configuration(), handed_out[t.id()]))
          << "cycle " << cycle << ", trial " << t.id() << ": stored "
          << t.configuration().ShortDebugString() << ", handed out "
          << handed_out[t.id()].ShortDebugString();
    }

    for (int i = 0; i < 20; ++i) {
      v1::SuggestRequest suggest;
      suggest.set_study_id("suggests");
      suggest.set_count(1 + i % 2);
      v1::SuggestResponse suggested;
      ASSERT_TRUE(
          stub->Suggest(ContextWithDeadline().get(), suggest, &suggested).ok());
      for (const v1::Trial& t : suggested.trials()) {
        EXPECT_EQ(handed_out.count(t.id()), 0u) << "id " << t.id();
        handed_out[t.id()] = t.configuration();
      }
    }
    const int status = server.Kill(SIGKILL);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  }
  EXPECT_EQ(handed_out.size(), 90u);
}

TEST_F(CrashTest, SigtermShutsDownCleanly) {
  ServerProcess server = MakeServer();
  const int port = server.Start();
  ASSERT_GT(port, 0);
  auto stub = Connect(port);
  v1::CreateStudyRequest create;
  create.set_study_id("term");
  *create.mutable_spec() = PipelineSpec();
  v1::CreateStudyResponse created;
  ASSERT_TRUE(
      stub->CreateStudy(ContextWithDeadline().get(), create, &created).ok());
  const int status = server.Kill(SIGTERM);
  ASSERT_TRUE(WIFEXITED(status)) << server.Log();
  EXPECT_EQ(WEXITSTATUS(status), 0) << server.Log();
  EXPECT_THAT(server.Log(), ::testing::HasSubstr("metaopt-server stopped"));
}

}  // namespace
}  // namespace metaopt::testing
