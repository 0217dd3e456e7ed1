// The per-RPC log lines of the real server: one at debug level per RPC, one
// at warning level per error, as text and as JSON.
#include <sstream>
#include <string>
#include <vector>

#include "core/common/logging.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/rpc_record.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::testing {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// The captured lines that log an RPC.
std::vector<std::string> RpcLines(const std::string& captured) {
  std::vector<std::string> lines;
  std::istringstream in(captured);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" rpc method=") != std::string::npos ||
        line.find("\"msg\":\"rpc\"") != std::string::npos) {
      lines.push_back(line);
    }
  }
  return lines;
}

class RpcLogTest : public ::testing::Test {
 protected:
  RpcLogTest()
      : server_([this] {
          server::ServerOptions options;
          options.db_path = dir_.File("metaopt.db");
          options.models_dir = dir_.File("models");
          return options;
        }()) {}
  void TearDown() override {
    SetMinLogSeverity(LogSeverity::kInfo);
    SetLogFormat(LogFormat::kText);
  }

  // CreateStudy "logged", Suggest (trial 1), Observe trial 1, and a GetStudy
  // of an absent study (NOT_FOUND).
  void RunCalls() {
    v1::CreateStudyRequest create;
    create.set_study_id("logged");
    *create.mutable_spec() = PipelineSpec();
    v1::CreateStudyResponse created;
    ASSERT_TRUE(server_.stub()
                    .CreateStudy(ContextWithDeadline().get(), create, &created)
                    .ok());
    v1::SuggestRequest suggest;
    suggest.set_study_id("logged");
    suggest.set_client_id("w");
    v1::SuggestResponse suggested;
    ASSERT_TRUE(server_.stub()
                    .Suggest(ContextWithDeadline().get(), suggest, &suggested)
                    .ok());
    v1::ObserveRequest observe;
    observe.set_study_id("logged");
    observe.set_trial_id(1);
    observe.set_value(0.5);
    v1::ObserveResponse observed;
    ASSERT_TRUE(server_.stub()
                    .Observe(ContextWithDeadline().get(), observe, &observed)
                    .ok());
    v1::GetStudyRequest missing;
    missing.set_study_id("absent");
    v1::GetStudyResponse got;
    ASSERT_EQ(server_.stub()
                  .GetStudy(ContextWithDeadline().get(), missing, &got)
                  .error_code(),
              grpc::StatusCode::NOT_FOUND);
  }

  ScopedTempDir dir_;
  TestServer server_;
};

TEST_F(RpcLogTest, OneTextLinePerRpcAtDebugLevel) {
  SetMinLogSeverity(LogSeverity::kDebug);
  ::testing::internal::CaptureStderr();
  RunCalls();
  const std::vector<std::string> lines =
      RpcLines(::testing::internal::GetCapturedStderr());
  ASSERT_THAT(lines, SizeIs(4));
  EXPECT_THAT(lines[0], ContainsRegex("Z DEBUG rpc method=CreateStudy "
                                      "study_id=logged code=OK "
                                      "latency_ms=[0-9.e+-]+$"));
  EXPECT_THAT(lines[1], ContainsRegex(" DEBUG rpc method=Suggest "
                                      "study_id=logged trial_ids=1 code=OK "
                                      "latency_ms=[0-9.e+-]+$"));
  EXPECT_THAT(lines[2], ContainsRegex(" DEBUG rpc method=Observe "
                                      "study_id=logged trial_ids=1 code=OK "));
  EXPECT_THAT(lines[3],
              ContainsRegex(" WARNING rpc method=GetStudy study_id=absent "
                            "code=NOT_FOUND latency_ms=[0-9.e+-]+ "
                            "error=\"study \\\\\"absent\\\\\" does not "
                            "exist\"$"));
}

TEST_F(RpcLogTest, OnlyErrorsAtTheDefaultLevel) {
  ::testing::internal::CaptureStderr();
  RunCalls();
  const std::vector<std::string> lines =
      RpcLines(::testing::internal::GetCapturedStderr());
  ASSERT_THAT(lines, SizeIs(1));
  EXPECT_THAT(lines[0], HasSubstr(" WARNING rpc method=GetStudy "));
}

TEST_F(RpcLogTest, JsonLinesCarryStructuredFields) {
  SetMinLogSeverity(LogSeverity::kDebug);
  SetLogFormat(LogFormat::kJson);
  ::testing::internal::CaptureStderr();
  RunCalls();
  const std::vector<std::string> lines =
      RpcLines(::testing::internal::GetCapturedStderr());
  ASSERT_THAT(lines, SizeIs(4));
  const nlohmann::json suggest = nlohmann::json::parse(lines[1]);
  EXPECT_EQ(suggest["level"], "DEBUG");
  EXPECT_EQ(suggest["msg"], "rpc");
  EXPECT_EQ(suggest["method"], "Suggest");
  EXPECT_EQ(suggest["study_id"], "logged");
  EXPECT_EQ(suggest["trial_ids"], nlohmann::json::array({1}));
  EXPECT_EQ(suggest["code"], "OK");
  EXPECT_TRUE(suggest["latency_ms"].is_number());
  EXPECT_FALSE(suggest.contains("error"));
  const nlohmann::json error = nlohmann::json::parse(lines[3]);
  EXPECT_EQ(error["level"], "WARNING");
  EXPECT_EQ(error["method"], "GetStudy");
  EXPECT_EQ(error["code"], "NOT_FOUND");
  EXPECT_EQ(error["error"], "study \"absent\" does not exist");
  EXPECT_FALSE(error.contains("trial_ids"));
}

TEST(RpcLogSeverityTest, ServerFaultsAreErrorsAndLoggedOnce) {
  server::RpcRecord record;
  record.method = "Observe";
  record.study_id = "s";
  record.code = grpc::StatusCode::DATA_LOSS;
  record.error_message = "trial 3 of study \"s\" does not parse";
  SetMinLogSeverity(LogSeverity::kWarning);
  ::testing::internal::CaptureStderr();
  server::LogRpc(record);
  record.code = grpc::StatusCode::FAILED_PRECONDITION;
  server::LogRpc(record);
  const std::vector<std::string> lines =
      RpcLines(::testing::internal::GetCapturedStderr());
  SetMinLogSeverity(LogSeverity::kInfo);
  ASSERT_THAT(lines, SizeIs(2));
  EXPECT_THAT(lines[0], HasSubstr(" ERROR rpc method=Observe "));
  EXPECT_THAT(lines[0], HasSubstr("code=DATA_LOSS"));
  EXPECT_THAT(lines[1], HasSubstr(" WARNING rpc method=Observe "));
}

}  // namespace
}  // namespace metaopt::testing
