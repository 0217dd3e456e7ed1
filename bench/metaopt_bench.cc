// metaopt-bench: replays the tasks of a meta-dataset through the study engine
// (in-process or over gRPC) and writes regret, rank and timing reports.
//
//   metaopt-bench --data $METAOPT_DATA/oboe --split test \
//       --methods random,gp --trials 50 --seeds 5 --jobs 2 --out /tmp/bench
//
// Early stopping on learning curves (docs/benchmarks.md, "Early stopping"):
//
//   metaopt-bench --data data/learning-curves --split test \
//       --early-stopping none,median,asha --trials 128 --budget 810 \
//       --out /tmp/bench-es
//
// A run that fails after others have finished writes what finished (the
// tasks all of whose runs finished; report.md says the run is partial and
// why) and exits with status 1.
//
// Several objectives (hypervolume regret against each task's Pareto front),
// with Optuna's samplers replayed by bench/optuna_replay.py beside them:
//
//   metaopt-bench --data $METAOPT_DATA/oboe --objectives y,runtime_s \
//       --methods random,gp --traces /tmp/optuna/traces.csv --out /tmp/mo
//
// Synthetic test functions over continuous and mixed spaces (no catalogue;
// normalised and log10 simple regret against each function's known minimum),
// with Optuna's TPE from bench/optuna_functions.py beside them:
//
//   metaopt-bench --functions branin,hartmann6,sin4 --methods random,gp \
//       --trials 200 --seeds 5 --jobs 2 --traces /tmp/optuna/functions.csv \
//       --out /tmp/functions
//
// Pooling earlier runs' per_task.csv (the folds of bench/cross_validate.sh):
//
//   metaopt-bench --pool /tmp/cv/fold-0/bench,/tmp/cv/fold-1/bench \
//       --pool-name "4-fold cross-validation" --out /tmp/cv/pooled
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/bench_lib.h"
#include "bench/functions.h"
#include "core/common/logging.h"

#ifndef METAOPT_BENCH_VERSION
#define METAOPT_BENCH_VERSION "unknown"
#endif

namespace {

std::string CompilerName() {
#if defined(__clang__)
  return absl::StrCat("Clang ", __clang_version__);
#elif defined(__GNUC__)
  return absl::StrCat("GCC ", __VERSION__);
#else
  return "unknown";
#endif
}

std::string FunctionHelp() {
  std::string help =
      "synthetic test functions as the tasks instead of --data (comma list); "
      "each a study over the function's search space without a catalogue:";
  for (const metaopt::bench::TestFunction& f :
       metaopt::bench::KnownFunctions()) {
    absl::StrAppend(&help, "\n  ", f.name, ": ", f.description);
  }
  return help;
}

std::string MethodHelp() {
  std::string help = "methods (comma list):";
  for (const metaopt::bench::MethodDefinition& m :
       metaopt::bench::KnownMethods()) {
    absl::StrAppend(&help, "\n  ", m.name, ": ", m.description);
  }
  return help;
}

}  // namespace

int main(int argc, char** argv) {
  metaopt::bench::BenchOptions options;
  std::string methods = "random";
  std::string out_dir;
  bool quiet = false;
  CLI::App app{
      "metaopt-bench: replay a meta-dataset through the metaopt study engine "
      "and report normalised regret, average ranks and Suggest latency"};
  std::vector<std::string> pool;
  std::string pool_name = "pooled runs";
  app.add_option(
      "--data", options.data_dir,
      "meta-dataset folder (space.json, evaluations.csv, tasks.csv)");
  app.add_option("--pool", pool,
                 "instead of running: pool these metaopt-bench outputs (their "
                 "per_task.csv: files or the folders holding them, e.g. the "
                 "folds of bench/cross_validate.sh) into one summary, report "
                 "and plots in --out")
      ->delimiter(',')
      ->excludes("--data");
  app.add_option("--functions", options.functions, FunctionHelp());
  app.add_option("--pool-name", pool_name,
                 "with --pool: the title of the report and plots")
      ->capture_default_str();
  app.add_option("--split", options.split, "tasks to replay")
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "valid", "test", "holdout", "all"}));
  app.add_option("--methods", methods, MethodHelp())->capture_default_str();
  app.add_option("--trials", options.trials, "trials per run")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--seeds", options.seeds, "seeds per task and method (0..S-1)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--registry", options.registry_dir,
                 "model registry directory for meta-learned methods "
                 "(in-process engine only)");
  app.add_option("--out", out_dir, "output directory (created if needed)")
      ->required();
  app.add_option("--server", options.server,
                 "HOST:PORT of a running metaopt-server to drive over gRPC "
                 "instead of the in-process engine");
  app.add_option("--jobs", options.jobs, "parallel runs (threads)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--max-tasks", options.max_tasks,
                 "replay only the first N tasks of the split (0: all)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--skip-unavailable", options.skip_unavailable,
               "every (method, task) pair is probed before the first run; "
               "instead of failing on those that cannot run (a kind not "
               "implemented, a missing model, a task without the "
               "meta-features a model needs), drop the methods that run on "
               "no task and the tasks on which some other method cannot run, "
               "and list them in report.md");
  app.add_flag("--tasks-with-features", options.tasks_with_features,
               "replay only the tasks that have meta-features "
               "(metafeatures.csv), as GROSI needs them");
  app.add_option(
      "--early-stopping", options.early_stopping,
      "comma list of early-stopping rules, each run with every method: none, "
      "median, sha, asha, threshold, each optionally with :FIELD=VALUE "
      "settings of its rule message (e.g. asha:min_resource=3, "
      "threshold:threshold=0.4). Every trial then replays its learning curve "
      "through ReportIntermediate and costs the steps it reported");
  app.add_option("--curves", options.curves_path,
                 "learning curves file (task,config,epoch,value; default: "
                 "curves.csv in --data)");
  app.add_option("--budget", options.budget,
                 "steps (epochs) per --early-stopping run; no trial starts "
                 "after that many (0: --trials full curves)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--keep-studies", options.keep_studies,
               "leave every run's study on the server instead of deleting it "
               "(a history for metaopt-server --learn-from-history)");
  app.add_option("--dataset-samples", options.dataset_samples,
                 "folder of raw dataset samples <task>.json for the methods "
                 "that take meta-features (data/prep/dataset_samples/"
                 "export_samples.py)");
  app.add_option("--objectives", options.objectives,
                 "several objectives (comma list): y (the meta-dataset's "
                 "objective, with its goal) then 1 or 2 columns of "
                 "evaluations.csv after y, minimised (e.g. y,fit_seconds; "
                 "oboe: y,runtime_s). Reports hypervolume regret against each "
                 "task's true Pareto front (docs/benchmarks.md)")
      ->delimiter(',');
  app.add_option("--constraint", options.constraint,
                 "COLUMN<=median: y subject to that column of "
                 "evaluations.csv staying at most the task's median of it; "
                 "reports the regret of the best feasible trial");
  app.add_option("--traces", options.traces,
                 "trace files of runs made elsewhere on the same replay "
                 "(method,task,seed,trial,entry; e.g. bench/optuna_replay.py): "
                 "their methods are reported beside --methods")
      ->delimiter(',');
  app.add_flag("--quiet", quiet, "no progress line");
  CLI11_PARSE(app, argc, argv);
  if (options.data_dir.empty() && options.functions.empty() && pool.empty()) {
    std::fprintf(stderr,
                 "metaopt-bench: --data, --functions or --pool is required\n");
    return 2;
  }

  // The engine logs every created and deleted study at info level.
  metaopt::SetMinLogSeverity(metaopt::LogSeverity::kWarning);
  options.methods = {methods};
  if (quiet) options.progress = nullptr;

  metaopt::bench::ReportInfo info;
  info.start_time = absl::Now();
  info.command_line = metaopt::bench::ShellCommandLine(
      std::vector<std::string>(argv, argv + argc));
  info.version = METAOPT_BENCH_VERSION;
  info.compiler = CompilerName();

  for (std::string& path : pool) {
    if (std::filesystem::is_directory(path)) path += "/per_task.csv";
  }
  absl::StatusOr<metaopt::bench::BenchResult> result =
      pool.empty() ? metaopt::bench::RunBenchmark(options)
                   : metaopt::bench::PoolPerTaskCsvs(pool);
  if (result.ok() && !pool.empty()) result->dataset_name = pool_name;
  if (!result.ok()) {
    std::fprintf(stderr, "metaopt-bench: %s\n",
                 std::string(result.status().ToString()).c_str());
    return 1;
  }
  absl::Status written = metaopt::bench::WriteOutputs(*result, info, out_dir);
  if (!written.ok()) {
    std::fprintf(stderr, "metaopt-bench: %s\n",
                 std::string(written.ToString()).c_str());
    return 1;
  }
  for (const auto& [name, reason] : result->unavailable_methods) {
    std::fprintf(stderr, "metaopt-bench: skipped method %s: %s\n", name.c_str(),
                 reason.c_str());
  }
  for (const auto& [id, reason] : result->unavailable_tasks) {
    std::fprintf(stderr, "metaopt-bench: skipped task %s: %s\n", id.c_str(),
                 reason.c_str());
  }
  if (!result->failure.ok()) {
    std::fprintf(stderr,
                 "metaopt-bench: %s\nmetaopt-bench: partial: wrote the %zu "
                 "finished tasks (%zu not finished) to %s/report.md\n",
                 std::string(result->failure.ToString()).c_str(),
                 result->task_ids.size(), result->unfinished_tasks.size(),
                 out_dir.c_str());
    return 1;
  }
  std::fprintf(stderr,
               "metaopt-bench: %zu tasks (%zu skipped) x %zu methods x %d "
               "seeds in %.1f s; wrote %s/report.md\n",
               result->task_ids.size(), result->skipped_tasks.size(),
               result->methods.size(), result->seeds,
               absl::ToDoubleSeconds(result->wall_time), out_dir.c_str());
  return 0;
}
