// The Prometheus endpoint of the real server: RPCs go through gRPC, then
// /metrics is scraped over HTTP and its samples checked.
#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/registry/artifact.h"
#include "tests/testutil/test_artifacts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/http_get.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

// `series` ("name{a=\"x\",b=\"y\"}") with its labels sorted, so that two
// spellings of one series compare equal: the text format leaves the order of
// labels to the writer. Label values here hold no commas.
std::string SortedLabels(const std::string& series) {
  const size_t open = series.find('{');
  if (open == std::string::npos || series.back() != '}') return series;
  std::vector<std::string> labels;
  std::istringstream list(series.substr(open + 1, series.size() - open - 2));
  std::string label;
  while (std::getline(list, label, ',')) labels.push_back(label);
  std::sort(labels.begin(), labels.end());
  std::string sorted = series.substr(0, open + 1);
  for (size_t i = 0; i < labels.size(); ++i) {
    sorted += (i > 0 ? "," : "") + labels[i];
  }
  return sorted + "}";
}

// The value of the sample `series` (name plus labels, in any order), or
// nullopt if the exposition has no such line.
std::optional<double> Sample(const std::string& exposition,
                             const std::string& series) {
  const std::string wanted = SortedLabels(series);
  std::istringstream lines(exposition);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.rfind(' ');
    if (line.empty() || line[0] == '#' || space == std::string::npos) continue;
    if (SortedLabels(line.substr(0, space)) == wanted) {
      return std::stod(line.substr(space + 1));
    }
  }
  return std::nullopt;
}

class MetricsTest : public ::testing::Test {
 protected:
  MetricsTest()
      : server_([this] {
          server::ServerOptions options;
          options.db_path = dir_.File("metaopt.db");
          options.models_dir = dir_.File("models");
          options.models_poll_interval = absl::ZeroDuration();
          options.metrics_listen = "127.0.0.1:0";
          return options;
        }()) {}

  std::string Scrape() {
    auto response = HttpGet(server_.server().metrics_port(), "/metrics");
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return "";
    EXPECT_EQ(response->status, 200);
    return response->body;
  }

  ScopedTempDir dir_;
  TestServer server_;
};

TEST_F(MetricsTest, ScrapeAfterRealRpcs) {
  ASSERT_GT(server_.server().metrics_port(), 0);
  // Two versions of one model: the registry serves version 2.
  for (double marker : {1.0, 2.0}) {
    ASSERT_TRUE(
        registry::WriteModelVersion(dir_.File("models"), "pipelines",
                                    registry::testing::TestArtifact(marker))
            .ok());
  }
  METAOPT_ASSERT_OK(server_.server().models().PollOnce());

  v1::CreateStudyRequest create;
  create.set_study_id("metered");
  *create.mutable_spec() = PipelineSpec(v1::ALGORITHM_KIND_GP);
  create.mutable_spec()->mutable_algorithm()->set_model("none");
  v1::CreateStudyResponse created;
  ASSERT_TRUE(server_.stub()
                  .CreateStudy(ContextWithDeadline().get(), create, &created)
                  .ok());
  v1::SuggestRequest suggest;
  suggest.set_study_id("metered");
  suggest.set_count(2);
  suggest.set_client_id("worker");
  v1::SuggestResponse suggested;
  ASSERT_TRUE(server_.stub()
                  .Suggest(ContextWithDeadline().get(), suggest, &suggested)
                  .ok());
  ASSERT_EQ(suggested.trials_size(), 2);
  v1::ObserveRequest observe;
  observe.set_study_id("metered");
  observe.set_trial_id(suggested.trials(0).id());
  observe.set_value(0.9);
  v1::ObserveResponse observed;
  ASSERT_TRUE(server_.stub()
                  .Observe(ContextWithDeadline().get(), observe, &observed)
                  .ok());
  observe.set_trial_id(suggested.trials(1).id());
  observe.mutable_failure()->set_state(v1::TRIAL_STATE_FAILED);
  observe.mutable_failure()->set_reason("out of memory");
  ASSERT_TRUE(server_.stub()
                  .Observe(ContextWithDeadline().get(), observe, &observed)
                  .ok());
  v1::GetStudyRequest missing;
  missing.set_study_id("absent");
  v1::GetStudyResponse got;
  EXPECT_EQ(server_.stub()
                .GetStudy(ContextWithDeadline().get(), missing, &got)
                .error_code(),
            grpc::StatusCode::NOT_FOUND);

  const std::string text = Scrape();
  EXPECT_THAT(
      Sample(
          text,
          R"(metaopt_rpc_handled_total{method="CreateStudy",code="OK",algorithm="gp"})"),
      Optional(1.0));
  EXPECT_THAT(
      Sample(
          text,
          R"(metaopt_rpc_handled_total{method="Suggest",code="OK",algorithm="gp"})"),
      Optional(1.0));
  EXPECT_THAT(
      Sample(
          text,
          R"(metaopt_rpc_handled_total{method="Observe",code="OK",algorithm="gp"})"),
      Optional(2.0));
  EXPECT_THAT(
      Sample(
          text,
          R"(metaopt_rpc_handled_total{method="GetStudy",code="NOT_FOUND",algorithm="none"})"),
      Optional(1.0));
  EXPECT_THAT(
      Sample(
          text,
          R"(metaopt_rpc_duration_seconds_bucket{method="Observe",code="OK",algorithm="gp",le="+Inf"})"),
      Optional(2.0));
  EXPECT_THAT(
      Sample(
          text,
          R"(metaopt_rpc_duration_seconds_count{method="Suggest",code="OK",algorithm="gp"})"),
      Optional(1.0));
  const std::optional<double> suggest_seconds = Sample(
      text,
      R"(metaopt_rpc_duration_seconds_sum{method="Suggest",code="OK",algorithm="gp"})");
  ASSERT_TRUE(suggest_seconds.has_value());
  EXPECT_GT(*suggest_seconds, 0);
  EXPECT_LT(*suggest_seconds, 30);

  EXPECT_THAT(Sample(text, "metaopt_studies_loaded"), Optional(1.0));
  EXPECT_THAT(Sample(text, R"(metaopt_trials{state="completed"})"),
              Optional(1.0));
  EXPECT_THAT(Sample(text, R"(metaopt_trials{state="failed"})"), Optional(1.0));
  EXPECT_THAT(Sample(text, R"(metaopt_trials{state="active"})"), Optional(0.0));
  EXPECT_THAT(Sample(text, "metaopt_registry_models"), Optional(1.0));
  EXPECT_THAT(
      Sample(
          text,
          R"(metaopt_registry_model_version{model="pipelines",kind="portfolio"})"),
      Optional(2.0))
      << text;
  // CreateStudy, Suggest and two Observes each committed at least once.
  const std::optional<double> commits =
      Sample(text, "metaopt_sqlite_commit_duration_seconds_count");
  ASSERT_TRUE(commits.has_value());
  EXPECT_GE(*commits, 4);
  EXPECT_THAT(
      Sample(text,
             R"(metaopt_sqlite_commit_duration_seconds_bucket{le="+Inf"})"),
      Optional(*commits));

  // Deleting the study unloads it and its trials.
  v1::DeleteStudyRequest remove;
  remove.set_study_id("metered");
  v1::DeleteStudyResponse removed;
  ASSERT_TRUE(server_.stub()
                  .DeleteStudy(ContextWithDeadline().get(), remove, &removed)
                  .ok());
  const std::string after = Scrape();
  EXPECT_THAT(Sample(after, "metaopt_studies_loaded"), Optional(0.0));
  EXPECT_THAT(Sample(after, R"(metaopt_trials{state="completed"})"),
              Optional(0.0));
  EXPECT_THAT(
      Sample(
          after,
          R"(metaopt_rpc_handled_total{method="DeleteStudy",code="OK",algorithm="gp"})"),
      Optional(1.0));
}

// --learn-from-history: the learner's progress and result on /metrics.
TEST(LearnerMetricsTest, TrainingsAndPublishedModelsAreReported) {
  ScopedTempDir dir;
  server::ServerOptions options;
  options.db_path = dir.File("metaopt.db");
  options.models_dir = dir.File("models");
  options.models_poll_interval = absl::ZeroDuration();
  options.metrics_listen = "127.0.0.1:0";
  options.learn_from_history = true;
  options.learner.min_studies = 2;
  options.learner.history.min_completed_trials = 3;
  options.learner.portfolio_size = 2;
  options.learner.deeppipe.epochs = 2;
  TestServer server(options);
  ASSERT_NE(server.server().learner(), nullptr);
  const v1::StudySpec spec = CatalogueSpec(10);
  for (const std::string id : {"first", "second"}) {
    v1::CreateStudyRequest create;
    create.set_study_id(id);
    *create.mutable_spec() = spec;
    v1::CreateStudyResponse created;
    ASSERT_TRUE(server.stub()
                    .CreateStudy(ContextWithDeadline().get(), create, &created)
                    .ok());
    for (int i = 0; i < 3; ++i) {
      v1::ObserveRequest observe;
      observe.set_study_id(id);
      *observe.mutable_configuration() = spec.candidates(i + (id == "first"));
      observe.set_value(0.1 * i);
      v1::ObserveResponse observed;
      ASSERT_TRUE(server.stub()
                      .Observe(ContextWithDeadline().get(), observe, &observed)
                      .ok());
    }
  }
  // The same scan the background thread runs (serialized with it).
  METAOPT_ASSERT_OK(server.server().learner()->ScanAndLearn(""));
  auto response = HttpGet(server.server().metrics_port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  const std::string& text = response->body;
  EXPECT_THAT(Sample(text, R"(metaopt_history_trainings{result="succeeded"})"),
              Optional(1.0))
      << text;
  EXPECT_THAT(Sample(text, R"(metaopt_history_trainings{result="failed"})"),
              Optional(0.0));
  EXPECT_THAT(Sample(text, "metaopt_history_models_published"), Optional(2.0));
  EXPECT_THAT(Sample(text, "metaopt_history_learning"), Optional(0.0));
  EXPECT_THAT(Sample(text, "metaopt_registry_models"), Optional(2.0));
}

TEST(MetricsOptionsTest, OffByDefault) {
  ScopedTempDir dir;
  server::ServerOptions options;
  options.db_path = dir.File("metaopt.db");
  options.models_dir = dir.File("models");
  TestServer server(options);
  EXPECT_EQ(server.server().metrics_port(), 0);
}

TEST(MetricsOptionsTest, MalformedAddressFailsStartup) {
  ScopedTempDir dir;
  server::ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.db_path = dir.File("metaopt.db");
  options.models_dir = dir.File("models");
  options.metrics_listen = "metrics.example:9090";
  EXPECT_THAT(server::Server::BuildAndStart(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--metrics-listen: \"metrics.example:9090\" "
                                 "must be HOST:PORT")));
}

}  // namespace
}  // namespace metaopt::testing
