// metaopt-bench: replays the tasks of a meta-dataset through the study engine
// (in-process, or a running server over gRPC) and reports normalised regret,
// average ranks and Suggest latency per method (docs/benchmarks.md).
//
//   bench::BenchOptions options;
//   options.data_dir = "data/oboe";  // a meta-dataset folder (docs/meta_datasets.md)
//   options.methods = {"random", "gp"};
//   METAOPT_ASSIGN_OR_RETURN(bench::BenchResult result,
//                            bench::RunBenchmark(options));
//   METAOPT_RETURN_IF_ERROR(bench::WriteOutputs(result, info, "/tmp/out"));
//
// With early-stopping rules (options.early_stopping) the meta-dataset also has
// learning curves (curves.csv): every trial replays its configuration's curve
// step by step through ReportIntermediate, stops when the engine says so, and
// costs the steps it reported; results are reported against that cost.
//
// Every (task, method, seed) run is an independent study, so results do not
// depend on --jobs or on whether the engine runs in-process or in a server.
//
// Defined in bench_lib.cc (methods, tasks, running), backends.cc, metrics.cc
// (regret, ranks, summaries) and reports.cc (CSV files, report.md, plots).
#ifndef METAOPT_BENCH_BENCH_LIB_H_
#define METAOPT_BENCH_BENCH_LIB_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/meta_dataset/meta_dataset.h"
#include "core/objective/pareto.h"
#include "core/registry/model_manager.h"
#include "metaopt/v1/optimizer_service.pb.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::bench {

// ---------------------------------------------------------------------------
// Methods

// A method name on the command line and the study spec it maps to. A plain
// value; thread-compatible.
struct MethodDefinition {
  std::string name;
  // The study's spec.algorithm.
  v1::AlgorithmSpec algorithm;
  // Whether the task's meta-features go into spec.dataset_features.
  bool dataset_features = true;
  std::string description;
  // With learning curves: the study's spec.early_stopping (no rule set: never
  // stop), the rule's command-line name and the method it is paired with
  // (`name` is then "<rule>" or "<base_method>/<rule>").
  v1::EarlyStoppingSpec early_stopping;
  std::string early_stopping_rule;
  std::string base_method;
};

// The methods metaopt-bench knows, in table order (random, gp, deeppipe, pmf,
// mosaic, ...). Whether the engine implements a method's kind is only known
// when a study is created (UNIMPLEMENTED otherwise).
const std::vector<MethodDefinition>& KnownMethods();

// The index in `known` of each name of a comma list (surrounding spaces
// ignored; empty entries skipped), in list order. INVALID_ARGUMENT starting
// with `flag` for an unknown name (`what` names the kind, e.g. "method"; the
// message lists the known ones), a name given twice, or no name at all.
absl::StatusOr<std::vector<size_t>> ParseNameList(
    std::string_view comma_list, const std::vector<std::string>& known,
    std::string_view flag, std::string_view what);

// Looks up each comma-separated name (surrounding spaces ignored) in
// KnownMethods(). INVALID_ARGUMENT for an empty list, an unknown name (listing
// the known ones) or a duplicate.
absl::StatusOr<std::vector<MethodDefinition>> ParseMethods(
    std::string_view comma_list);

// ---------------------------------------------------------------------------
// Metrics

// Normalised regret `(best_so_far - best) / (worst - best)`, where `best` and
// `worst` are the task's extreme values in the goal's direction; the formula
// holds for both goals (for maximize both numerator and denominator are
// negative). 0 means the optimum was found, 1 the worst value. Requires
// best != worst. Clamped to [0, 1] against rounding.
double NormalizedRegret(double best_so_far, double best, double worst);

// Regret after each of `trials` trials, given the values observed in trial
// order: best-so-far in the direction of `goal`, normalised; once `observed`
// runs out (an exhausted catalogue) the last value is carried forward. With no
// observation at all the regret is 1.
std::vector<double> RegretCurve(const std::vector<double>& observed,
                                double best, double worst, v1::Goal goal,
                                int trials);

// Regret against cost: entry c-1 (c = 1..budget) is the normalised regret of
// the best value among the trials finished by cost c (trial k, of value
// observed[k], finishes at the sum of costs[0..k]); 1 before the first one.
// `observed` and `costs` are aligned.
std::vector<double> RegretByCost(const std::vector<double>& observed,
                                 const std::vector<int>& costs, double best,
                                 double worst, v1::Goal goal, int64_t budget);

// Several objectives and constraints (bench/objectives.cc).

// Each coordinate of the hypervolume's reference point in normalised targets:
// a tenth beyond the worst value of every objective, so that the catalogue's
// extreme points count.
inline constexpr double kNormalizedReference = 1.1;

// The normalised targets of a task's catalogue: for entry i and objective k,
// columns[k][i] minimised by goals[k] (objective::Minimized), on a log10 scale
// where log_scale[k] (values below 1e-3 count as 1e-3: times measured to the
// millisecond), then min-max scaled over the catalogue to [0, 1] (0 = the
// task's best value; an objective without spread is 0 everywhere).
std::vector<objective::Point> NormalizedTargets(
    const std::vector<std::vector<double>>& columns,
    const std::vector<v1::Goal>& goals, const std::vector<bool>& log_scale);

// The hypervolume the Pareto front of `targets` (normalised, 2 or 3
// objectives) dominates up to kNormalizedReference in every coordinate.
double TrueFrontHypervolume(const std::vector<objective::Point>& targets);

// Hypervolume regret after each of `trials` trials, given the catalogue
// entries observed in trial order: 1 - HV(observed so far) / front_hypervolume
// (0: the task's whole Pareto front is dominated; 1: nothing yet), carried
// forward once `entries` runs out. Requires front_hypervolume > 0.
std::vector<double> HypervolumeRegretCurve(
    const std::vector<int>& entries,
    const std::vector<objective::Point>& targets, double front_hypervolume,
    int trials);

// Regret of the best feasible value after each of `trials` trials:
// NormalizedRegret(best feasible so far, feasible_best, feasible_worst), 1
// before the first feasible trial; `feasible` is aligned with `observed`.
std::vector<double> FeasibleRegretCurve(const std::vector<double>& observed,
                                        const std::vector<bool>& feasible,
                                        double feasible_best,
                                        double feasible_worst, v1::Goal goal,
                                        int trials);

// Simple regret after each of `trials` trials of a minimised function of
// global minimum f_star: best value so far - f_star, carried forward once
// `observed` runs out; +infinity before the first observation.
std::vector<double> SimpleRegretCurve(const std::vector<double>& observed,
                                      double f_star, int trials);

// log10 of a simple regret, floored at kLogRegretFloor (a regret at or below
// 0 is the minimum found to the precision of f_star).
inline constexpr double kLogRegretFloor = 1e-10;
double LogSimpleRegret(double simple_regret);

// Ranks 1..n of `values` in increasing order (rank 1 = smallest = best
// regret); equal values share the average of the ranks they span.
std::vector<double> AverageRanks(const std::vector<double>& values);

// ---------------------------------------------------------------------------
// Tasks

// A task prepared for replay. A plain value; thread-compatible (read-only
// sharing across worker threads is safe).
struct ReplayTask {
  std::string id;
  // Distinct canonical configurations in file order (the study's candidates)
  // and their objective values; of a configuration listed twice, the first row
  // counts.
  std::vector<v1::Configuration> catalogue;
  std::vector<double> y;
  // space::ConfigurationKey of each catalogue entry -> its index.
  absl::flat_hash_map<std::string, int> index_by_key;
  std::map<std::string, double> metafeatures;
  // The task's raw sample (BenchOptions::dataset_samples), if any.
  std::optional<v1::DatasetSample> sample;
  // The best and worst y in the goal's direction.
  double best = 0;
  double worst = 0;
  // Rows dropped because their configuration occurred before in the task.
  int duplicate_rows = 0;
  // With learning curves (AttachCurves): the values at steps 1..n of each
  // catalogue entry.
  std::vector<std::vector<double>> curves;
  // Metrics reported with every step (AttachMetricCurves): (name, curves as
  // `curves`), for rules that compare a metric (EarlyStoppingSpec.metric).
  std::vector<std::pair<std::string, std::vector<std::vector<double>>>>
      metric_curves;
  // Several objectives (AttachObjectives): per further objective its
  // evaluations.csv column (aligned with `catalogue`); every entry's
  // normalised targets (NormalizedTargets) and the hypervolume of the
  // catalogue's Pareto front (TrueFrontHypervolume).
  std::vector<std::vector<double>> objective_values;
  std::vector<objective::Point> targets;
  double front_hypervolume = 0;
  // A synthetic function (--functions; functions.h) instead of a catalogue:
  // the study's own space, and the function every suggested configuration is
  // evaluated by. `catalogue` is then empty, `best` is the function's global
  // minimum f* and `worst` its reference value f_ref (ReferenceValue).
  std::optional<v1::SearchSpace> space;
  std::function<double(const v1::Configuration&)> evaluate;
  // A constraint (AttachConstraint): the constrained column, its bound (the
  // task's median of it), and the best and worst y of the feasible entries.
  std::vector<double> constraint_values;
  double constraint_bound = 0;
  double feasible_best = 0;
  double feasible_worst = 0;
};

// Builds the replay form of `task`. INVALID_ARGUMENT if it has no
// configurations or y is not aligned with them.
absl::StatusOr<ReplayTask> PrepareTask(const meta::Task& task, v1::Goal goal);

// The study seed of run (task, seed): FNV-1a-64 of the task id plus `seed`,
// so tasks differ, and a task gets the same seeds whatever split, task cap or
// method list the run uses.
uint64_t StudySeed(std::string_view task_id, int seed);

// ---------------------------------------------------------------------------
// Early stopping

// A rule on the command line: its name as written and the spec it maps to (no
// rule set for `none`). A plain value; thread-compatible.
struct EarlyStoppingRule {
  std::string name;
  v1::EarlyStoppingSpec spec;
};

// Parses a comma list of rules. A rule is `none`, `median`, `sha` (successive
// halving), `asha` or `threshold`, optionally followed by `:field=value`
// settings of its rule message (v1::MedianStoppingRule, ...), e.g.
// `asha:min_resource=1:reduction_factor=3` or `threshold:threshold=0.4`.
// INVALID_ARGUMENT for an empty list, an unknown rule or field (listing the
// known ones), a value that is not a number of the field's type, or a rule
// written twice.
absl::StatusOr<std::vector<EarlyStoppingRule>> ParseEarlyStoppingRules(
    std::string_view comma_list);

// Learning curves by task id: table[task][config] = the values at steps 1..n
// of configuration `config` (its row index within the task in
// evaluations.csv). A plain value; thread-compatible.
using CurveTable =
    absl::flat_hash_map<std::string, std::vector<std::vector<double>>>;

// Reads a curves file: CSV in the meta-dataset format's rules with the
// columns `task,config,epoch,value` first, the epochs of each (task, config)
// consecutive from 1, configs of a task 0, 1, 2, ... in order. The table
// holds `column` (`value`, or a further column such as `loss`; the others are
// ignored). Errors: NOT_FOUND for a missing file; INVALID_ARGUMENT naming
// file:line and the rule for anything else (a missing column included).
absl::StatusOr<CurveTable> ReadCurves(const std::string& path,
                                      const std::string& column = "value");

// The regret curve of a run on `task` that observed its catalogue `entries`
// in trial order: HypervolumeRegretCurve when the task has several objectives
// (AttachObjectives), FeasibleRegretCurve when it has a constraint
// (AttachConstraint), RegretCurve of their y otherwise.
std::vector<double> RunRegret(const ReplayTask& task,
                              const std::vector<int>& entries, v1::Goal goal,
                              int trials);

// Gives `task` the further objectives `columns` (meta::Task::values, each
// aligned with the task's rows; all minimised and compared on a log10 scale,
// as times are) and its normalised targets (the first objective y in the
// direction of `goal`) and front hypervolume. INVALID_ARGUMENT when a column
// is missing or not aligned, or there are more than 2 further objectives.
absl::Status AttachObjectives(const meta::Task& task,
                              const std::vector<std::string>& columns,
                              v1::Goal goal, ReplayTask& replay);

// Gives `task` the constraint "column <= the task's median of column" (the
// median over its catalogue: the mean of the two middle values of an even
// count) and the best and worst feasible y. INVALID_ARGUMENT when the column
// is missing or not aligned.
absl::Status AttachConstraint(const meta::Task& task, const std::string& column,
                              v1::Goal goal, ReplayTask& replay);

// Gives `task` its curves from `table`: one per catalogue entry, each as long
// as the longest (every configuration is trained for the same number of
// steps), ending at the entry's y. INVALID_ARGUMENT when the task is missing,
// has repeated configurations (the row index would not be the catalogue
// index), a different number of configurations, curves of unequal length, or
// a last value that is not its y.
absl::Status AttachCurves(const CurveTable& table, ReplayTask& task);

// Adds `table`'s curves of `task` to task.metric_curves as `metric`, with the
// checks of AttachCurves except the last value (and the same length as
// task.curves when those are attached).
absl::Status AttachMetricCurves(const CurveTable& table,
                                const std::string& metric, ReplayTask& task);

// ---------------------------------------------------------------------------
// Backends

// The engine calls a replay makes. Implementations are thread-safe: the
// worker threads share one backend.
class StudyBackend {
 public:
  virtual ~StudyBackend() = default;
  virtual absl::StatusOr<v1::CreateStudyResponse> CreateStudy(
      const v1::CreateStudyRequest& request) = 0;
  virtual absl::StatusOr<v1::SuggestResponse> Suggest(
      const v1::SuggestRequest& request) = 0;
  virtual absl::StatusOr<v1::ObserveResponse> Observe(
      const v1::ObserveRequest& request) = 0;
  virtual absl::StatusOr<v1::ReportIntermediateResponse> ReportIntermediate(
      const v1::ReportIntermediateRequest& request) = 0;
  virtual absl::StatusOr<v1::DeleteStudyResponse> DeleteStudy(
      const v1::DeleteStudyRequest& request) = 0;
  virtual absl::StatusOr<v1::ListModelsResponse> ListModels() = 0;
  // "in-process" or "server HOST:PORT".
  virtual std::string Describe() const = 0;
};

// Opens the model registry at a directory for an in-process engine (the hook
// through which the engine gets its models; tests inject their own). The
// manager stays alive as long as the engine.
using RegistryOpener =
    std::function<absl::StatusOr<std::shared_ptr<registry::ModelManager>>(
        const std::string& dir)>;

// A registry::ModelManager over `dir` without a poll thread (the registry is
// read once: a benchmark must not see models change mid-run). NOT_FOUND if
// `dir` is not a directory.
RegistryOpener DefaultRegistryOpener();

// A StudyEngine over in-memory storage, as the server runs it. With a
// non-empty `registry_dir` the engine gets the registry `opener` opens;
// FAILED_PRECONDITION if `opener` is empty (no registry support).
absl::StatusOr<std::unique_ptr<StudyBackend>> OpenInProcessBackend(
    const std::string& registry_dir, const RegistryOpener& opener);

// A metaopt::MetaoptClient for the server at `address` (HOST:PORT).
absl::StatusOr<std::unique_ptr<StudyBackend>> OpenServerBackend(
    const std::string& address);

// ---------------------------------------------------------------------------
// Running

struct BenchOptions {
  std::string data_dir;
  // "train", "valid", "test", "holdout" or "all".
  std::string split = "test";
  std::vector<std::string> methods = {"random"};
  int trials = 50;
  int seeds = 5;  // seeds 0 .. seeds-1
  // Model registry for the in-process engine (empty: none).
  std::string registry_dir;
  RegistryOpener registry_opener = DefaultRegistryOpener();
  // HOST:PORT of a running metaopt-server; empty: in-process engine.
  std::string server;
  int jobs = 1;
  // If > 0, only the first this many tasks of the split with a non-zero y
  // spread.
  int max_tasks = 0;
  // Every (method, task) pair is probed before the first run (a study is
  // created and deleted). A pair whose study cannot be created (UNIMPLEMENTED
  // kinds, missing models, a model that needs meta-features the task lacks)
  // fails the whole run, naming every such pair, unless this is set: then a
  // method that can run on no task is dropped, the tasks on which some other
  // method cannot run are left out for every method (each method still
  // replays the same tasks), and both are listed.
  bool skip_unavailable = false;
  // Only the tasks with meta-features (a metafeatures.csv row): methods that
  // need them (GROSI) cannot run on the others, and every method then
  // replays the same tasks.
  bool tasks_with_features = false;
  // Early-stopping rules (ParseEarlyStoppingRules syntax; empty: none, a
  // plain replay of final values). Each method runs once with each rule, and
  // every trial replays its learning curve (see the file comment).
  std::string early_stopping;
  // The curves file; empty: curves.csv in data_dir.
  std::string curves_path;
  // Steps (epochs) each early-stopping run may spend: no trial starts once
  // this many are spent (a started one runs to its end or its stop), and the
  // run also ends after `trials` trials or when the catalogue is exhausted.
  // 0: `trials` times the curve length (what `trials` full trials cost).
  int64_t budget = 0;
  // Leave every run's study on the server (or engine) instead of deleting
  // it, as a team's history for the server to learn from
  // (--learn-from-history). The studies are then named
  // `bench-<nonce>-<method>-<task>-s<seed>`.
  bool keep_studies = false;
  // A folder of raw dataset samples, <task id>.json (meta::ReadDatasetSamples;
  // empty: none): the methods that take the task's meta-features also get its
  // sample in spec.dataset_sample.
  std::string dataset_samples;
  // Several objectives: "y" (the meta-dataset's objective, with its goal)
  // then 1 or 2 columns of evaluations.csv after y (minimised, e.g.
  // fit_seconds). Empty: y alone. Runs then report hypervolume regret
  // (HypervolumeRegretCurve) instead of normalised regret.
  std::vector<std::string> objectives;
  // A constraint "COLUMN<=median": y subject to that column of evaluations.csv
  // staying at most the task's median of it. Runs then report the regret of
  // the best feasible value (FeasibleRegretCurve). Empty: none.
  std::string constraint;
  // Trace files of runs made elsewhere on the same replay (trials.csv's first
  // five columns, `method,task,seed,trial,entry`, e.g. Optuna's from
  // bench/optuna_replay.py): each of their methods is added after
  // `methods`, its regret computed here as the engine's runs' are. Each such
  // method needs a run of every task and seed, of at most `trials` trials.
  std::vector<std::string> traces;
  // Synthetic test functions (functions.h; comma list) as the tasks instead of
  // a meta-dataset's (--data must then be empty): each a study over the
  // function's space without a catalogue, every suggested configuration
  // evaluated by the function. Traces (`traces`) then carry values:
  // `method,task,seed,trial,value`.
  std::string functions;
  // Progress line destination (null: none).
  std::FILE* progress = stderr;
  // Opens the engine instead of `server` and `registry_dir` (empty: those
  // decide). A test hook, e.g. for a backend that injects failures.
  std::function<absl::StatusOr<std::unique_ptr<StudyBackend>>()> open_backend;
};

// One (method, task, seed) replay.
struct RunResult {
  std::vector<double> regret;      // one per trial 1..T
  std::vector<double> suggest_ms;  // wall time of each Suggest call
  int trials_observed = 0;         // < T when the catalogue ran out
  // The trace: per observed trial, the suggested configuration's index in
  // the task's catalogue (ReplayTask::catalogue) and its objective value.
  std::vector<int> entries;
  std::vector<double> values;
  // With learning curves: per observed trial the steps it reported (its
  // cost) and whether the engine stopped it; the regret after each cost
  // 1..budget (RegretByCost) and the steps spent in all.
  std::vector<int> costs;
  std::vector<bool> stopped;
  std::vector<double> regret_by_cost;
  int64_t cost = 0;
  // Synthetic functions: SimpleRegretCurve of the values (entries is empty).
  std::vector<double> simple_regret;
};

// A synthetic function a --functions run evaluated (aligned with task_ids).
struct FunctionTaskInfo {
  std::string name;
  std::string description;
  int dimensions = 0;
  double f_star = 0;
  double f_ref = 0;
};

struct BenchResult {
  std::string dataset_name;  // space.json `name`
  std::string data_dir;
  std::string split;
  std::string objective_name;
  v1::Goal goal = v1::GOAL_UNSPECIFIED;
  std::string backend;  // StudyBackend::Describe()
  // The models the engine serves ("name@version (KIND)"), from ListModels.
  std::vector<std::string> models;
  int trials = 0;
  int seeds = 0;
  int jobs = 1;
  std::vector<MethodDefinition> methods;  // those that ran
  // Methods dropped with --skip-unavailable (they can run on no task): name
  // -> reason.
  std::vector<std::pair<std::string, std::string>> unavailable_methods;
  // Tasks left out with --skip-unavailable because some method cannot run on
  // them: task id -> "method: reason" of each such method, joined by "; ".
  std::vector<std::pair<std::string, std::string>> unavailable_tasks;
  std::vector<std::string> task_ids;  // the evaluated tasks, in tasks.csv order
  int split_task_count = 0;           // tasks in the split
  std::vector<std::string> skipped_tasks;  // zero y spread
  // Left out by tasks_with_features.
  std::vector<std::string> featureless_tasks;
  // Evaluated tasks with fewer than `trials` distinct configurations.
  std::vector<std::pair<std::string, int>> short_tasks;
  int duplicate_rows = 0;
  // Learning-curve replay (options.early_stopping given): the curves file,
  // the steps of a full curve and the budget of a run in steps. `methods`
  // then holds one entry per (method, rule).
  bool early_stopping = false;
  std::string curves_path;
  int curve_length = 0;
  int64_t budget = 0;
  // The objectives (BenchOptions::objectives; empty: y alone) and the
  // constraint column (empty: none) the regret is of.
  std::vector<std::string> objectives;
  std::string constraint;
  // Pooled from per_task.csv files (PoolPerTaskCsvs): the runs hold regrets
  // only (no traces, no timings); `pooled_from` names the files.
  std::vector<std::string> pooled_from;
  // A --functions run: one entry per task (dataset_name "synthetic
  // functions", no split, objective minimised).
  std::vector<FunctionTaskInfo> functions;
  // runs[RunIndex(m, t, s)].
  std::vector<RunResult> runs;
  absl::Duration wall_time;
  // OK, unless a run failed: then the result is partial. It holds the tasks
  // all of whose runs had finished (task_ids, runs and every summary cover
  // those only, so per_task.csv stays poolable), `failure` is the error of
  // the run that failed, annotated with method, task and seed, and
  // `unfinished_tasks` lists the other tasks of the replay.
  absl::Status failure;
  std::vector<std::string> unfinished_tasks;

  size_t RunIndex(size_t method, size_t task, size_t seed) const {
    return (method * task_ids.size() + task) * static_cast<size_t>(seeds) +
           seed;
  }
};

// Reads the data, probes every (method, task) pair, replays every (task,
// method, seed) on `options.jobs` threads and collects the regret curves and
// Suggest timings. Errors: those of the reader; INVALID_ARGUMENT for bad
// options; FAILED_PRECONDITION, before any run, when some method cannot run on
// some task (its study cannot be created: the message names every such pair
// with the engine's answer) unless skip_unavailable; any other CreateStudy
// error of a probe. When a run fails after others have finished, the result is
// partial (BenchResult::failure is set) rather than an error; the error of
// that run is returned only when no task was finished.
absl::StatusOr<BenchResult> RunBenchmark(const BenchOptions& options);

// ---------------------------------------------------------------------------
// Aggregation and outputs

// Adds the methods of trace files (BenchOptions::traces) to `result`, whose
// task_ids, seeds, trials and runs of its own methods are set: a method, in
// order of first appearance, per distinct `method` of the files, its runs'
// regret by RunRegret over `tasks` (aligned with result.task_ids). For
// synthetic functions (tasks with `evaluate`) the files carry the values
// instead, `method,task,seed,trial,value` (bench/optuna_functions.py), and
// the regret is computed from them as for the engine's runs.
// INVALID_ARGUMENT, naming the file and line, for a header that does not
// start with method,task,seed,trial,entry, an entry outside the task's
// catalogue, a task not in the replay, a seed >= result.seeds, trials that
// are not 1, 2, ... or exceed result.trials, a method already in the result,
// or (naming the run) a (task, seed) without a run.
absl::Status ImportTraces(const std::vector<std::string>& paths,
                          const std::vector<ReplayTask>& tasks, v1::Goal goal,
                          BenchResult& result);

// One result from metaopt-bench per_task.csv files (`method,task,seed,trial,
// regret`): the union of their methods and tasks (in order of first
// appearance), for pooling the folds of a cross-validation
// (bench/cross_validate.sh) or runs of different methods over the same tasks
// into one summary, report and set of plots (WriteOutputs writes no trials.csv
// or timing.csv for it). INVALID_ARGUMENT, naming the file and line or the
// run, for a file that is not a per_task.csv, a run whose trials are not 1, 2,
// ... once each in one file, a (method, task, seed 0..S-1) without a run, or
// runs of different lengths; the reader's errors for unreadable files.
absl::StatusOr<BenchResult> PoolPerTaskCsvs(
    const std::vector<std::string>& paths);

// One row of summary.csv (plus the rank's standard error, for the plot band).
struct SummaryRow {
  std::string method;
  int trials = 0;
  double regret_mean = 0;
  // Standard errors of the task means (seeds averaged within a task first):
  // a task's runs are not independent of each other.
  double regret_sem = 0;
  double rank_mean = 0;
  double rank_sem = 0;
};

// Rows by method (table order of result.methods), then trials 1..T. Ranks are
// computed per (task, seed, trial) across the methods on regret, ties
// averaged, then averaged over tasks x seeds.
std::vector<SummaryRow> Summarize(const BenchResult& result);

// Synthetic functions: the mean over tasks x seeds of LogSimpleRegret (and
// its task-clustered standard error) after each trial, rows by method then
// trials 1..T (rank fields 0). Empty for other runs.
std::vector<SummaryRow> SummarizeLogRegret(const BenchResult& result);

// Synthetic functions: per (method, function) the mean over seeds of the
// normalised and the log10 simple regret after `trials` trials.
struct FunctionRow {
  std::string method;
  std::string function;
  double regret_mean = 0;
  double log_regret_mean = 0;
  double log_regret_sem = 0;  // over seeds
};
std::vector<FunctionRow> SummarizeFunctions(const BenchResult& result,
                                            int trials);

struct TimingRow {
  std::string method;
  int64_t calls = 0;
  double mean_ms = 0;
  double p50_ms = 0;
  double p95_ms = 0;
};
std::vector<TimingRow> SummarizeTiming(const BenchResult& result);

// Early-stopping summaries (learning-curve replay only).

// One row of cost_summary.csv: the mean regret of a method after `cost`
// steps, over tasks x seeds.
struct CostSummaryRow {
  std::string method;
  int64_t cost = 0;
  double regret_mean = 0;
  double regret_sem = 0;
};

// Rows by method, then cost 1..budget.
std::vector<CostSummaryRow> SummarizeCost(const BenchResult& result);

// One row of early_stopping.csv: what a (method, rule) spent and reached, and
// its saving over the same method without a rule (`none` in the rule list).
struct StoppingRow {
  std::string method;  // the variant's name
  std::string rule;
  std::string base_method;
  double trials_mean = 0;        // trials per run
  double stopped_fraction = 0;   // of all its trials
  double cost_mean = 0;          // steps spent per run
  double final_regret_mean = 0;  // at the budget
  double final_regret_sem = 0;
  // The fewest steps after which the mean regret is at most the final mean
  // regret of the same method without a rule (-1: never within the budget,
  // or no `none` run), and that method's own such cost.
  int64_t cost_to_baseline = -1;
  int64_t baseline_cost = -1;
  // baseline_cost / cost_to_baseline (0 when not reached).
  double saving = 0;
};

std::vector<StoppingRow> SummarizeStopping(
    const BenchResult& result, const std::vector<CostSummaryRow>& cost);

std::string CostSummaryCsv(const std::vector<CostSummaryRow>& rows);
std::string StoppingCsv(const std::vector<StoppingRow>& rows);

// Where and how the run happened, for report.md.
struct ReportInfo {
  std::string command_line;
  std::string version;   // git describe or "unknown"
  std::string compiler;  // e.g. "GCC 12.2.0"
  absl::Time start_time = absl::UnixEpoch();
};

// The file contents, exposed for tests.
std::string SummaryCsv(const std::vector<SummaryRow>& rows);
std::string PerTaskCsv(const BenchResult& result);
// `method,task,seed,trial,entry,value`: every observed trial, entry being the
// configuration's index in the task's catalogue (its distinct configurations
// in file order), so a run can be replayed and inspected. With learning
// curves two more columns: `cost` (steps reported) and `stopped` (0 or 1).
// Synthetic functions: `method,task,seed,trial,value` (a trace --traces
// reads back).
std::string TrialsCsv(const BenchResult& result);
std::string TimingCsv(const std::vector<TimingRow>& rows);
std::string ReportMarkdown(const BenchResult& result,
                           const std::vector<SummaryRow>& summary,
                           const std::vector<TimingRow>& timing,
                           const ReportInfo& info);
// report.md's early-stopping section.
std::string StoppingMarkdown(const BenchResult& result,
                             const std::vector<CostSummaryRow>& cost,
                             const std::vector<StoppingRow>& stopping);

// The trial counts report.md tabulates: those of 5, 10, 25, 50 that are <= T,
// and T itself; for synthetic functions (long studies) those of 10, 25, 50,
// 100, 200 and T.
std::vector<int> ReportCheckpoints(int trials, bool long_studies = false);

// Writes summary.csv, per_task.csv, trials.csv, timing.csv, report.md,
// regret_vs_trials.svg, rank_vs_trials.svg and log_regret_vs_trials.svg into
// `out_dir` (created if needed); with learning curves also cost_summary.csv,
// early_stopping.csv, regret_vs_cost.svg and log_regret_vs_cost.svg; for
// synthetic functions also log_summary.csv, functions.csv and
// log10_simple_regret_vs_trials.svg.
absl::Status WriteOutputs(const BenchResult& result, const ReportInfo& info,
                          const std::string& out_dir);

// `args` joined by spaces, each quoted for a POSIX shell where needed.
std::string ShellCommandLine(const std::vector<std::string>& args);

}  // namespace metaopt::bench

#endif  // METAOPT_BENCH_BENCH_LIB_H_
