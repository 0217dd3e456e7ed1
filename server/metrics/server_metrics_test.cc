#include "server/metrics/server_metrics.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// prometheus-cpp leaves out a family until it has a series: the labelled
// ones appear with their first RPC (the trials and model gauges with their
// sources, tests/integration/metrics_test.cc).
TEST(ServerMetricsTest, FamiliesAreExposedWithTheirTypes) {
  METAOPT_ASSERT_OK_AND_ASSIGN(auto metrics, ServerMetrics::Create());
  const std::string before = metrics->TextExposition();
  EXPECT_THAT(before, Not(HasSubstr("metaopt_rpc_handled_total")));
  RpcRecord record;
  record.method = "CreateStudy";
  metrics->OnRpc(record);
  const std::string text = metrics->TextExposition();
  for (const char* family :
       {"metaopt_rpc_handled_total counter",
        "metaopt_rpc_duration_seconds histogram",
        "metaopt_studies_loaded gauge", "metaopt_registry_models gauge",
        "metaopt_sqlite_commit_duration_seconds histogram"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + family + "\n"));
  }
  EXPECT_THAT(text, HasSubstr("\nmetaopt_studies_loaded 0\n"));
  EXPECT_THAT(text, HasSubstr("\nmetaopt_registry_models 0\n"));
}

TEST(ServerMetricsTest, RpcsAreCountedAndTimedByMethodCodeAndAlgorithm) {
  METAOPT_ASSERT_OK_AND_ASSIGN(auto metrics, ServerMetrics::Create());
  RpcRecord record;
  record.method = "Suggest";
  record.code = grpc::StatusCode::OK;
  record.algorithm = v1::ALGORITHM_KIND_GP;
  record.latency = absl::Milliseconds(3);
  metrics->OnRpc(record);
  metrics->OnRpc(record);
  record.method = "GetStudy";
  record.code = grpc::StatusCode::NOT_FOUND;
  record.algorithm = v1::ALGORITHM_KIND_UNSPECIFIED;
  record.latency = absl::Seconds(100);
  metrics->OnRpc(record);
  metrics->OnCommit(absl::Microseconds(200));

  // prometheus-cpp writes the labels of a series sorted by name.
  const std::string text = metrics->TextExposition();
  EXPECT_THAT(text, HasSubstr("\nmetaopt_rpc_handled_total{algorithm=\"gp\","
                              "code=\"OK\",method=\"Suggest\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("\nmetaopt_rpc_handled_total{algorithm=\"none\","
                              "code=\"NOT_FOUND\",method=\"GetStudy\"} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("\nmetaopt_rpc_duration_seconds_bucket{algorithm=\"gp\","
                        "code=\"OK\",method=\"Suggest\",le=\"0.0025\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("\nmetaopt_rpc_duration_seconds_bucket{algorithm=\"gp\","
                        "code=\"OK\",method=\"Suggest\",le=\"0.005\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("\nmetaopt_rpc_duration_seconds_bucket{algorithm="
                              "\"none\",code=\"NOT_FOUND\",method=\"GetStudy\","
                              "le=\"60\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("\nmetaopt_rpc_duration_seconds_bucket{algorithm="
                              "\"none\",code=\"NOT_FOUND\",method=\"GetStudy\","
                              "le=\"+Inf\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\nmetaopt_rpc_duration_seconds_sum{algorithm="
                              "\"none\",code=\"NOT_FOUND\",method=\"GetStudy\"}"
                              " 100\n"));
  EXPECT_THAT(text, HasSubstr("\nmetaopt_sqlite_commit_duration_seconds_bucket{"
                              "le=\"0.0001\"} 0\n"
                              "metaopt_sqlite_commit_duration_seconds_bucket{"
                              "le=\"0.00025\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("\nmetaopt_sqlite_commit_duration_seconds_count 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("exposer_")));
}

}  // namespace
}  // namespace metaopt::server
