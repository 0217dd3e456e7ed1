#include "bench/functions.h"

#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "bench/bench_lib.h"
#include "core/common/logging.h"
#include "core/space/random.h"
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
using ::testing::HasSubstr;

const TestFunction& Function(const std::string& name) {
  absl::StatusOr<std::vector<const TestFunction*>> f = ParseFunctions(name);
  EXPECT_THAT(f, IsOk());
  return *f->front();
}

// A configuration of a function's space from its parameters' values.
v1::Configuration At(
    const std::map<std::string, double>& numbers,
    const std::map<std::string, std::string>& categories = {}) {
  v1::Configuration config;
  v1::Assignment* a = config.add_assignments();
  a->set_stage("f");
  a->set_algorithm("f");
  for (const auto& [name, x] : numbers) {
    (*a->mutable_parameters())[name].set_number(x);
  }
  for (const auto& [name, c] : categories) {
    (*a->mutable_parameters())[name].set_category(c);
  }
  return config;
}

v1::Configuration Box(const std::vector<double>& x) {
  std::map<std::string, double> numbers;
  for (size_t i = 0; i < x.size(); ++i) numbers[absl::StrCat("x", i)] = x[i];
  return At(numbers);
}

// ---------------------------------------------------------------------------
// The functions

TEST(FunctionsTest, LiteratureMinimaAtEveryKnownMinimiser) {
  // f* as the literature states it (Surjanovic and Bingham's digits).
  const std::map<std::string, double> stated = {
      {"branin", 0.397887},
      {"hartmann3", -3.86278},
      {"hartmann6", -3.32237},
      {"ackley4", 0},
      {"levy4", 0},
      {"styblinski_tang4", -39.16599 * 4},
      {"rosenbrock4", 0},
      {"sin4", -2.258501},
      {"hartmann6_mixed", -3.32237},
      {"branin_logmixed", 0.397887}};
  ASSERT_EQ(KnownFunctions().size(), stated.size());
  for (const TestFunction& f : KnownFunctions()) {
    SCOPED_TRACE(f.name);
    ASSERT_TRUE(stated.count(f.name));
    EXPECT_NEAR(f.f_star, stated.at(f.name), 1e-3);
    ASSERT_FALSE(f.minimisers.empty());
    for (const v1::Configuration& x : f.minimisers) {
      EXPECT_NEAR(f.evaluate(x), f.f_star, 1e-6);
    }
  }
  EXPECT_NEAR(Function("branin").f_star, 0.397887, 1e-6);
  EXPECT_EQ(Function("branin").minimisers.size(), 3u);
  EXPECT_NEAR(Function("hartmann6").f_star, -3.32237, 1e-5);
  EXPECT_NEAR(Function("hartmann3").f_star, -3.86278, 1e-5);
  EXPECT_NEAR(Function("styblinski_tang4").f_star, -156.664663, 1e-5);
}

TEST(FunctionsTest, ValuesAtNonOptimalPoints) {
  // Hand-computable values, and others from the definitions evaluated
  // independently (bench/optuna_functions.py gives the same numbers).
  EXPECT_NEAR(Function("branin").evaluate(Box({0, 0})),
              36 + 10 * (1 - 1 / (8 * M_PI)) + 10, 1e-12);
  EXPECT_NEAR(Function("hartmann3").evaluate(Box({0.5, 0.5, 0.5})),
              -0.6280220150705942, 1e-12);
  EXPECT_NEAR(Function("hartmann6").evaluate(Box(std::vector<double>(6, 0.5))),
              -0.5053149917022333, 1e-12);
  // Ackley at (1, ..., 1): 20 - 20 exp(-0.2).
  EXPECT_NEAR(Function("ackley4").evaluate(Box({1, 1, 1, 1})),
              20 - 20 * std::exp(-0.2), 1e-12);
  EXPECT_NEAR(Function("levy4").evaluate(Box({0, 0, 0, 0})), 0.8975336623509235,
              1e-12);
  // Styblinski-Tang at 1: (1 - 16 + 5) / 2 per coordinate.
  EXPECT_NEAR(Function("styblinski_tang4").evaluate(Box({1, 1, 1, 1})), -20,
              1e-12);
  // Rosenbrock at the origin: (0 - 1)^2 for each of the first three.
  EXPECT_NEAR(Function("rosenbrock4").evaluate(Box({0, 0, 0, 0})), 3, 1e-12);
  EXPECT_NEAR(Function("sin4").evaluate(Box({1, 1, 1, 1})),
              4 * (std::sin(7.0) + 1), 1e-12);
  EXPECT_NEAR(Function("hartmann6_mixed")
                  .evaluate(At({{"x0", 0.5},
                                {"x1", 0.5},
                                {"x2", 0.5},
                                {"x3", 0.5},
                                {"x4", 0.5},
                                {"k", 3}},
                               {{"shift", "c"}})),
              0.17772323087458042, 1e-12);
  EXPECT_NEAR(Function("branin_logmixed")
                  .evaluate(At({{"lr", 1e-2}, {"x1", 5}, {"layers", 7}},
                               {{"optimizer", "rmsprop"}})),
              14.295224875769486, 1e-12);
}

TEST(FunctionsTest, MixedFunctionsPayForTheWrongDiscreteChoice) {
  const TestFunction& h = Function("hartmann6_mixed");
  const v1::Configuration& best = h.minimisers.front();
  auto with = [&](const std::string& name, const v1::ParameterValue& value) {
    v1::Configuration c = best;
    (*c.mutable_assignments(0)->mutable_parameters())[name] = value;
    return c;
  };
  v1::ParameterValue a, k5;
  a.set_category("a");
  k5.set_number(5);
  // Shift a moves the optimum back by 0.2 and costs 0.2 on top.
  EXPECT_GT(h.evaluate(with("shift", a)), h.f_star + 0.2);
  EXPECT_GT(h.evaluate(with("k", k5)), h.f_star);
  // At shift a's own optimum: f* + 0.2 exactly.
  v1::Configuration shifted = with("shift", a);
  for (int i = 0; i < 5; ++i) {
    auto& x = (*shifted.mutable_assignments(0)
                    ->mutable_parameters())[absl::StrCat("x", i)];
    x.set_number(x.number() - 0.2);
  }
  EXPECT_NEAR(h.evaluate(shifted), h.f_star + 0.2, 1e-12);

  const TestFunction& b = Function("branin_logmixed");
  v1::Configuration sgd = b.minimisers.front();
  (*sgd.mutable_assignments(0)->mutable_parameters())["optimizer"].set_category(
      "sgd");
  EXPECT_NEAR(b.evaluate(sgd), b.f_star + 0.5, 1e-12);
  v1::Configuration five = b.minimisers.front();
  (*five.mutable_assignments(0)->mutable_parameters())["layers"].set_number(5);
  EXPECT_NEAR(b.evaluate(five), b.f_star * 1.5, 1e-12);
}

TEST(FunctionsTest, SpacesValidateAndMinimisersLieInThem) {
  for (const TestFunction& f : KnownFunctions()) {
    SCOPED_TRACE(f.name);
    absl::StatusOr<space::SearchSpace> space =
        space::SearchSpace::Create(f.space);
    ASSERT_THAT(space, IsOk());
    EXPECT_EQ(f.space.stages(0).algorithms(0).parameters_size(), f.dimensions);
    for (const v1::Configuration& x : f.minimisers) {
      EXPECT_THAT(space->Canonicalize(x, "minimiser"), IsOk());
    }
  }
  // The mixed ones exercise every kind the space supports.
  auto kinds = [](const TestFunction& f) {
    std::string out;
    for (const v1::Parameter& p :
         f.space.stages(0).algorithms(0).parameters()) {
      if (p.has_int_domain()) out += "i";
      if (p.has_categorical_domain()) out += "c";
      if (p.has_float_domain() && p.float_domain().log()) out += "l";
    }
    return out;
  };
  EXPECT_EQ(kinds(Function("hartmann6_mixed")), "ic");
  EXPECT_EQ(kinds(Function("branin_logmixed")), "lic");
  EXPECT_TRUE(Function("branin_logmixed").mixed);
  EXPECT_FALSE(Function("branin").mixed);
}

TEST(FunctionsTest, NoSampledPointBeatsTheMinimumAndItIsLocallyMinimal) {
  for (const TestFunction& f : KnownFunctions()) {
    SCOPED_TRACE(f.name);
    absl::StatusOr<space::SearchSpace> space =
        space::SearchSpace::Create(f.space);
    ASSERT_THAT(space, IsOk());
    space::Rng rng(7);
    for (int i = 0; i < 3000; ++i) {
      EXPECT_GE(f.evaluate(space->Sample(rng)), f.f_star - 1e-9);
    }
    // Every float of every minimiser nudged both ways.
    for (const v1::Configuration& x : f.minimisers) {
      for (const auto& [name, value] : x.assignments(0).parameters()) {
        if (!value.has_number()) continue;
        for (double step : {-1e-4, 1e-4}) {
          v1::Configuration nudged = x;
          (*nudged.mutable_assignments(0)->mutable_parameters())[name]
              .set_number(value.number() * (1 + step) + step);
          EXPECT_GE(f.evaluate(nudged), f.f_star - 1e-9) << name;
        }
      }
    }
  }
}

TEST(FunctionsTest, ReferenceValueIsAFixedMedianAboveTheMinimum) {
  for (const TestFunction& f : KnownFunctions()) {
    SCOPED_TRACE(f.name);
    const double ref = ReferenceValue(f);
    EXPECT_TRUE(std::isfinite(ref));
    EXPECT_GT(ref, f.f_star);
    EXPECT_EQ(ReferenceValue(f), ref);
  }
  // Rosenbrock's median on [-5, 10]^4 is in the tens of thousands.
  EXPECT_GT(ReferenceValue(Function("rosenbrock4")), 1e4);
}

TEST(FunctionsTest, ParseRefusesUnknownRepeatedAndEmptyNames) {
  absl::StatusOr<std::vector<const TestFunction*>> two =
      ParseFunctions(" branin , sin4");
  ASSERT_THAT(two, IsOk());
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1]->name, "sin4");
  EXPECT_THAT(ParseFunctions("branin,nope"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--functions: unknown function \"nope\"; "
                                 "known: branin, hartmann3, hartmann6")));
  EXPECT_THAT(ParseFunctions("sin4,sin4"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"sin4\" is listed twice")));
  EXPECT_THAT(ParseFunctions(" , "),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no function given")));
}

// ---------------------------------------------------------------------------
// Runs

class FunctionRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    metaopt::SetMinLogSeverity(metaopt::LogSeverity::kWarning);
  }
  BenchOptions Options() const {
    BenchOptions options;
    options.functions = "branin,hartmann6_mixed";
    options.methods = {"random", "gp"};
    options.trials = 12;
    options.seeds = 2;
    options.jobs = 2;
    options.progress = nullptr;
    return options;
  }
  ScopedTempDir dir_;
};

TEST_F(FunctionRunTest, CurvesAreMonotoneAndTheReportIsWritten) {
  absl::StatusOr<BenchResult> result = RunBenchmark(Options());
  ASSERT_THAT(result, IsOk());
  ASSERT_EQ(result->functions.size(), 2u);
  EXPECT_EQ(result->task_ids,
            std::vector<std::string>({"branin", "hartmann6_mixed"}));
  EXPECT_NEAR(result->functions[0].f_star, 0.397887, 1e-6);
  EXPECT_EQ(result->functions[0].f_ref, ReferenceValue(Function("branin")));
  ASSERT_EQ(result->methods.size(), 2u);
  for (const RunResult& run : result->runs) {
    ASSERT_EQ(run.regret.size(), 12u);
    ASSERT_EQ(run.simple_regret.size(), 12u);
    EXPECT_EQ(run.trials_observed, 12);
    EXPECT_TRUE(run.entries.empty());
    for (size_t k = 0; k < run.regret.size(); ++k) {
      EXPECT_GE(run.regret[k], 0);
      EXPECT_LE(run.regret[k], 1);
      EXPECT_GT(run.simple_regret[k], 0);  // 12 trials do not hit f*
      if (k > 0) {
        EXPECT_LE(run.regret[k], run.regret[k - 1]);
        EXPECT_LE(run.simple_regret[k], run.simple_regret[k - 1]);
      }
    }
  }
  // The simple regret is that of the observed values.
  const RunResult& first = result->runs[result->RunIndex(0, 0, 0)];
  double best = first.values[0];
  for (double v : first.values) best = std::min(best, v);
  EXPECT_DOUBLE_EQ(first.simple_regret.back(),
                   best - result->functions[0].f_star);

  ReportInfo info;
  info.command_line = "metaopt-bench --functions branin,hartmann6_mixed";
  info.version = "test";
  info.compiler = "test";
  ASSERT_THAT(WriteOutputs(*result, info, dir_.path()), IsOk());
  for (const char* file :
       {"summary.csv", "per_task.csv", "trials.csv", "timing.csv", "report.md",
        "log_summary.csv", "functions.csv", "regret_vs_trials.svg",
        "log_regret_vs_trials.svg", "log10_simple_regret_vs_trials.svg",
        "rank_vs_trials.svg"}) {
    std::ifstream in(dir_.File(file));
    EXPECT_TRUE(in.good()) << file;
  }
  std::ifstream in(dir_.File("report.md"));
  const std::string report((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
  EXPECT_THAT(report, HasSubstr("# metaopt-bench: synthetic functions"));
  EXPECT_THAT(report, HasSubstr("## log10 simple regret"));
  EXPECT_THAT(report, HasSubstr("the median of f over 10000 points"));
  EXPECT_THAT(report, HasSubstr("| 10 trials | 12 trials |"));
  EXPECT_THAT(report, HasSubstr("| hartmann6_mixed | 7 |"));
  EXPECT_THAT(TrialsCsv(*result),
              HasSubstr("method,task,seed,trial,value\nrandom,branin,0,1,"));
}

TEST_F(FunctionRunTest, ChecksTheTaskSourceAndCatalogueOptions) {
  BenchOptions both = Options();
  both.data_dir = "data/oboe";
  EXPECT_THAT(RunBenchmark(both),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--functions: \"branin,hartmann6_mixed\" "
                                 "cannot be combined with --data")));
  BenchOptions neither = Options();
  neither.functions.clear();
  EXPECT_THAT(RunBenchmark(neither),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--data or --functions is required")));
  BenchOptions objectives = Options();
  objectives.objectives = {"y", "fit_seconds"};
  EXPECT_THAT(RunBenchmark(objectives),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot be combined with --objectives")));
  BenchOptions unknown = Options();
  unknown.functions = "branin,bukin6";
  EXPECT_THAT(RunBenchmark(unknown),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown function \"bukin6\"; known: ")));
}

TEST_F(FunctionRunTest, ValueTracesAreScoredAsTheEnginesRuns) {
  BenchOptions options = Options();
  options.methods = {"random"};
  absl::StatusOr<BenchResult> own = RunBenchmark(options);
  ASSERT_THAT(own, IsOk());
  // The run's own trials.csv, renamed, is a trace of another method.
  const std::string trace = dir_.File("trace.csv");
  {
    std::ofstream out(trace);
    out << absl::StrReplaceAll(TrialsCsv(*own),
                               {{"\nrandom,", "\nelsewhere,"}});
  }
  options.traces = {trace};
  absl::StatusOr<BenchResult> both = RunBenchmark(options);
  ASSERT_THAT(both, IsOk());
  ASSERT_EQ(both->methods.size(), 2u);
  EXPECT_EQ(both->methods[1].name, "elsewhere");
  for (size_t t = 0; t < both->task_ids.size(); ++t) {
    for (int s = 0; s < both->seeds; ++s) {
      const RunResult& a = both->runs[both->RunIndex(0, t, s)];
      const RunResult& b = both->runs[both->RunIndex(1, t, s)];
      EXPECT_EQ(a.regret, b.regret);
      EXPECT_EQ(a.simple_regret, b.simple_regret);
    }
  }
  // A catalogue trace (entries) is refused for functions.
  {
    std::ofstream out(trace);
    out << "method,task,seed,trial,entry\nx,branin,0,1,3\n";
  }
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("method,task,seed,trial,value")));
  {
    std::ofstream out(trace);
    out << "method,task,seed,trial,value\nx,branin,0,1,abc\n";
  }
  EXPECT_THAT(RunBenchmark(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("value")));
}

#ifdef METAOPT_SERVER_BINARY
TEST_F(FunctionRunTest, ServerModeEqualsInProcess) {
  metaopt::testing::ServerProcess server(
      METAOPT_SERVER_BINARY,
      {"--listen=127.0.0.1:0", absl::StrCat("--db=", dir_.File("bench.db")),
       absl::StrCat("--models=", dir_.File("models"))},
      dir_.File("server.log"));
  const int port = server.Start();
  ASSERT_GT(port, 0) << server.Log();
  BenchOptions remote = Options();
  remote.trials = 8;
  remote.server = absl::StrCat("127.0.0.1:", port);
  absl::StatusOr<BenchResult> over_grpc = RunBenchmark(remote);
  ASSERT_THAT(over_grpc, IsOk()) << server.Log();
  BenchOptions local = Options();
  local.trials = 8;
  absl::StatusOr<BenchResult> in_process = RunBenchmark(local);
  ASSERT_THAT(in_process, IsOk());
  EXPECT_EQ(TrialsCsv(*over_grpc), TrialsCsv(*in_process));
  EXPECT_EQ(PerTaskCsv(*over_grpc), PerTaskCsv(*in_process));
}
#endif

}  // namespace
}  // namespace metaopt::bench
