// Tests of the load generator: option validation, statistics, report formats,
// and short loads against the real server on 127.0.0.1 port 0.
#include "tools/loadgen/load_generator.h"

#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"

namespace metaopt::loadgen {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

TEST(LoadGeneratorTest, ValidateOptionsNamesFieldValueAndRule) {
  EXPECT_THAT(ValidateOptions(LoadOptions()), IsOk());
  struct Case {
    void (*mutate)(LoadOptions&);
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](LoadOptions& o) { o.study_prefix = "-x"; }, "study_prefix: \"-x\""},
      {[](LoadOptions& o) { o.study_prefix = "a b"; }, "study_prefix"},
      {[](LoadOptions& o) { o.clients = 0; }, "clients: 0 is outside [1, "},
      {[](LoadOptions& o) { o.studies = -1; }, "studies: -1 is outside"},
      {[](LoadOptions& o) { o.algorithm = v1::ALGORITHM_KIND_PMF; },
       "algorithm: ALGORITHM_KIND_PMF"},
      {[](LoadOptions& o) { o.dimensions = 65; }, "dimensions: 65"},
      {[](LoadOptions& o) {
         o.space = SpaceKind::kCatalogue;
         o.catalogue_size = 0;
       },
       "catalogue_size: 0"},
      {[](LoadOptions& o) { o.suggest_count = 0; }, "suggest_count: 0"},
      {[](LoadOptions& o) { o.duration = absl::Seconds(-1); },
       "duration: -1s is negative"},
      {[](LoadOptions& o) { o.total_ops = -5; }, "total_ops: -5"},
      {[](LoadOptions& o) {
         o.duration = absl::ZeroDuration();
         o.total_ops = 0;
       },
       "set at least one bound"},
      {[](LoadOptions& o) {
         o.total_ops = 2;
         o.suggest_count = 4;
       },
       "total_ops: 2 is less than one loop"},
      {[](LoadOptions& o) { o.failure_rate = 1.5; }, "failure_rate: 1.5"},
      {[](LoadOptions& o) { o.failure_rate = std::nan(""); }, "failure_rate"},
      {[](LoadOptions& o) { o.eval_time = absl::Milliseconds(-1); },
       "eval_time"},
      {[](LoadOptions& o) { o.progress_interval = absl::Seconds(-1); },
       "progress_interval"},
  };
  for (const Case& c : cases) {
    LoadOptions options;
    c.mutate(options);
    EXPECT_THAT(
        ValidateOptions(options),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
  }
}

TEST(LoadGeneratorTest, ServerListsAreCommaSeparatedAndDealtInTurn) {
  auto one = ParseServerList("h:1");
  ASSERT_THAT(one, IsOk());
  EXPECT_EQ(*one, std::vector<std::string>({"h:1"}));
  auto three = ParseServerList("a:1,b:2,c:3");
  ASSERT_THAT(three, IsOk());
  EXPECT_EQ(*three, std::vector<std::string>({"a:1", "b:2", "c:3"}));
  for (const char* bad : {"", "a:1,", ",a:1", "a:1,,b:2"}) {
    EXPECT_THAT(ParseServerList(bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("empty address")))
        << bad;
  }
}

TEST(LoadGeneratorTest, SummarizeUsesNearestRankPercentiles) {
  std::vector<double> micros(100);
  std::iota(micros.rbegin(), micros.rend(), 1000.0);  // 1099 ms .. 1000 ms
  for (double& m : micros) m = (m - 999) * 1000;      // 100 ms .. 1 ms, in µs
  const LatencySummary s = Summarize(micros);
  EXPECT_EQ(s.count, 100);
  EXPECT_DOUBLE_EQ(s.p50_ms, 50);
  EXPECT_DOUBLE_EQ(s.p90_ms, 90);
  EXPECT_DOUBLE_EQ(s.p99_ms, 99);
  EXPECT_DOUBLE_EQ(s.max_ms, 100);
  EXPECT_DOUBLE_EQ(s.mean_ms, 50.5);

  std::vector<double> one = {2500};
  const LatencySummary single = Summarize(one);
  EXPECT_DOUBLE_EQ(single.p50_ms, 2.5);
  EXPECT_DOUBLE_EQ(single.p99_ms, 2.5);

  std::vector<double> none;
  EXPECT_EQ(Summarize(none).count, 0);
  EXPECT_EQ(Summarize(none).max_ms, 0);
}

TEST(LoadGeneratorTest, TestFunctionHasItsMinimumAtPointThree) {
  v1::Configuration config;
  v1::Assignment* a = config.add_assignments();
  (*a->mutable_parameters())["x0"].set_number(0.3);
  (*a->mutable_parameters())["x1"].set_number(0.3);
  absl::StatusOr<double> at_minimum = TestFunction(config, 2);
  ASSERT_THAT(at_minimum, IsOk());
  EXPECT_NEAR(*at_minimum, 0, 1e-12);
  (*a->mutable_parameters())["x1"].set_number(0.8);
  EXPECT_GT(*TestFunction(config, 2), 0.25);
  EXPECT_THAT(TestFunction(config, 3),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("parameters[\"x2\"]: missing")));
  (*a->mutable_parameters())["x0"].set_category("a");
  EXPECT_THAT(TestFunction(config, 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("parameters[\"x0\"]")));
}

TEST(LoadGeneratorTest, CatalogueSpecsAreDeterministicAndShared) {
  LoadOptions options;
  options.space = SpaceKind::kCatalogue;
  options.catalogue_size = 50;
  options.dimensions = 3;
  const v1::StudySpec a = MakeStudySpec(options, 0);
  const v1::StudySpec b = MakeStudySpec(options, 1);
  ASSERT_EQ(a.candidates_size(), 50);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      a.candidates(7), b.candidates(7)));
  EXPECT_FALSE(google::protobuf::util::MessageDifferencer::Equals(
      a.candidates(7), a.candidates(8)));
  EXPECT_NE(a.seed(), b.seed());
  EXPECT_EQ(a.search_space().stages(0).algorithms(0).parameters_size(), 3);
  options.space = SpaceKind::kContinuous;
  EXPECT_EQ(MakeStudySpec(options, 0).candidates_size(), 0);
}

class LoadAgainstServerTest : public ::testing::Test {
 protected:
  LoadAgainstServerTest() : server_(ServerOptions()) {}

  server::ServerOptions ServerOptions() {
    server::ServerOptions options;
    options.db_path = dir_.File("metaopt.db");
    options.models_dir = dir_.File("models");
    return options;
  }

  ConnectFn Connect() {
    return [this]() -> absl::StatusOr<std::unique_ptr<MetaoptClient>> {
      MetaoptClient::Options options;
      options.address = server_.address();
      options.max_attempts = 1;
      return MetaoptClient::Create(options);
    };
  }

  // The trials of every study of `options` (each fits one page).
  std::vector<v1::Trial> AllTrials(const LoadOptions& options) {
    std::vector<v1::Trial> trials;
    for (int i = 0; i < options.studies; ++i) {
      v1::ListTrialsRequest request;
      request.set_study_id(absl::StrCat(options.study_prefix, "-", i));
      request.set_page_size(1000);
      v1::ListTrialsResponse response;
      EXPECT_TRUE(server_.stub()
                      .ListTrials(testing::ContextWithDeadline().get(), request,
                                  &response)
                      .ok());
      EXPECT_TRUE(response.next_page_token().empty());
      trials.insert(trials.end(), response.trials().begin(),
                    response.trials().end());
    }
    return trials;
  }

  testing::ScopedTempDir dir_;
  testing::TestServer server_;
};

// Options for a quiet run bounded by `total_ops` alone, keeping its studies.
LoadOptions OpsBoundedOptions(std::string prefix, int clients, int studies,
                              int64_t total_ops) {
  LoadOptions options;
  options.study_prefix = std::move(prefix);
  options.clients = clients;
  options.studies = studies;
  options.duration = absl::ZeroDuration();
  options.total_ops = total_ops;
  options.delete_studies = false;
  options.progress_interval = absl::ZeroDuration();
  return options;
}

TEST_F(LoadAgainstServerTest, TotalOpsBoundsTheRunAndEveryObservationIsKept) {
  const LoadOptions options = OpsBoundedOptions("ops", 4, 3, 120);
  absl::StatusOr<LoadReport> report = RunLoad(options, Connect(), nullptr);
  ASSERT_THAT(report, IsOk());
  ASSERT_EQ(report->rpcs.size(), 2u);
  EXPECT_EQ(report->rpcs[0].rpc, "Suggest");
  EXPECT_EQ(report->rpcs[0].ok, 60);
  EXPECT_EQ(report->rpcs[1].ok, 60);
  EXPECT_EQ(report->rpcs[0].errors + report->rpcs[1].errors, 0);
  EXPECT_EQ(report->ops(), 120);
  EXPECT_EQ(report->observations, 60);
  EXPECT_GT(report->observations_per_second(), 0);
  EXPECT_GT(report->rpcs[0].latency.p50_ms, 0);
  EXPECT_LE(report->rpcs[0].latency.p50_ms, report->rpcs[0].latency.p99_ms);
  EXPECT_LE(report->rpcs[0].latency.p99_ms, report->rpcs[0].latency.max_ms);

  // The server holds exactly the observed trials, with the test function's
  // values.
  const std::vector<v1::Trial> trials = AllTrials(options);
  EXPECT_EQ(trials.size(), 60u);
  for (const v1::Trial& trial : trials) {
    ASSERT_EQ(trial.state(), v1::TRIAL_STATE_COMPLETED) << trial.id();
    EXPECT_DOUBLE_EQ(trial.value(), *TestFunction(trial.configuration(), 4));
  }
}

TEST_F(LoadAgainstServerTest, ProbeCallsWriteNothing) {
  for (const CallMix calls : {CallMix::kListModels, CallMix::kGetStudy}) {
    LoadOptions options = OpsBoundedOptions(
        calls == CallMix::kListModels ? "probe-list" : "probe-get", 3, 2, 30);
    options.calls = calls;
    absl::StatusOr<LoadReport> report = RunLoad(options, Connect(), nullptr);
    ASSERT_THAT(report, IsOk());
    ASSERT_EQ(report->rpcs.size(), 1u);
    EXPECT_EQ(report->rpcs[0].rpc,
              calls == CallMix::kListModels ? "ListModels" : "GetStudy");
    EXPECT_EQ(report->rpcs[0].ok, 30);
    EXPECT_EQ(report->rpcs[0].errors, 0);
    EXPECT_EQ(report->ops(), 30);
    EXPECT_EQ(report->observations, 0);
    EXPECT_TRUE(AllTrials(options).empty());
  }
}

TEST_F(LoadAgainstServerTest, CatalogueGpWithFailuresAndBatches) {
  LoadOptions options;
  options.study_prefix = "gp";
  options.clients = 2;
  options.studies = 2;
  options.algorithm = v1::ALGORITHM_KIND_GP;
  options.space = SpaceKind::kCatalogue;
  options.catalogue_size = 200;
  options.dimensions = 2;
  options.suggest_count = 2;
  options.duration = absl::ZeroDuration();
  options.total_ops = 30;  // 10 loops of 1 Suggest + 2 Observe
  options.failure_rate = 1;
  options.delete_studies = false;
  options.progress_interval = absl::ZeroDuration();
  absl::StatusOr<LoadReport> report = RunLoad(options, Connect(), nullptr);
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->rpcs[0].ok, 10);
  EXPECT_EQ(report->observations, 20);
  const std::vector<v1::Trial> trials = AllTrials(options);
  EXPECT_EQ(trials.size(), 20u);
  for (const v1::Trial& trial : trials) {
    EXPECT_EQ(trial.state(), v1::TRIAL_STATE_FAILED) << trial.id();
  }
}

TEST_F(LoadAgainstServerTest, DurationBoundDeletesStudiesAndReportsFormats) {
  LoadOptions options;
  options.study_prefix = "timed";
  options.clients = 3;
  options.studies = 2;
  options.duration = absl::Milliseconds(400);
  options.progress_interval = absl::Milliseconds(100);
  std::ostringstream progress;
  absl::StatusOr<LoadReport> report = RunLoad(options, Connect(), &progress);
  ASSERT_THAT(report, IsOk());
  EXPECT_GE(report->elapsed, absl::Milliseconds(400));
  EXPECT_GT(report->observations, 0);
  EXPECT_THAT(progress.str(), HasSubstr("obs/s"));

  v1::GetStudyRequest get;
  get.set_study_id("timed-0");
  v1::GetStudyResponse got;
  EXPECT_EQ(server_.stub()
                .GetStudy(testing::ContextWithDeadline().get(), get, &got)
                .error_code(),
            grpc::StatusCode::NOT_FOUND);

  const std::string table = FormatTable(*report);
  EXPECT_THAT(table, HasSubstr("3 clients, 2 studies (RANDOM, continuous"));
  EXPECT_THAT(table, HasSubstr("Suggest"));
  EXPECT_THAT(table, HasSubstr("observations/s"));

  const nlohmann::json json = nlohmann::json::parse(FormatJson(*report));
  EXPECT_EQ(json["settings"]["clients"], 3);
  EXPECT_EQ(json["observations"], report->observations);
  EXPECT_EQ(json["rpcs"][1]["rpc"], "Observe");
  EXPECT_EQ(json["rpcs"][1]["ok"], report->rpcs[1].ok);
  EXPECT_TRUE(json["rpcs"][0]["latency_ms"].contains("p99"));

  const std::vector<std::string> lines = absl::StrSplit(
      FormatCsv(*report, /*header=*/true), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0], HasSubstr("rpc,ok,errors,rate_per_s"));
  EXPECT_THAT(lines[1], HasSubstr(",Suggest,"));
  EXPECT_THAT(lines[2], HasSubstr(",Observe,"));
  EXPECT_EQ(FormatCsv(*report, /*header=*/false).find("rpc,ok"),
            std::string::npos);
}

TEST(LoadGeneratorTest, RetryDelayGrowsExponentiallyToOneSecondWithJitter) {
  EXPECT_EQ(RetryDelay(1, 0.0), absl::Milliseconds(5));
  EXPECT_EQ(RetryDelay(1, 1.0), absl::Milliseconds(10));
  EXPECT_EQ(RetryDelay(2, 1.0), absl::Milliseconds(20));
  EXPECT_EQ(RetryDelay(4, 0.5), absl::Milliseconds(60));  // 80 ms * 3/4
  EXPECT_EQ(RetryDelay(8, 1.0), absl::Seconds(1));        // 1.28 s capped
  EXPECT_EQ(RetryDelay(1000, 0.0), absl::Milliseconds(500));
  for (int failures = 1; failures < 40; ++failures) {
    EXPECT_LE(RetryDelay(failures, 0.3), RetryDelay(failures + 1, 0.3));
  }
}

TEST(LoadGeneratorTest, ThroughputCountsSuccessfulCallsOnly) {
  LoadReport report;
  report.elapsed = absl::Seconds(2);
  report.observations = 10;
  report.rpcs.resize(2);
  report.rpcs[0].rpc = "Suggest";
  report.rpcs[0].ok = 10;
  report.rpcs[0].errors = 36280;
  report.rpcs[0].error_codes["UNAVAILABLE"] = 36280;
  report.rpcs[1].rpc = "Observe";
  report.rpcs[1].ok = 10;
  EXPECT_EQ(report.ops(), 20);
  EXPECT_EQ(report.failed_ops(), 36280);
  EXPECT_DOUBLE_EQ(report.ops_per_second(), 10);
  EXPECT_THAT(FormatTable(report),
              HasSubstr("throughput: 10.0 ops/s (20 successful RPCs, 36280 "
                        "failed), 5.0 observations/s"));
  const nlohmann::json json = nlohmann::json::parse(FormatJson(report));
  EXPECT_EQ(json["ops"], 20);
  EXPECT_EQ(json["failed_ops"], 36280);
  EXPECT_EQ(json["ops_per_second"], 10.0);
}

TEST_F(LoadAgainstServerTest, ClientsOfAServerThatIsDownBackOff) {
  // The studies are created through the first connection (the live server);
  // every client then talks to a closed port, so each of its calls fails with
  // UNAVAILABLE. Retrying every 10 ms would make ~100 calls a second per
  // client; backing off exponentially to 1 s makes fewer than 10 in 1.5 s.
  LoadOptions options;
  options.study_prefix = "down";
  options.clients = 2;
  options.studies = 1;
  options.duration = absl::Milliseconds(1500);
  options.delete_studies = false;
  options.progress_interval = absl::ZeroDuration();
  int connections = 0;
  ConnectFn connect = [&]() -> absl::StatusOr<std::unique_ptr<MetaoptClient>> {
    MetaoptClient::Options o;
    o.address = connections++ == 0 ? server_.address() : "127.0.0.1:1";
    o.max_attempts = 1;
    o.timeout = absl::Seconds(2);
    return MetaoptClient::Create(o);
  };
  absl::StatusOr<LoadReport> report = RunLoad(options, connect, nullptr);
  ASSERT_THAT(report, IsOk());
  EXPECT_EQ(report->ops(), 0);
  EXPECT_EQ(report->ops_per_second(), 0);
  EXPECT_GT(report->failed_ops(), 0);
  EXPECT_LT(report->failed_ops(), 2 * 10);
  EXPECT_EQ(report->rpcs[0].error_codes.at("UNAVAILABLE"),
            report->failed_ops());
}

TEST_F(LoadAgainstServerTest, UnreachableServerIsCountedOrReported) {
  LoadOptions options;
  options.total_ops = 4;
  options.duration = absl::ZeroDuration();
  options.progress_interval = absl::ZeroDuration();
  ConnectFn nowhere = []() -> absl::StatusOr<std::unique_ptr<MetaoptClient>> {
    MetaoptClient::Options o;
    o.address = "127.0.0.1:1";
    o.max_attempts = 1;
    o.timeout = absl::Seconds(2);
    return MetaoptClient::Create(o);
  };
  EXPECT_THAT(RunLoad(options, nowhere, nullptr),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("creating study loadgen-0")));
}

}  // namespace
}  // namespace metaopt::loadgen
