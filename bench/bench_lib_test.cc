#include "bench/bench_lib.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "clients/cpp/metaopt_client.h"
#include "core/common/logging.h"
#include "core/common/mutex.h"
#include "core/common/status_macros.h"
#include "core/meta_dataset/meta_dataset.h"
#include "tests/testutil/meta_dataset_folders.h"
#include "core/space/search_space.h"
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
using ::testing::Not;
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

// The standard error is that of the task means: a method that repeats one run
// on every seed (as a deterministic policy does) has the standard error of
// its task regrets, however many seeds ran, not one shrunk by sqrt(seeds).
TEST_F(BenchRunTest, StandardErrorsAreOverTaskMeans) {
  absl::StatusOr<BenchResult> result = RunBenchmark(Options());
  ASSERT_THAT(result, IsOk());
  ASSERT_GE(result->task_ids.size(), 2u);
  ASSERT_GE(result->seeds, 2);
  BenchResult repeated = *result;  // every seed's run replaced by seed 0's
  for (size_t t = 0; t < repeated.task_ids.size(); ++t) {
    for (int s = 1; s < repeated.seeds; ++s) {
      repeated.runs[repeated.RunIndex(0, t, s)].regret =
          repeated.runs[repeated.RunIndex(0, t, 0)].regret;
    }
  }
  const int k = 0;  // after the first trial
  std::vector<double> task_regrets;
  for (size_t t = 0; t < repeated.task_ids.size(); ++t) {
    task_regrets.push_back(repeated.runs[repeated.RunIndex(0, t, 0)].regret[k]);
  }
  const double n = static_cast<double>(task_regrets.size());
  double mean = 0, ss = 0;
  for (double x : task_regrets) mean += x / n;
  for (double x : task_regrets) ss += (x - mean) * (x - mean);
  const double expected = std::sqrt(ss / (n - 1) / n);
  ASSERT_GT(expected, 0.0);
  const std::vector<SummaryRow> rows = Summarize(repeated);
  EXPECT_NEAR(rows[k].regret_sem, expected, 1e-12);
  EXPECT_NEAR(rows[k].regret_mean, mean, 1e-12);
}

// Pooling the per-task regrets of runs split by task (as the folds of a
// cross-validation) gives the summary of the whole run: means, standard
// errors and ranks over the union of tasks; the report and plots are written,
// without trials.csv or timing.csv.
TEST_F(BenchRunTest, PoolingPerTaskFilesEqualsTheWholeRun) {
  BenchOptions options = Options();
  options.methods = {"random", "gp"};
  absl::StatusOr<BenchResult> whole = RunBenchmark(options);
  ASSERT_THAT(whole, IsOk());
  ASSERT_GE(whole->task_ids.size(), 2u);
  // Two files: the first task's rows, and all the others.
  const std::vector<std::string> lines =
      absl::StrSplit(PerTaskCsv(*whole), '\n', absl::SkipEmpty());
  std::string first = lines[0] + "\n", rest = lines[0] + "\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    const bool in_first =
        absl::StrContains(lines[i], absl::StrCat(",", whole->task_ids[0], ","));
    absl::StrAppend(in_first ? &first : &rest, lines[i], "\n");
  }
  const std::string a = dir_.File("a.csv"), b = dir_.File("b.csv");
  const std::string w = dir_.File("whole.csv");
  std::ofstream(a) << first;
  std::ofstream(b) << rest;
  std::ofstream(w) << PerTaskCsv(*whole);
  absl::StatusOr<BenchResult> pooled = PoolPerTaskCsvs({a, b});
  ASSERT_THAT(pooled, IsOk());
  EXPECT_EQ(pooled->trials, whole->trials);
  EXPECT_EQ(pooled->seeds, whole->seeds);
  EXPECT_EQ(pooled->task_ids, whole->task_ids);
  ASSERT_EQ(pooled->runs.size(), whole->runs.size());
  // per_task.csv keeps 8 significant digits.
  for (size_t i = 0; i < whole->runs.size(); ++i) {
    for (int k = 0; k < whole->trials; ++k) {
      EXPECT_NEAR(pooled->runs[i].regret[k], whole->runs[i].regret[k], 1e-8);
    }
  }
  absl::StatusOr<BenchResult> unsplit = PoolPerTaskCsvs({w});
  ASSERT_THAT(unsplit, IsOk());
  EXPECT_EQ(SummaryCsv(Summarize(*pooled)), SummaryCsv(Summarize(*unsplit)));

  ReportInfo info;
  info.command_line = "metaopt-bench --pool a.csv,b.csv";
  const std::string out = dir_.File("pooled");
  ASSERT_THAT(WriteOutputs(*pooled, info, out), IsOk());
  EXPECT_EQ(ReadFile(out + "/summary.csv"), SummaryCsv(Summarize(*unsplit)));
  EXPECT_THAT(ReadFile(out + "/report.md"), HasSubstr("pooled from"));
  EXPECT_THAT(ReadFile(out + "/regret_vs_trials.svg"), HasSubstr("<svg"));
  EXPECT_FALSE(std::filesystem::exists(out + "/trials.csv"));
  EXPECT_FALSE(std::filesystem::exists(out + "/timing.csv"));

  // A run missing from the pool, a repeated trial, another file.
  EXPECT_THAT(PoolPerTaskCsvs({a}), IsOk());  // fewer tasks: fine
  const std::string gap = dir_.File("gap.csv");
  std::ofstream(gap) << lines[0] << "\nrandom,t1,0,1,0.5\nrandom,t1,1,1,0.5\n"
                     << "gp,t1,0,1,0.5\n";
  EXPECT_THAT(PoolPerTaskCsvs({gap}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no run of gp on t1 seed 1")));
  const std::string twice = dir_.File("twice.csv");
  std::ofstream(twice) << lines[0]
                       << "\nrandom,t1,0,1,0.5\nrandom,t1,0,1,0.4\n";
  EXPECT_THAT(PoolPerTaskCsvs({twice}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("twice.csv:3: column \"trial\"")));
  const std::string other = dir_.File("other.csv");
  std::ofstream(other) << "method,trials,regret_mean\n";
  EXPECT_THAT(PoolPerTaskCsvs({other}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a metaopt-bench per_task.csv")));
  EXPECT_THAT(PoolPerTaskCsvs({}), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("no per_task.csv")));
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

// ---------------------------------------------------------------------------
// Failing methods and runs

// The in-process engine with two faults injected: a GP study without
// meta-features cannot be created (as a GROSI study cannot), and every
// Suggest of a study over the task whose meta-feature `entropy` is
// `failing_entropy` fails UNAVAILABLE from its third call on (as when a
// server goes away mid-run). Counts the Suggest calls. Thread-safe.
class FaultyBackend final : public StudyBackend {
 public:
  explicit FaultyBackend(std::unique_ptr<StudyBackend> engine,
                         double failing_entropy, std::atomic<int>* suggests)
      : engine_(std::move(engine)),
        failing_entropy_(failing_entropy),
        suggests_(suggests) {}

  absl::StatusOr<v1::CreateStudyResponse> CreateStudy(
      const v1::CreateStudyRequest& request) override {
    const v1::StudySpec& spec = request.spec();
    if (spec.algorithm().kind() == v1::ALGORITHM_KIND_GP &&
        spec.dataset_features().empty()) {
      return absl::FailedPreconditionError("GP here needs meta-features");
    }
    auto entropy = spec.dataset_features().find("entropy");
    if (entropy != spec.dataset_features().end() &&
        entropy->second == failing_entropy_) {
      MutexLock lock(&mu_);
      failing_.insert(request.study_id());
    }
    return engine_->CreateStudy(request);
  }
  absl::StatusOr<v1::SuggestResponse> Suggest(
      const v1::SuggestRequest& request) override {
    ++*suggests_;
    {
      MutexLock lock(&mu_);
      if (failing_.contains(request.study_id()) &&
          ++calls_[request.study_id()] >= 3) {
        return absl::UnavailableError("connection lost");
      }
    }
    return engine_->Suggest(request);
  }
  absl::StatusOr<v1::ObserveResponse> Observe(
      const v1::ObserveRequest& request) override {
    return engine_->Observe(request);
  }
  absl::StatusOr<v1::ReportIntermediateResponse> ReportIntermediate(
      const v1::ReportIntermediateRequest& request) override {
    return engine_->ReportIntermediate(request);
  }
  absl::StatusOr<v1::DeleteStudyResponse> DeleteStudy(
      const v1::DeleteStudyRequest& request) override {
    return engine_->DeleteStudy(request);
  }
  absl::StatusOr<v1::ListModelsResponse> ListModels() override {
    return engine_->ListModels();
  }
  std::string Describe() const override { return "faulty"; }

 private:
  const std::unique_ptr<StudyBackend> engine_;
  const double failing_entropy_;
  std::atomic<int>* const suggests_;
  Mutex mu_;
  absl::flat_hash_set<std::string> failing_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, int> calls_ ABSL_GUARDED_BY(mu_);
};

class FailingRunTest : public BenchRunTest {
 protected:
  // Options whose engine is a FaultyBackend failing on the task of entropy
  // (center) `failing_entropy` (-1: none).
  BenchOptions FaultyOptions(double failing_entropy) {
    BenchOptions options = Options();
    options.open_backend = [this, failing_entropy]()
        -> absl::StatusOr<std::unique_ptr<StudyBackend>> {
      METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<StudyBackend> engine,
                               OpenInProcessBackend("", RegistryOpener()));
      return std::make_unique<FaultyBackend>(std::move(engine),
                                             failing_entropy, &suggests_);
    };
    return options;
  }

  // Rewrites the toy data with tasks t2 and t4 (neither the first) without
  // meta-features.
  void DropFeaturesOfT2AndT4() {
    meta::MetaDataset data = MakeDataset();
    for (meta::Task& task : data.tasks) {
      if (task.id == "t2" || task.id == "t4") task.metafeatures.clear();
    }
    ASSERT_THAT(meta::WriteMetaDataset(data, dir_.File("toy")), IsOk());
  }

  std::atomic<int> suggests_{0};
};

TEST_F(FailingRunTest, EveryUnavailablePairIsReportedBeforeTheFirstRun) {
  DropFeaturesOfT2AndT4();
  BenchOptions options = FaultyOptions(-1);
  options.methods = {"random", "gp"};
  options.jobs = 2;
  absl::StatusOr<BenchResult> result = RunBenchmark(options);
  EXPECT_THAT(result,
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("gp on 2 of 5 tasks (t2, t4): "
                                 "FAILED_PRECONDITION: GP here needs "
                                 "meta-features")));
  EXPECT_THAT(result.status().message(), HasSubstr("--skip-unavailable"));
  EXPECT_THAT(result.status().message(), Not(HasSubstr("random on")));
  EXPECT_EQ(suggests_.load(), 0);
}

TEST_F(FailingRunTest, SkipUnavailableLeavesThoseTasksOutForEveryMethod) {
  DropFeaturesOfT2AndT4();
  BenchOptions options = FaultyOptions(-1);
  options.methods = {"random", "gp"};
  options.skip_unavailable = true;
  absl::StatusOr<BenchResult> result = RunBenchmark(options);
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->methods.size(), 2u);
  EXPECT_THAT(result->unavailable_methods, IsEmpty());
  EXPECT_THAT(result->task_ids, ElementsAre("t1", "small", "t3"));
  EXPECT_THAT(
      result->unavailable_tasks,
      ElementsAre(
          Pair("t2", "gp: FAILED_PRECONDITION: GP here needs meta-features"),
          Pair("t4", "gp: FAILED_PRECONDITION: GP here needs meta-features")));
  EXPECT_EQ(result->runs.size(), 2u * 3u * 2u);
  for (const RunResult& run : result->runs) EXPECT_EQ(run.regret.size(), 10u);
  ReportInfo info;
  EXPECT_THAT(ReportMarkdown(*result, Summarize(*result),
                             SummarizeTiming(*result), info),
              HasSubstr("left out because a method cannot run on them "
                        "(--skip-unavailable): 2: t2, t4 (gp: "
                        "FAILED_PRECONDITION: GP here needs meta-features)"));

  // A method that can run on no task is dropped, and leaves every task in.
  meta::MetaDataset data = MakeDataset();
  for (meta::Task& task : data.tasks) task.metafeatures.clear();
  data.metafeature_names.clear();
  ASSERT_THAT(meta::WriteMetaDataset(data, dir_.File("toy")), IsOk());
  result = RunBenchmark(options);
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->methods.size(), 1u);
  EXPECT_THAT(result->unavailable_methods,
              ElementsAre(Pair("gp", HasSubstr("needs meta-features"))));
  EXPECT_THAT(result->unavailable_tasks, IsEmpty());
  EXPECT_EQ(result->task_ids.size(), 5u);
}

// A run fails on the fourth task (t3): the three tasks before it finished and
// are kept (and written, with a report that says why it is partial), t3 and
// t4 are not.
TEST_F(FailingRunTest, AFailedRunKeepsTheTasksThatFinished) {
  absl::StatusOr<BenchResult> whole = RunBenchmark(Options());
  ASSERT_THAT(whole, IsOk());
  ASSERT_THAT(whole->task_ids, ElementsAre("t1", "t2", "small", "t3", "t4"));

  absl::StatusOr<BenchResult> result = RunBenchmark(FaultyOptions(0.9));
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(result->failure,
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("method random, task \"t3\", seed 0: "
                                 "connection lost")));
  EXPECT_THAT(result->task_ids, ElementsAre("t1", "t2", "small"));
  EXPECT_THAT(result->unfinished_tasks, ElementsAre("t3", "t4"));
  ASSERT_EQ(result->runs.size(), 3u * 2u);
  // The kept runs are those of the run without the fault.
  const std::string kept = PerTaskCsv(*result);
  EXPECT_TRUE(absl::StartsWith(PerTaskCsv(*whole), kept));
  EXPECT_EQ(std::count(kept.begin(), kept.end(), '\n'), 1 + 3 * 2 * 10);
  EXPECT_THAT(result->short_tasks, ElementsAre(Pair("small", 6)));

  ReportInfo info;
  const std::string out = dir_.File("partial");
  ASSERT_THAT(WriteOutputs(*result, info, out), IsOk());
  EXPECT_EQ(ReadFile(out + "/per_task.csv"), kept);
  EXPECT_EQ(ReadFile(out + "/trials.csv"), TrialsCsv(*result));
  const std::string report = ReadFile(out + "/report.md");
  EXPECT_THAT(report, HasSubstr("**Partial run.** It stopped at an error: "
                                "`UNAVAILABLE: method random, task \"t3\""));
  EXPECT_THAT(report, HasSubstr("not finished: 2 (t3, t4)"));
  // What was written can be pooled with a rerun of the rest.
  EXPECT_THAT(PoolPerTaskCsvs({out + "/per_task.csv"}), IsOk());

  // A failure before any task finished leaves nothing to keep.
  EXPECT_THAT(RunBenchmark(FaultyOptions(0.2)),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("task \"t1\", seed 0: connection lost")));
}

// ---------------------------------------------------------------------------
// Early stopping: rules, curves, the replay

TEST(EarlyStoppingRulesTest, ParsesNamesAndSettings) {
  absl::StatusOr<std::vector<EarlyStoppingRule>> rules =
      ParseEarlyStoppingRules(
          " none, median:start_step=2:min_trials=4 ,sha:cohort_size=9,"
          "asha:min_resource=1:reduction_factor=3:grace_period=3,"
          "threshold:threshold=0.25");
  ASSERT_THAT(rules, IsOk());
  ASSERT_EQ(rules->size(), 5u);
  EXPECT_EQ((*rules)[0].name, "none");
  EXPECT_EQ((*rules)[0].spec.rule_case(), v1::EarlyStoppingSpec::RULE_NOT_SET);
  EXPECT_EQ((*rules)[1].name, "median:start_step=2:min_trials=4");
  EXPECT_EQ((*rules)[1].spec.median().start_step(), 2);
  EXPECT_EQ((*rules)[1].spec.median().min_trials(), 4);
  EXPECT_EQ((*rules)[2].spec.successive_halving().cohort_size(), 9);
  EXPECT_EQ((*rules)[3].spec.asha().min_resource(), 1);
  EXPECT_EQ((*rules)[3].spec.asha().reduction_factor(), 3);
  EXPECT_EQ((*rules)[3].spec.asha().grace_period(), 3);
  EXPECT_DOUBLE_EQ((*rules)[4].spec.threshold().threshold(), 0.25);
  // metric= sets EarlyStoppingSpec.metric, beside the rule's settings.
  absl::StatusOr<std::vector<EarlyStoppingRule>> metric =
      ParseEarlyStoppingRules("asha:min_resource=1:metric=loss,median");
  ASSERT_THAT(metric, IsOk());
  EXPECT_EQ((*metric)[0].name, "asha:min_resource=1:metric=loss");
  EXPECT_EQ((*metric)[0].spec.metric(), "loss");
  EXPECT_EQ((*metric)[0].spec.asha().min_resource(), 1);
  EXPECT_EQ((*metric)[1].spec.metric(), "");
  // A rule without settings is still set (its defaults apply).
  absl::StatusOr<std::vector<EarlyStoppingRule>> bare =
      ParseEarlyStoppingRules("asha");
  ASSERT_THAT(bare, IsOk());
  EXPECT_EQ((*bare)[0].spec.rule_case(), v1::EarlyStoppingSpec::kAsha);
}

TEST(EarlyStoppingRulesTest, RejectsBadRulesAndSettings) {
  EXPECT_THAT(
      ParseEarlyStoppingRules(""),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no rule given")));
  EXPECT_THAT(ParseEarlyStoppingRules("hyperband"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("known: none, median, sha, asha, threshold")));
  EXPECT_THAT(ParseEarlyStoppingRules("asha:eta=3"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("min_resource, reduction_factor")));
  EXPECT_THAT(ParseEarlyStoppingRules("asha:reduction_factor"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not FIELD=VALUE")));
  EXPECT_THAT(ParseEarlyStoppingRules("asha:reduction_factor=2.5"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"2.5\" is not a finite int32")));
  EXPECT_THAT(ParseEarlyStoppingRules("threshold:threshold=inf"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not a finite double")));
  EXPECT_THAT(ParseEarlyStoppingRules("asha:metric="),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("metric= needs a column")));
  EXPECT_THAT(ParseEarlyStoppingRules("none:x=1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("none has no settings")));
  EXPECT_THAT(
      ParseEarlyStoppingRules("median,median"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("listed twice")));
}

TEST(RegretByCostTest, CountsTrialsWhenTheyFinish) {
  // Minimize, best 0, worst 1. Trials: value 0.8 costing 3 steps, 0.5
  // costing 1, 0.9 costing 4, 0.2 costing 4 (finishes at 12 > budget 10).
  const std::vector<double> curve = RegretByCost(
      {0.8, 0.5, 0.9, 0.2}, {3, 1, 4, 4}, 0.0, 1.0, v1::GOAL_MINIMIZE, 10);
  EXPECT_THAT(curve, ElementsAre(1, 1, 0.8, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5));
  // Maximize, best 1, worst 0: 0.8 after 2 steps is regret 0.2.
  EXPECT_THAT(RegretByCost({0.8}, {2}, 1.0, 0.0, v1::GOAL_MAXIMIZE, 3),
              ElementsAre(1, ::testing::DoubleNear(0.2, 1e-12),
                          ::testing::DoubleNear(0.2, 1e-12)));
}

// Curves for every task of `data`: `length` steps ending at y, each `step`
// better than the one before (value at step s = y + step * (length - s)).
std::string ToyCurves(const meta::MetaDataset& data, int length, double step) {
  std::string out = "task,config,epoch,value,loss\n";
  for (const meta::Task& task : data.tasks) {
    for (size_t i = 0; i < task.y.size(); ++i) {
      for (int s = 1; s <= length; ++s) {
        // loss = 1 - value: it ranks the configurations the other way.
        const double value = task.y[i] + step * (length - s);
        absl::StrAppend(&out, absl::StrFormat("%s,%d,%d,%.17g,%.17g\n", task.id,
                                              i, s, value, 1 - value));
      }
    }
  }
  return out;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// ---------------------------------------------------------------------------
// Several objectives and constraints.

// A catalogue of four entries, y maximised, seconds minimised: after
// normalisation (seconds on a log10 scale) the points are A (0, 2/3),
// B (0.5, 1/3), C (1, 0) and D (0, 1); D is dominated by A.
std::vector<objective::Point> TinyTargets() {
  return NormalizedTargets({{0.9, 0.8, 0.7, 0.9}, {10, 1, 0.1, 100}},
                           {v1::GOAL_MAXIMIZE, v1::GOAL_MINIMIZE},
                           {false, true});
}

TEST(HypervolumeRegretTest, TrueFrontOfATinyCatalogue) {
  const std::vector<objective::Point> targets = TinyTargets();
  ASSERT_EQ(targets.size(), 4u);
  const std::vector<objective::Point> want = {
      {0, 2.0 / 3}, {0.5, 1.0 / 3}, {1, 0}, {0, 1}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(targets[i][0], want[i][0], 1e-12) << i;
    EXPECT_NEAR(targets[i][1], want[i][1], 1e-12) << i;
  }
  // The front A, B, C up to (1.1, 1.1): slabs of width 0.5, 0.5 and 0.1
  // under heights 1.1 - 2/3, 1.1 - 1/3 and 1.1.
  EXPECT_NEAR(TrueFrontHypervolume(targets), 0.71, 1e-12);
  // Times below a millisecond count as one; an objective without spread is
  // 0 everywhere.
  const std::vector<objective::Point> flat = NormalizedTargets(
      {{1, 2}, {1e-6, 1e-3}}, {v1::GOAL_MINIMIZE, v1::GOAL_MINIMIZE},
      {false, true});
  EXPECT_EQ(flat[0][1], 0.0);
  EXPECT_EQ(flat[1][1], 0.0);
}

TEST(HypervolumeRegretTest, RegretOnAKnownCase) {
  const std::vector<objective::Point> targets = TinyTargets();
  const double front = TrueFrontHypervolume(targets);
  // D alone: 0.1 x 1.1; then A: 1.1 x (1.1 - 2/3); then C adds the strip
  // below A, 0.1 x 2/3; carried forward after the trace ends.
  const std::vector<double> curve =
      HypervolumeRegretCurve({3, 0, 2}, targets, front, 4);
  ASSERT_EQ(curve.size(), 4u);
  EXPECT_NEAR(curve[0], 1 - 0.11 / 0.71, 1e-12);
  EXPECT_NEAR(curve[1], 1 - 1.1 * (1.1 - 2.0 / 3) / 0.71, 1e-12);
  EXPECT_NEAR(curve[2], 1 - (1.1 * (1.1 - 2.0 / 3) + 0.1 * 2.0 / 3) / 0.71,
              1e-12);
  EXPECT_EQ(curve[3], curve[2]);
  // The whole front: no regret; nothing observed: 1.
  EXPECT_NEAR(HypervolumeRegretCurve({1, 2, 0}, targets, front, 3).back(), 0,
              1e-12);
  EXPECT_THAT(HypervolumeRegretCurve({}, targets, front, 2),
              ElementsAre(1.0, 1.0));
}

TEST(FeasibleRegretTest, CountsFeasibleTrialsOnly) {
  // Maximised; the feasible values span [0.5, 0.9].
  const std::vector<double> curve =
      FeasibleRegretCurve({0.95, 0.6, 0.99, 0.9}, {false, true, false, true},
                          0.9, 0.5, v1::GOAL_MAXIMIZE, 5);
  ASSERT_EQ(curve.size(), 5u);
  EXPECT_EQ(curve[0], 1.0);  // infeasible, however good
  EXPECT_NEAR(curve[1], 0.75, 1e-12);
  EXPECT_NEAR(curve[2], 0.75, 1e-12);
  EXPECT_EQ(curve[3], 0.0);
  EXPECT_EQ(curve[4], 0.0);
}

// MakeDataset with a fit time per configuration that grows with x, so that a
// small error (x near the task's center) costs more time on some tasks.
meta::MetaDataset WithSeconds(meta::MetaDataset data) {
  for (meta::Task& task : data.tasks) {
    std::vector<double>& seconds = task.values["fit_seconds"];
    for (size_t i = 0; i < task.y.size(); ++i) {
      const double x =
          task.configurations[i].assignments(0).parameters().at("x").number();
      seconds.push_back(0.01 * std::exp(5 * x) + 0.001 * (i % 3));
    }
  }
  return data;
}

class ObjectivesRunTest : public BenchRunTest {
 protected:
  void SetUp() override {
    SetMinLogSeverity(LogSeverity::kWarning);
    ASSERT_THAT(
        meta::WriteMetaDataset(WithSeconds(MakeDataset()), dir_.File("toy")),
        IsOk());
  }

  // The test split as the bench reads it, with fit_seconds.
  absl::StatusOr<meta::MetaDataset> ReadTestSplit() const {
    meta::ReadOptions read;
    read.splits = {"test"};
    read.value_columns = {"fit_seconds"};
    return meta::ReadMetaDataset(dir_.File("toy"), read);
  }
};

TEST_F(ObjectivesRunTest, SeveralObjectivesReportHypervolumeRegret) {
  BenchOptions options = Options();
  options.methods = {"random", "gp"};
  options.objectives = {"y", "fit_seconds"};
  absl::StatusOr<BenchResult> result = RunBenchmark(options);
  ASSERT_THAT(result, IsOk());
  EXPECT_THAT(result->objectives, ElementsAre("y", "fit_seconds"));
  absl::StatusOr<meta::MetaDataset> data = ReadTestSplit();
  ASSERT_THAT(data, IsOk());
  for (size_t t = 0; t < result->task_ids.size(); ++t) {
    const meta::Task* task = data->FindTask(result->task_ids[t]);
    ASSERT_NE(task, nullptr);
    absl::StatusOr<ReplayTask> replay = PrepareTask(*task, result->goal);
    ASSERT_THAT(replay, IsOk());
    ASSERT_THAT(AttachObjectives(*task, {"fit_seconds"}, result->goal,
                                 *replay),
                IsOk());
    for (size_t m = 0; m < 2; ++m) {
      for (int s = 0; s < 2; ++s) {
        const RunResult& run = result->runs[result->RunIndex(m, t, s)];
        // The regret is the hypervolume regret of the run's own trace.
        EXPECT_EQ(run.regret,
                  HypervolumeRegretCurve(run.entries, replay->targets,
                                         replay->front_hypervolume, 10));
        for (size_t k = 1; k < run.regret.size(); ++k) {
          EXPECT_LE(run.regret[k], run.regret[k - 1]);
        }
        // The whole catalogue of "small" covers its front.
        if (result->task_ids[t] == "small") {
          EXPECT_NEAR(run.regret.back(), 0, 1e-12);
        }
      }
    }
  }
  ReportInfo info;
  const std::string out = dir_.File("out");
  ASSERT_THAT(WriteOutputs(*result, info, out), IsOk());
  const std::string report = ReadFile(out + "/report.md");
  EXPECT_THAT(report, HasSubstr("## Hypervolume regret"));
  EXPECT_THAT(report, HasSubstr("`fit_seconds` (minimize)"));
  EXPECT_THAT(ReadFile(out + "/regret_vs_trials.svg"),
              HasSubstr("hypervolume regret"));
}

TEST_F(ObjectivesRunTest, ConstraintReportsTheBestFeasibleRegret) {
  BenchOptions options = Options();
  options.methods = {"random"};
  options.constraint = "fit_seconds<=median";
  absl::StatusOr<BenchResult> result = RunBenchmark(options);
  ASSERT_THAT(result, IsOk());
  EXPECT_EQ(result->constraint, "fit_seconds");
  absl::StatusOr<meta::MetaDataset> data = ReadTestSplit();
  ASSERT_THAT(data, IsOk());
  for (size_t t = 0; t < result->task_ids.size(); ++t) {
    const meta::Task* task = data->FindTask(result->task_ids[t]);
    absl::StatusOr<ReplayTask> replay = PrepareTask(*task, result->goal);
    ASSERT_THAT(replay, IsOk());
    ASSERT_THAT(AttachConstraint(*task, "fit_seconds", result->goal, *replay),
                IsOk());
    // The median of an even count is the mean of the middle two.
    std::vector<double> sorted = replay->constraint_values;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    EXPECT_DOUBLE_EQ(replay->constraint_bound,
                     (sorted[n / 2 - 1] + sorted[n / 2]) / 2);
    for (int s = 0; s < 2; ++s) {
      const RunResult& run = result->runs[result->RunIndex(0, t, s)];
      EXPECT_EQ(run.regret, RunRegret(*replay, run.entries, result->goal, 10));
      if (result->task_ids[t] == "small") EXPECT_EQ(run.regret.back(), 0.0);
    }
  }
}

TEST_F(ObjectivesRunTest, TracesAreScoredAsTheEnginesRuns) {
  BenchOptions options = Options();
  options.objectives = {"y", "fit_seconds"};
  absl::StatusOr<BenchResult> engine = RunBenchmark(options);
  ASSERT_THAT(engine, IsOk());
  // The random runs' traces under another name, with a further column.
  std::string trace = "method,task,seed,trial,entry,suggest_ms\n";
  for (size_t t = 0; t < engine->task_ids.size(); ++t) {
    for (int s = 0; s < 2; ++s) {
      const RunResult& run = engine->runs[engine->RunIndex(0, t, s)];
      for (size_t k = 0; k < run.entries.size(); ++k) {
        absl::StrAppend(&trace, "copy,", engine->task_ids[t], ",", s, ",",
                        k + 1, ",", run.entries[k], ",0.5\n");
      }
    }
  }
  WriteText(dir_.File("trace.csv"), trace);
  options.traces = {dir_.File("trace.csv")};
  absl::StatusOr<BenchResult> both = RunBenchmark(options);
  ASSERT_THAT(both, IsOk());
  ASSERT_EQ(both->methods.size(), 2u);
  EXPECT_EQ(both->methods[1].name, "copy");
  for (size_t t = 0; t < both->task_ids.size(); ++t) {
    for (int s = 0; s < 2; ++s) {
      EXPECT_EQ(both->runs[both->RunIndex(1, t, s)].regret,
                both->runs[both->RunIndex(0, t, s)].regret);
    }
  }
  // Broken traces are named: (trace, what the error says).
  const std::pair<std::string, std::string> kBroken[] = {
      {"copy,t1,0,1,99", "catalogue"},
      {"copy,t1,0,1,3", "no run of copy on task \"t1\" seed 1"},
      {"random,t1,0,1,3", "already a method"},
  };
  for (const auto& [row, message] : kBroken) {
    WriteText(dir_.File("bad.csv"),
              absl::StrCat("method,task,seed,trial,entry\n", row, "\n"));
    options.traces = {dir_.File("bad.csv")};
    EXPECT_THAT(RunBenchmark(options),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(message)))
        << row;
  }
}

TEST_F(ObjectivesRunTest, BadObjectivesAndConstraintsAreInvalidArgument) {
  BenchOptions options = Options();
  options.objectives = {"fit_seconds", "y"};
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must be y followed by")));
  options.objectives = {"y", "memory"};
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"memory\" is not a column")));
  options.objectives = {};
  options.constraint = "fit_seconds<1";
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not COLUMN<=median")));
  options.constraint = "fit_seconds<=median";
  options.objectives = {"y", "fit_seconds"};
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("y alone")));
}

TEST(ReadCurvesTest, ReadsCurvesAndRejectsBrokenOrder) {
  ScopedTempDir dir;
  const std::string path = dir.File("curves.csv");
  WriteText(path,
            "task,config,epoch,value\na,0,1,0.5\na,0,2,0.25\na,1,1,0.75\n"
            "a,1,2,0.5\nb,0,1,1e-3\n");
  absl::StatusOr<CurveTable> table = ReadCurves(path);
  ASSERT_THAT(table, IsOk());
  ASSERT_EQ(table->size(), 2u);
  EXPECT_THAT(table->at("a"),
              ElementsAre(ElementsAre(0.5, 0.25), ElementsAre(0.75, 0.5)));
  EXPECT_THAT(table->at("b"), ElementsAre(ElementsAre(1e-3)));

  struct Bad {
    const char* text;
    const char* message;
  };
  for (const Bad& bad : {
           Bad{"task,cfg,epoch,value\n", "must start with task,config"},
           Bad{"task,config,epoch,value\n", "no curves"},
           Bad{"task,config,epoch,value\na,0,2,0.5\n", "epoch\": 2 does not"},
           Bad{"task,config,epoch,value\na,0,1,0.5\na,0,3,0.5\n",
               "3 does not follow epoch 1"},
           Bad{"task,config,epoch,value\na,1,1,0.5\n",
               "1 where 0 was expected"},
           Bad{"task,config,epoch,value\na,0,1,0.5\nb,0,1,0.5\na,1,1,0.5\n",
               "rows of \"a\" are not contiguous"},
           Bad{"task,config,epoch,value\na,0,1,nan\n", "column \"value\""},
           Bad{"task,config,epoch,value\na,0,1\n", "expected 4 fields"},
       }) {
    SCOPED_TRACE(bad.text);
    WriteText(path, bad.text);
    EXPECT_THAT(ReadCurves(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr(bad.message)));
  }
  EXPECT_THAT(ReadCurves(dir.File("missing.csv")),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST(ReadCurvesTest, ReadsAFurtherColumn) {
  ScopedTempDir dir;
  const std::string path = dir.File("curves.csv");
  WriteText(path,
            "task,config,epoch,value,loss,acc\na,0,1,0.5,2.5,0.1\n"
            "a,0,2,0.25,1.5,0.2\n");
  absl::StatusOr<CurveTable> loss = ReadCurves(path, "loss");
  ASSERT_THAT(loss, IsOk());
  EXPECT_THAT(loss->at("a"), ElementsAre(ElementsAre(2.5, 1.5)));
  absl::StatusOr<CurveTable> acc = ReadCurves(path, "acc");
  ASSERT_THAT(acc, IsOk());
  EXPECT_THAT(acc->at("a"), ElementsAre(ElementsAre(0.1, 0.2)));
  EXPECT_THAT(ReadCurves(path, "f1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no column \"f1\"")));
  // The key columns are not metrics.
  EXPECT_THAT(ReadCurves(path, "epoch"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no column \"epoch\"")));
  WriteText(path, "task,config,epoch,value,loss\na,0,1,0.5,x\n");
  EXPECT_THAT(ReadCurves(path, "loss"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("column \"loss\"")));
}

TEST(AttachCurvesTest, ChecksCountLengthAndLastValue) {
  meta::Task task = MakeTask("t", "test", 3, 0.5);
  absl::StatusOr<ReplayTask> replay = PrepareTask(task, v1::GOAL_MINIMIZE);
  ASSERT_THAT(replay, IsOk());
  CurveTable table;
  table["t"] = {{1.0, replay->y[0]}, {2.0, replay->y[1]}, {replay->y[2]}};
  EXPECT_THAT(AttachCurves(table, *replay),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("config 2: 1 epochs where config 0 has 2")));
  table["t"][2] = {0.0, replay->y[2] + 1};
  EXPECT_THAT(
      AttachCurves(table, *replay),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not its y")));
  table["t"].pop_back();
  EXPECT_THAT(AttachCurves(table, *replay),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("2 curves for 3 configurations")));
  table["t"].push_back({0.0, replay->y[2]});
  EXPECT_THAT(AttachCurves(table, *replay), IsOk());
  EXPECT_EQ(replay->curves.size(), 3u);
  EXPECT_THAT(
      AttachCurves(CurveTable(), *replay),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has no curves")));
  // Metric curves: any last value, the values' length.
  CurveTable loss;
  loss["t"] = {{3.0, 2.0}, {3.0, 1.0}, {3.0}};
  EXPECT_THAT(AttachMetricCurves(loss, "loss", *replay),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("config 2: 1 epochs where config 0 has 2")));
  loss["t"] = {{3.0}, {3.0}, {3.0}};
  EXPECT_THAT(AttachMetricCurves(loss, "loss", *replay),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the loss curves have 1 epochs, the value "
                                 "curves 2")));
  loss["t"] = {{3.0, 2.0}, {3.0, 1.0}, {3.0, 9.0}};
  ASSERT_THAT(AttachMetricCurves(loss, "loss", *replay), IsOk());
  ASSERT_EQ(replay->metric_curves.size(), 1u);
  EXPECT_EQ(replay->metric_curves[0].first, "loss");
  EXPECT_EQ(replay->metric_curves[0].second, loss["t"]);
}

class EarlyStoppingRunTest : public BenchRunTest {
 protected:
  static constexpr int kLength = 4;
  static constexpr double kStep = 0.1;
  static constexpr double kThreshold = 0.45;

  void SetUp() override {
    BenchRunTest::SetUp();
    WriteText(dir_.File("toy/curves.csv"),
              ToyCurves(MakeDataset(), kLength, kStep));
  }

  BenchOptions EarlyOptions() const {
    BenchOptions options = Options();
    options.early_stopping =
        absl::StrFormat("none,threshold:threshold=%g", kThreshold);
    return options;
  }

  // What the threshold rule must do with the curve of value y: stop at the
  // first step whose value is above the threshold. A stop at the last step
  // cuts nothing short: the trial does not count as stopped.
  static int ExpectedCost(double y, bool* stopped) {
    for (int s = 1; s <= kLength; ++s) {
      if (y + kStep * (kLength - s) > kThreshold) {
        *stopped = s < kLength;
        return s;
      }
    }
    *stopped = false;
    return kLength;
  }
};

TEST_F(EarlyStoppingRunTest, ReplayStopsWhereTheRuleSaysAndCountsSteps) {
  absl::StatusOr<BenchResult> result = RunBenchmark(EarlyOptions());
  ASSERT_THAT(result, IsOk());
  ASSERT_TRUE(result->early_stopping);
  EXPECT_EQ(result->curve_length, kLength);
  EXPECT_EQ(result->budget, 10 * kLength);  // --trials full curves
  ASSERT_EQ(result->methods.size(), 2u);
  EXPECT_EQ(result->methods[0].name, "none");
  EXPECT_EQ(result->methods[1].name, "threshold:threshold=0.45");
  EXPECT_EQ(result->methods[1].base_method, "random");

  const meta::MetaDataset data = MakeDataset();
  int stopped_trials = 0;
  for (size_t m = 0; m < 2; ++m) {
    for (size_t t = 0; t < result->task_ids.size(); ++t) {
      const meta::Task* task = data.FindTask(result->task_ids[t]);
      ASSERT_NE(task, nullptr);
      for (int s = 0; s < result->seeds; ++s) {
        SCOPED_TRACE(
            absl::StrCat("method ", m, " task ", task->id, " seed ", s));
        const RunResult& run = result->runs[result->RunIndex(m, t, s)];
        ASSERT_EQ(run.costs.size(), run.entries.size());
        ASSERT_EQ(run.stopped.size(), run.entries.size());
        int64_t spent = 0;
        for (size_t k = 0; k < run.entries.size(); ++k) {
          // No trial starts once the budget is spent.
          EXPECT_LT(spent, result->budget);
          const double y = task->y[run.entries[k]];
          bool stopped = false;
          const int expected = m == 0 ? kLength : ExpectedCost(y, &stopped);
          EXPECT_EQ(run.costs[k], expected) << "entry " << run.entries[k];
          EXPECT_EQ(run.stopped[k], stopped);
          // A stopped trial is observed with the last value it reported.
          EXPECT_DOUBLE_EQ(run.values[k], y + kStep * (kLength - expected));
          spent += run.costs[k];
          stopped_trials += stopped ? 1 : 0;
        }
        EXPECT_EQ(run.cost, spent);
        // The run ends at the budget, after T trials or with the catalogue.
        const int size = static_cast<int>(task->y.size());
        EXPECT_TRUE(spent >= result->budget ||
                    run.trials_observed == result->trials ||
                    run.trials_observed == size);
        if (m == 0) {
          EXPECT_EQ(run.trials_observed, std::min(10, size));
        }
        EXPECT_EQ(run.regret_by_cost.size(),
                  static_cast<size_t>(result->budget));
        double best = task->y[0];
        double worst = task->y[0];
        for (double v : task->y) {
          best = std::min(best, v);
          worst = std::max(worst, v);
        }
        EXPECT_EQ(run.regret_by_cost,
                  RegretByCost(run.values, run.costs, best, worst,
                               v1::GOAL_MINIMIZE, result->budget));
      }
    }
  }
  EXPECT_GT(stopped_trials, 0);

  const std::vector<CostSummaryRow> cost = SummarizeCost(*result);
  ASSERT_EQ(cost.size(), 2u * static_cast<size_t>(result->budget));
  const std::vector<StoppingRow> stopping = SummarizeStopping(*result, cost);
  ASSERT_EQ(stopping.size(), 2u);
  EXPECT_EQ(stopping[0].stopped_fraction, 0);
  EXPECT_DOUBLE_EQ(stopping[0].saving, 1.0);  // none against itself
  EXPECT_GT(stopping[1].stopped_fraction, 0);
  EXPECT_EQ(stopping[1].rule, "threshold:threshold=0.45");
}

TEST_F(EarlyStoppingRunTest, AStopAtTheLastStepIsNotCountedAsStopped) {
  // One rung, at the curves' last step: ASHA answers stop there for every
  // trial not best so far, but nothing is cut short.
  BenchOptions options = Options();
  options.early_stopping = absl::StrFormat("asha:min_resource=%d", kLength);
  absl::StatusOr<BenchResult> result = RunBenchmark(options);
  ASSERT_THAT(result, IsOk());
  int trials = 0;
  for (const RunResult& run : result->runs) {
    for (size_t k = 0; k < run.costs.size(); ++k) {
      EXPECT_EQ(run.costs[k], kLength);
      EXPECT_FALSE(run.stopped[k]);
      ++trials;
    }
  }
  EXPECT_GT(trials, 0);
}

TEST_F(EarlyStoppingRunTest, ARuleWithAMetricComparesThatColumn) {
  // The threshold rule on `loss` (1 - value, minimized): it stops a trial at
  // the first step whose loss is above the threshold, i.e. whose value is
  // below 1 - threshold: the good configurations, here.
  BenchOptions options = Options();
  options.early_stopping =
      absl::StrFormat("threshold:threshold=%g:metric=loss", kThreshold);
  absl::StatusOr<BenchResult> result = RunBenchmark(options);
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->methods.size(), 1u);
  int trials = 0;
  int stopped_trials = 0;
  for (const RunResult& run : result->runs) {
    for (size_t k = 0; k < run.costs.size(); ++k) {
      // Recover y from the observed value and the cost.
      const double y = run.values[k] - kStep * (kLength - run.costs[k]);
      int expected = kLength;
      for (int s = 1; s <= kLength; ++s) {
        if (1 - (y + kStep * (kLength - s)) > kThreshold) {
          expected = s;
          break;
        }
      }
      EXPECT_EQ(run.costs[k], expected) << "y " << y;
      ++trials;
      stopped_trials += run.stopped[k] ? 1 : 0;
    }
  }
  EXPECT_GT(trials, 0);
  EXPECT_GT(stopped_trials, 0);
  // A metric the curves file lacks.
  options.early_stopping = "asha:metric=accuracy";
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no column \"accuracy\"")));
}

TEST_F(EarlyStoppingRunTest, BudgetAndOptionsAreChecked) {
  BenchOptions options = EarlyOptions();
  options.budget = 6;
  absl::StatusOr<BenchResult> result = RunBenchmark(options);
  ASSERT_THAT(result, IsOk());
  for (const RunResult& run : result->runs) {
    // Without a rule: two trials (4 + 4 steps; the second starts at 4 < 6).
    ASSERT_GE(run.trials_observed, 1);
    EXPECT_LT(run.cost - run.costs.back(), 6);
  }
  EXPECT_EQ(result->runs[result->RunIndex(0, 0, 0)].trials_observed, 2);

  options = EarlyOptions();
  options.curves_path = dir_.File("missing.csv");
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  options = Options();
  options.budget = 5;
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--early-stopping runs only")));
  options = EarlyOptions();
  options.early_stopping = "asha:bogus=1";
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  // Curves of tasks that are not replayed are ignored.
  WriteText(dir_.File("toy/curves.csv"),
            ToyCurves(MakeDataset(), kLength, kStep) + "zz,0,1,0.5,1\n");
  EXPECT_THAT(RunBenchmark(EarlyOptions()), IsOk());
}

TEST_F(EarlyStoppingRunTest, WritesCostOutputs) {
  BenchOptions options = EarlyOptions();
  options.methods = {"random", "gp"};
  absl::StatusOr<BenchResult> result = RunBenchmark(options);
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->methods.size(), 4u);
  EXPECT_EQ(result->methods[1].name, "random/threshold:threshold=0.45");
  EXPECT_EQ(result->methods[2].name, "gp/none");
  ReportInfo info;
  const std::string out = dir_.File("out-es");
  ASSERT_THAT(WriteOutputs(*result, info, out), IsOk());
  const std::string cost = ReadFile(out + "/cost_summary.csv");
  EXPECT_TRUE(absl::StartsWith(cost, "method,cost,regret_mean,regret_sem\n"));
  EXPECT_EQ(std::count(cost.begin(), cost.end(), '\n'), 1 + 4 * 40);
  const std::string stopping = ReadFile(out + "/early_stopping.csv");
  EXPECT_EQ(std::count(stopping.begin(), stopping.end(), '\n'), 1 + 4);
  EXPECT_THAT(stopping, HasSubstr("\ngp/none,none,gp,"));
  EXPECT_TRUE(
      absl::StartsWith(ReadFile(out + "/trials.csv"),
                       "method,task,seed,trial,entry,value,cost,stopped\n"));
  const std::string report = ReadFile(out + "/report.md");
  EXPECT_THAT(report, HasSubstr("## Early stopping"));
  EXPECT_THAT(report,
              HasSubstr("| 5 steps | 10 steps | 20 steps | 40 steps |"));
  for (const char* name : {"regret_vs_cost.svg", "log_regret_vs_cost.svg"}) {
    SCOPED_TRACE(name);
    const std::string svg = ReadFile(absl::StrCat(out, "/", name));
    int paths = 0;
    EXPECT_TRUE(BalancedXml(svg, "path", &paths));
    EXPECT_EQ(paths, 4);
  }
}

// The committed learning-curves meta-dataset (data/learning-curves).
std::string SourceDir() {
  const char* source = std::getenv("METAOPT_SOURCE_DIR");
  return source != nullptr && *source != '\0' ? source
                                              : METAOPT_SOURCE_DIR_DEFAULT;
}

TEST(LearningCurvesDataTest, CommittedCurvesMatchTheMetaDataset) {
  const std::string dir = SourceDir() + "/data/learning-curves";
  absl::StatusOr<meta::MetaDataset> data = meta::ReadMetaDataset(dir);
  ASSERT_THAT(data, IsOk());
  EXPECT_EQ(data->name, "learning-curves");
  EXPECT_EQ(data->objective.goal(), v1::GOAL_MINIMIZE);
  ASSERT_EQ(data->tasks.size(), 16u);
  std::map<std::string, int> splits;
  for (const meta::Task& task : data->tasks) ++splits[task.split];
  EXPECT_THAT(splits,
              ElementsAre(Pair("test", 8), Pair("train", 4), Pair("valid", 4)));
  absl::StatusOr<CurveTable> curves = ReadCurves(dir + "/curves.csv");
  ASSERT_THAT(curves, IsOk());
  EXPECT_EQ(curves->size(), data->tasks.size());
  // Configuration i is the same on every task (a prefix of one Sobol
  // sequence), so the catalogues are equal entry by entry.
  std::vector<std::string> first_catalogue;
  for (const meta::Task& task : data->tasks) {
    SCOPED_TRACE(task.id);
    absl::StatusOr<ReplayTask> replay = PrepareTask(task, v1::GOAL_MINIMIZE);
    ASSERT_THAT(replay, IsOk());
    ASSERT_THAT(AttachCurves(*curves, *replay), IsOk());
    ASSERT_EQ(replay->curves.size(), 128u);
    ASSERT_EQ(replay->catalogue.size(), 128u);
    std::vector<std::string> catalogue;
    for (const v1::Configuration& config : replay->catalogue) {
      catalogue.push_back(space::ConfigurationKey(config));
    }
    if (first_catalogue.empty()) first_catalogue = catalogue;
    EXPECT_EQ(catalogue, first_catalogue);
    double first = 0;
    double last = 0;
    for (const std::vector<double>& curve : replay->curves) {
      ASSERT_EQ(curve.size(), 27u);
      for (double v : curve) {
        EXPECT_GE(v, 0.0);
        EXPECT_LE(v, 1.0);
      }
      first += curve.front();
      last += curve.back();
    }
    // Real training: the mean validation error falls from epoch 1 to 27.
    EXPECT_LT(last, first);
    EXPECT_LT(replay->best, replay->worst);
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

TEST_F(EarlyStoppingRunTest, ServerModeEqualsInProcess) {
  metaopt::testing::ServerProcess server(
      METAOPT_SERVER_BINARY,
      {"--listen=127.0.0.1:0", absl::StrCat("--db=", dir_.File("es.db")),
       absl::StrCat("--models=", dir_.File("models"))},
      dir_.File("server.log"));
  const int port = server.Start();
  ASSERT_GT(port, 0) << server.Log();
  BenchOptions remote = EarlyOptions();
  remote.server = absl::StrCat("127.0.0.1:", port);
  absl::StatusOr<BenchResult> over_grpc = RunBenchmark(remote);
  ASSERT_THAT(over_grpc, IsOk()) << server.Log();
  absl::StatusOr<BenchResult> in_process = RunBenchmark(EarlyOptions());
  ASSERT_THAT(in_process, IsOk());
  // The same trials, costs and stops.
  EXPECT_EQ(TrialsCsv(*over_grpc), TrialsCsv(*in_process));
  EXPECT_EQ(CostSummaryCsv(SummarizeCost(*over_grpc)),
            CostSummaryCsv(SummarizeCost(*in_process)));
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
  // The learner serves its models before it logs the result: wait for both.
  for (int i = 0; i < 300 && !absl::StrContains(server.Log(),
                                                "learned from history");
       ++i) {
    absl::SleepFor(absl::Milliseconds(100));
  }
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
