#include "bench/bench_lib.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "clients/cpp/metaopt_client.h"
#include "core/common/logging.h"
#include "core/meta/meta_dataset.h"
#include "core/meta/meta_dataset_testutil.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

#ifdef METAOPT_SERVER_BINARY
#include "tests/integration/server_process.h"
#endif

namespace metaopt::bench {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

// ---------------------------------------------------------------------------
// Fixtures: a generated meta-dataset folder.

v1::Configuration Config(double x, const std::string& c) {
  v1::Configuration config;
  v1::Assignment* a = config.add_assignments();
  a->set_stage("model");
  a->set_algorithm("m");
  (*a->mutable_parameters())["x"].set_number(x);
  (*a->mutable_parameters())["c"].set_category(c);
  return config;
}

meta::Task MakeTask(const std::string& id, const std::string& split, int n,
                    double center, bool flat = false) {
  meta::Task task;
  task.id = id;
  task.name = absl::StrCat("dataset ", id);
  task.split = split;
  static const char* const kCategories[] = {"a", "b", "c"};
  for (int i = 0; i < n; ++i) {
    const double x = n == 1 ? 0.0 : static_cast<double>(i) / (n - 1);
    const std::string c = kCategories[i % 3];
    task.configurations.push_back(Config(x, c));
    task.y.push_back(flat ? 0.5
                          : (x - center) * (x - center) + 0.1 * (i % 3) + 0.01);
  }
  task.metafeatures = {{"n_rows", 100.0 + n}, {"entropy", center}};
  return task;
}

// Test split: four regular tasks of 24 configurations, one with only 6
// (fewer than the trials), one with a flat y; plus a train task.
meta::MetaDataset MakeDataset() {
  meta::MetaDataset data;
  data.name = "toy";
  v1::Stage* stage = data.space.add_stages();
  stage->set_name("model");
  v1::Algorithm* algorithm = stage->add_algorithms();
  algorithm->set_name("m");
  v1::Parameter* x = algorithm->add_parameters();
  x->set_name("x");
  x->mutable_float_domain()->set_low(0);
  x->mutable_float_domain()->set_high(1);
  v1::Parameter* c = algorithm->add_parameters();
  c->set_name("c");
  for (const char* v : {"a", "b", "c"}) {
    c->mutable_categorical_domain()->add_values(v);
  }
  data.objective.set_name("error");
  data.objective.set_goal(v1::GOAL_MINIMIZE);
  data.tasks.push_back(MakeTask("train1", "train", 24, 0.5));
  data.tasks.push_back(MakeTask("t1", "test", 24, 0.2));
  data.tasks.push_back(MakeTask("flat", "test", 10, 0.0, /*flat=*/true));
  data.tasks.push_back(MakeTask("t2", "test", 24, 0.7));
  data.tasks.push_back(MakeTask("small", "test", 6, 0.4));
  data.tasks.push_back(MakeTask("t3", "test", 24, 0.9));
  data.tasks.push_back(MakeTask("t4", "test", 24, 0.35));
  data.metafeature_names = {"n_rows", "entropy"};
  return data;
}

class BenchRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The engine logs every created and deleted study at info level.
    SetMinLogSeverity(LogSeverity::kWarning);
    ASSERT_THAT(meta::WriteMetaDataset(MakeDataset(), dir_.File("toy")),
                IsOk());
  }

  BenchOptions Options() const {
    BenchOptions options;
    options.data_dir = dir_.File("toy");
    options.split = "test";
    options.methods = {"random"};
    options.trials = 10;
    options.seeds = 2;
    options.progress = nullptr;
    return options;
  }

  ScopedTempDir dir_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether the start and end tags of `xml` are balanced (a small checker: no
// CDATA or comments expected). Counts elements named `name` into `*count`.
bool BalancedXml(const std::string& xml, const std::string& name, int* count) {
  std::vector<std::string> stack;
  *count = 0;
  size_t pos = 0;
  while ((pos = xml.find('<', pos)) != std::string::npos) {
    const size_t end = xml.find('>', pos);
    if (end == std::string::npos) return false;
    std::string tag = xml.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    if (tag.empty()) return false;
    if (tag[0] == '/') {
      const std::string closing = tag.substr(1);
      if (stack.empty() || stack.back() != closing) return false;
      stack.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    const std::string element = tag.substr(0, tag.find_first_of(" /\n"));
    if (element == name) ++*count;
    if (!self_closing) stack.push_back(element);
  }
  return stack.empty();
}

// ---------------------------------------------------------------------------
// Metrics

TEST(NormalizedRegretTest, MinimizeAndMaximize) {
  // Minimize: best 1, worst 5.
  EXPECT_DOUBLE_EQ(NormalizedRegret(1, 1, 5), 0.0);
  EXPECT_DOUBLE_EQ(NormalizedRegret(2, 1, 5), 0.25);
  EXPECT_DOUBLE_EQ(NormalizedRegret(5, 1, 5), 1.0);
  // Maximize: best 0.9, worst 0.5.
  EXPECT_NEAR(NormalizedRegret(0.9, 0.9, 0.5), 0.0, 1e-12);
  EXPECT_NEAR(NormalizedRegret(0.8, 0.9, 0.5), 0.25, 1e-12);
  EXPECT_NEAR(NormalizedRegret(0.5, 0.9, 0.5), 1.0, 1e-12);
}

TEST(RegretCurveTest, MinimizeOnTinyTable) {
  meta::Task task;
  task.id = "tiny";
  task.configurations = {Config(0, "a"), Config(0.5, "a"), Config(1, "a"),
                         Config(1, "b")};
  task.y = {3, 1, 5, 2};
  absl::StatusOr<ReplayTask> replay = PrepareTask(task, v1::GOAL_MINIMIZE);
  ASSERT_THAT(replay, IsOk());
  EXPECT_EQ(replay->best, 1);
  EXPECT_EQ(replay->worst, 5);
  // Observed in trial order 3, 2, 5; four trials: carried forward.
  EXPECT_THAT(
      RegretCurve({3, 2, 5}, replay->best, replay->worst, v1::GOAL_MINIMIZE, 4),
      ElementsAre(0.5, 0.25, 0.25, 0.25));
  EXPECT_THAT(RegretCurve({}, 1, 5, v1::GOAL_MINIMIZE, 2), ElementsAre(1, 1));
}

TEST(RegretCurveTest, MaximizeOnTinyTable) {
  meta::Task task;
  task.id = "tiny";
  task.configurations = {Config(0, "a"), Config(0.5, "a"), Config(1, "a")};
  task.y = {0.6, 0.9, 0.5};
  absl::StatusOr<ReplayTask> replay = PrepareTask(task, v1::GOAL_MAXIMIZE);
  ASSERT_THAT(replay, IsOk());
  EXPECT_EQ(replay->best, 0.9);
  EXPECT_EQ(replay->worst, 0.5);
  const std::vector<double> curve = RegretCurve(
      {0.5, 0.6, 0.9}, replay->best, replay->worst, v1::GOAL_MAXIMIZE, 3);
  ASSERT_EQ(curve.size(), 3u);
  EXPECT_NEAR(curve[0], 1.0, 1e-12);
  EXPECT_NEAR(curve[1], 0.75, 1e-12);
  EXPECT_NEAR(curve[2], 0.0, 1e-12);
}

TEST(PrepareTaskTest, DropsRepeatedConfigurationsKeepingTheFirst) {
  meta::Task task;
  task.id = "dup";
  task.configurations = {Config(0, "a"), Config(0.5, "a"), Config(0, "a")};
  task.y = {1, 2, 0};
  absl::StatusOr<ReplayTask> replay = PrepareTask(task, v1::GOAL_MINIMIZE);
  ASSERT_THAT(replay, IsOk());
  EXPECT_EQ(replay->catalogue.size(), 2u);
  EXPECT_EQ(replay->duplicate_rows, 1);
  EXPECT_EQ(replay->best, 1);
}

TEST(PrepareTaskTest, ZeroSpreadHasEqualBestAndWorst) {
  absl::StatusOr<ReplayTask> replay =
      PrepareTask(MakeTask("flat", "test", 5, 0, true), v1::GOAL_MINIMIZE);
  ASSERT_THAT(replay, IsOk());
  EXPECT_EQ(replay->best, replay->worst);
}

TEST(AverageRanksTest, TiesShareTheAverageRank) {
  EXPECT_THAT(AverageRanks({0.1, 0.0, 0.1, 0.3}), ElementsAre(2.5, 1, 2.5, 4));
  EXPECT_THAT(AverageRanks({0.2, 0.2, 0.2}), ElementsAre(2, 2, 2));
  EXPECT_THAT(AverageRanks({0.5}), ElementsAre(1));
  EXPECT_THAT(AverageRanks({0.3, 0.1, 0.2}), ElementsAre(3, 1, 2));
}

TEST(StudySeedTest, DiffersByTaskAndSeed) {
  EXPECT_NE(StudySeed("t1", 0), StudySeed("t2", 0));
  EXPECT_EQ(StudySeed("t1", 1), StudySeed("t1", 0) + 1);
}

// ---------------------------------------------------------------------------
// Methods and options

TEST(MethodsTest, TableEntriesHaveKinds) {
  for (const MethodDefinition& method : KnownMethods()) {
    EXPECT_NE(method.algorithm.kind(), v1::ALGORITHM_KIND_UNSPECIFIED)
        << method.name;
  }
  absl::StatusOr<std::vector<MethodDefinition>> parsed =
      ParseMethods(" random, gp ");
  ASSERT_THAT(parsed, IsOk());
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].algorithm.kind(), v1::ALGORITHM_KIND_RANDOM);
  EXPECT_EQ((*parsed)[1].algorithm.kind(), v1::ALGORITHM_KIND_GP);
}

TEST(MethodsTest, RejectsUnknownDuplicateAndEmpty) {
  EXPECT_THAT(ParseMethods("random,bogus"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown method \"bogus\"; known: random")));
  EXPECT_THAT(
      ParseMethods("random,random"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("listed twice")));
  EXPECT_THAT(ParseMethods(""), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("no method")));
}

TEST(BackendTest, RegistryWithoutSupportIsExplained) {
  EXPECT_THAT(OpenInProcessBackend("/tmp/registry", RegistryOpener()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("no model registry support")));
}

TEST_F(BenchRunTest, RegistryDirectoryReachesTheInProcessEngine) {
  const RegistryOpener opener = DefaultRegistryOpener();
  EXPECT_THAT(
      OpenInProcessBackend(dir_.File("no-such-registry"), opener),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("not a directory")));
  ASSERT_TRUE(std::filesystem::create_directories(dir_.File("registry")));
  BenchOptions options = Options();
  options.registry_dir = dir_.File("registry");
  options.registry_opener = opener;
  absl::StatusOr<BenchResult> result = RunBenchmark(options);
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->backend,
            absl::StrCat("in-process (registry ", dir_.File("registry"), ")"));
  EXPECT_TRUE(result->models.empty());
  absl::StatusOr<BenchResult> plain = RunBenchmark(Options());
  ASSERT_THAT(plain, IsOk());
  EXPECT_EQ(PerTaskCsv(*result), PerTaskCsv(*plain));
}

TEST(ShellCommandLineTest, QuotesWhereNeeded) {
  EXPECT_EQ(ShellCommandLine({"metaopt-bench", "--data", "../a b", "it's"}),
            "metaopt-bench --data '../a b' 'it'\\''s'");
}

TEST(ReportCheckpointsTest, StandardCountsUpToT) {
  EXPECT_THAT(ReportCheckpoints(50), ElementsAre(5, 10, 25, 50));
  EXPECT_THAT(ReportCheckpoints(12), ElementsAre(5, 10, 12));
  EXPECT_THAT(ReportCheckpoints(3), ElementsAre(3));
}

// ---------------------------------------------------------------------------
// Full runs

TEST_F(BenchRunTest, TasksWithFeaturesLeavesTheOthersOut) {
  meta::MetaDataset data = MakeDataset();
  for (meta::Task& task : data.tasks) {
    if (task.id == "t3") task.metafeatures.clear();
  }
  ASSERT_THAT(meta::WriteMetaDataset(data, dir_.File("toy")), IsOk());
  BenchOptions options = Options();
  absl::StatusOr<BenchResult> all = RunBenchmark(options);
  ASSERT_THAT(all, IsOk());
  EXPECT_THAT(all->featureless_tasks, IsEmpty());
  options.tasks_with_features = true;
  absl::StatusOr<BenchResult> result = RunBenchmark(options);
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(result->task_ids, ElementsAre("t1", "t2", "small", "t4"));
  EXPECT_THAT(result->featureless_tasks, ElementsAre("t3"));
}

TEST_F(BenchRunTest, RandomRunsAreMonotoneAndSkipFlatTasks) {
  absl::StatusOr<BenchResult> result = RunBenchmark(Options());
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->dataset_name, "toy");
  EXPECT_EQ(result->split_task_count, 6);
  EXPECT_THAT(result->task_ids, ElementsAre("t1", "t2", "small", "t3", "t4"));
  EXPECT_THAT(result->skipped_tasks, ElementsAre("flat"));
  EXPECT_THAT(result->short_tasks, ElementsAre(Pair("small", 6)));
  ASSERT_EQ(result->runs.size(), 5u * 2u);
  for (size_t t = 0; t < result->task_ids.size(); ++t) {
    for (int s = 0; s < 2; ++s) {
      const RunResult& run = result->runs[result->RunIndex(0, t, s)];
      ASSERT_EQ(run.regret.size(), 10u);
      for (size_t k = 0; k < run.regret.size(); ++k) {
        EXPECT_GE(run.regret[k], 0.0);
        EXPECT_LE(run.regret[k], 1.0);
        if (k > 0) EXPECT_LE(run.regret[k], run.regret[k - 1]);
      }
      if (result->task_ids[t] == "small") {
        // The whole catalogue is tried: the optimum is found, then carried.
        EXPECT_EQ(run.trials_observed, 6);
        EXPECT_EQ(run.regret.back(), 0.0);
      } else {
        EXPECT_EQ(run.trials_observed, 10);
        EXPECT_EQ(run.suggest_ms.size(), 10u);
      }
    }
  }
  // Different seeds explore differently.
  EXPECT_NE(result->runs[result->RunIndex(0, 0, 0)].regret,
            result->runs[result->RunIndex(0, 0, 1)].regret);
}

TEST_F(BenchRunTest, DeterministicAcrossRepeatsAndJobs) {
  absl::StatusOr<BenchResult> a = RunBenchmark(Options());
  ASSERT_THAT(a, IsOk());
  absl::StatusOr<BenchResult> b = RunBenchmark(Options());
  ASSERT_THAT(b, IsOk());
  BenchOptions parallel = Options();
  parallel.jobs = 2;
  absl::StatusOr<BenchResult> c = RunBenchmark(parallel);
  ASSERT_THAT(c, IsOk());
  EXPECT_EQ(PerTaskCsv(*a), PerTaskCsv(*b));
  EXPECT_EQ(PerTaskCsv(*a), PerTaskCsv(*c));
  EXPECT_EQ(SummaryCsv(Summarize(*a)), SummaryCsv(Summarize(*c)));
}

TEST_F(BenchRunTest, MaxTasksCapsEvaluatedTasks) {
  BenchOptions options = Options();
  options.max_tasks = 2;
  absl::StatusOr<BenchResult> result = RunBenchmark(options);
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(result->task_ids, ElementsAre("t1", "t2"));
}

TEST_F(BenchRunTest, BadOptionsAreInvalidArgument) {
  BenchOptions options = Options();
  options.split = "dev";
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dev")));
  options = Options();
  options.trials = 0;
  EXPECT_THAT(
      RunBenchmark(options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--trials")));
  options = Options();
  options.data_dir = dir_.File("missing");
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing")));
}

TEST_F(BenchRunTest, UnavailableMethodFailsFastOrIsSkipped) {
  // A method this engine cannot run without a registry (PMF needs a model)
  // or at all (a kind not implemented yet); whichever comes first.
  BenchOptions options = Options();
  std::string unavailable;
  absl::StatusOr<BenchResult> strict;
  for (const char* name : {"pmf", "deeppipe", "mosaic"}) {
    options.methods = {"random", name};
    strict = RunBenchmark(options);
    if (!strict.ok()) {
      unavailable = name;
      break;
    }
  }
  if (unavailable.empty()) GTEST_SKIP() << "every kind runs here";
  EXPECT_THAT(strict, StatusIs(absl::StatusCode::kFailedPrecondition,
                               HasSubstr(unavailable)));
  EXPECT_THAT(strict.status().message(), HasSubstr("--skip-unavailable"));
  options.skip_unavailable = true;
  absl::StatusOr<BenchResult> lenient = RunBenchmark(options);
  ASSERT_THAT(lenient, IsOk());
  ASSERT_EQ(lenient->methods.size(), 1u);
  EXPECT_EQ(lenient->methods[0].name, "random");
  ASSERT_EQ(lenient->unavailable_methods.size(), 1u);
  EXPECT_EQ(lenient->unavailable_methods[0].first, unavailable);
  ReportInfo info;
  const std::string md = ReportMarkdown(*lenient, Summarize(*lenient),
                                        SummarizeTiming(*lenient), info);
  EXPECT_THAT(md,
              HasSubstr(absl::StrCat("not run (unavailable) | ", unavailable)));
}

TEST_F(BenchRunTest, IdenticalMethodsTieAtRankOneAndAHalf) {
  absl::StatusOr<BenchResult> result = RunBenchmark(Options());
  ASSERT_THAT(result, IsOk());
  // A second method with exactly the same runs.
  BenchResult twin = *result;
  MethodDefinition copy = twin.methods[0];
  copy.name = "random-copy";
  twin.methods.push_back(copy);
  twin.runs.insert(twin.runs.end(), result->runs.begin(), result->runs.end());
  const std::vector<SummaryRow> rows = Summarize(twin);
  ASSERT_EQ(rows.size(), 20u);
  for (const SummaryRow& row : rows) {
    EXPECT_DOUBLE_EQ(row.rank_mean, 1.5);
    EXPECT_DOUBLE_EQ(row.rank_sem, 0.0);
  }
  EXPECT_EQ(rows[3].regret_mean, rows[13].regret_mean);
}

TEST_F(BenchRunTest, WritesAllOutputs) {
  absl::StatusOr<BenchResult> result = RunBenchmark(Options());
  ASSERT_THAT(result, IsOk());
  ReportInfo info;
  info.command_line = "metaopt-bench --data toy --trials 10";
  info.version = "0.1.0 (git test)";
  info.compiler = "test";
  const std::string out = dir_.File("out");
  ASSERT_THAT(WriteOutputs(*result, info, out), IsOk());

  const std::string summary = ReadFile(out + "/summary.csv");
  std::vector<std::string> lines = absl::StrSplit(summary, '\n');
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0], "method,trials,regret_mean,regret_sem,rank_mean");
  EXPECT_EQ(lines.size(), 1u + 10u + 1u);  // header, 10 rows, final ""
  EXPECT_TRUE(absl::StartsWith(lines[1], "random,1,"));
  EXPECT_TRUE(absl::StartsWith(lines[10], "random,10,"));
  // With one method every rank is 1.
  EXPECT_TRUE(absl::EndsWith(lines[10], ",1"));

  const std::string per_task = ReadFile(out + "/per_task.csv");
  EXPECT_TRUE(absl::StartsWith(per_task, "method,task,seed,trial,regret\n"));
  EXPECT_EQ(per_task, PerTaskCsv(*result));
  EXPECT_EQ(std::count(per_task.begin(), per_task.end(), '\n'), 1 + 5 * 2 * 10);
  const std::string trials = ReadFile(out + "/trials.csv");
  EXPECT_TRUE(absl::StartsWith(trials, "method,task,seed,trial,entry,value\n"));
  EXPECT_EQ(trials, TrialsCsv(*result));
  // One line per observed trial (a small catalogue can run out before T).
  int observed = 0;
  for (const RunResult& run : result->runs) observed += run.trials_observed;
  EXPECT_GT(observed, 0);
  EXPECT_EQ(std::count(trials.begin(), trials.end(), '\n'), 1 + observed);
  EXPECT_TRUE(absl::StartsWith(
      ReadFile(out + "/timing.csv"),
      "method,suggest_ms_mean,suggest_ms_p50,suggest_ms_p95\nrandom,"));

  const std::string report = ReadFile(out + "/report.md");
  EXPECT_THAT(report, HasSubstr("metaopt-bench --data toy --trials 10"));
  EXPECT_THAT(report, HasSubstr("`toy`"));
  EXPECT_THAT(report, HasSubstr("split `test`"));
  EXPECT_THAT(report, HasSubstr("skipped (zero y spread): 1 (flat)"));
  EXPECT_THAT(report, HasSubstr("| 5 trials | 10 trials |"));
  EXPECT_THAT(report, HasSubstr("0.1.0 (git test)"));
  EXPECT_THAT(report, HasSubstr("small (6)"));

  for (const char* name : {"regret_vs_trials.svg", "rank_vs_trials.svg",
                           "log_regret_vs_trials.svg"}) {
    SCOPED_TRACE(name);
    const std::string svg = ReadFile(absl::StrCat(out, "/", name));
    EXPECT_TRUE(absl::StartsWith(svg, "<svg"));
    EXPECT_TRUE(absl::EndsWith(svg, "</svg>\n"));
    int paths = 0;
    EXPECT_TRUE(BalancedXml(svg, "path", &paths));
    EXPECT_EQ(paths, 1);  // one method
  }
}

#ifdef METAOPT_SERVER_BINARY
TEST_F(BenchRunTest, ServerModeEqualsInProcess) {
  // The port is parsed from the "listening on" line (logged at info level).
  metaopt::testing::ServerProcess server(
      METAOPT_SERVER_BINARY,
      {"--listen=127.0.0.1:0", absl::StrCat("--db=", dir_.File("bench.db")),
       absl::StrCat("--models=", dir_.File("models"))},
      dir_.File("server.log"));
  const int port = server.Start();
  ASSERT_GT(port, 0) << server.Log();

  BenchOptions remote = Options();
  remote.server = absl::StrCat("127.0.0.1:", port);
  remote.jobs = 2;
  absl::StatusOr<BenchResult> over_grpc = RunBenchmark(remote);
  ASSERT_THAT(over_grpc, IsOk()) << server.Log();
  EXPECT_EQ(over_grpc->backend, absl::StrCat("server ", remote.server));
  absl::StatusOr<BenchResult> in_process = RunBenchmark(Options());
  ASSERT_THAT(in_process, IsOk());
  EXPECT_EQ(PerTaskCsv(*over_grpc), PerTaskCsv(*in_process));
  EXPECT_EQ(TrialsCsv(*over_grpc), TrialsCsv(*in_process));
  EXPECT_EQ(SummaryCsv(Summarize(*over_grpc)),
            SummaryCsv(Summarize(*in_process)));
}

// The loop of docs/benchmarks.md ("Learning from the service's history") on
// the toy folder: studies kept on a server with --learn-from-history become a
// model that new studies over the space bind to.
TEST_F(BenchRunTest, KeptStudiesTeachTheServerAModel) {
  metaopt::testing::ServerProcess server(
      METAOPT_SERVER_BINARY,
      {"--listen=127.0.0.1:0", absl::StrCat("--db=", dir_.File("learn.db")),
       absl::StrCat("--models=", dir_.File("learned")), "--learn-from-history",
       "--learn-min-studies=4", "--learn-min-trials=8", "--learn-epochs=3"},
      dir_.File("server.log"));
  const int port = server.Start();
  ASSERT_GT(port, 0) << server.Log();

  BenchOptions history = Options();
  history.server = absl::StrCat("127.0.0.1:", port);
  history.keep_studies = true;
  absl::StatusOr<BenchResult> kept = RunBenchmark(history);
  ASSERT_THAT(kept, IsOk()) << server.Log();

  MetaoptClient::Options options;
  options.address = history.server;
  METAOPT_ASSERT_OK_AND_ASSIGN(std::unique_ptr<MetaoptClient> client,
                               MetaoptClient::Create(options));
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::ListStudiesResponse studies,
                               client->ListStudies(v1::ListStudiesRequest()));
  // 5 tasks x 2 seeds (the flat task is skipped, the probe deleted).
  ASSERT_EQ(studies.studies_size(), 10);
  EXPECT_THAT(studies.studies(0).study_id(), HasSubstr("-random-"));

  // The learner trains in the background; wait for its DeepPipe model.
  std::string learned;
  for (int i = 0; i < 3000 && learned.empty(); ++i) {
    METAOPT_ASSERT_OK_AND_ASSIGN(v1::ListModelsResponse models,
                                 client->ListModels(v1::ListModelsRequest()));
    for (const v1::Model& model : models.models()) {
      if (model.kind() == v1::MODEL_KIND_DEEPPIPE) {
        learned = absl::StrCat(model.name(), "@", model.version());
      }
    }
    if (learned.empty()) absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_THAT(learned, ::testing::StartsWith("history-")) << server.Log();
  EXPECT_THAT(server.Log(), HasSubstr("learned from history"));

  // A new DeepPipe study over the space binds to it, and the bench runs.
  METAOPT_ASSERT_OK_AND_ASSIGN(meta::MetaDataset data,
                               meta::ReadMetaDataset(dir_.File("toy")));
  v1::CreateStudyRequest create;
  create.set_study_id("new");
  *create.mutable_spec()->mutable_search_space() = data.space;
  *create.mutable_spec()->mutable_objective() = data.objective;
  create.mutable_spec()->mutable_algorithm()->set_kind(
      v1::ALGORITHM_KIND_DEEPPIPE);
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::CreateStudyResponse created,
                               client->CreateStudy(create));
  EXPECT_EQ(created.study().bound_model(), learned);
  BenchOptions after = Options();
  after.server = history.server;
  after.methods = {"deeppipe"};
  EXPECT_THAT(RunBenchmark(after), IsOk()) << server.Log();
}
#endif

}  // namespace
}  // namespace metaopt::bench
