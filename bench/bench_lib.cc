#include "bench/bench_lib.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/functions.h"
#include "bench/svg_plot.h"
#include "clients/cpp/metaopt_client.h"
#include "core/common/mutex.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/meta_dataset/dataset_samples.h"
#include "core/objective/objective.h"
#include "core/space/search_space.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "google/protobuf/text_format.h"

namespace metaopt::bench {
namespace {

// ---------------------------------------------------------------------------
// The method table. A new method is one line: its command-line name, its
// spec.algorithm in protobuf text format (any AlgorithmSpec field may be set,
// e.g. `model: "oboe-deeppipe"` or `initial_trials: 5`), whether the task's
// meta-features go into spec.dataset_features, and a description.

struct MethodRow {
  const char* name;
  const char* algorithm;
  bool dataset_features;
  const char* description;
};

constexpr MethodRow kMethodTable[] = {
    {"random", "kind: ALGORITHM_KIND_RANDOM", true,
     "uniform sampling without replacement from the task's catalogue"},
    {"portfolio", "kind: ALGORITHM_KIND_RANDOM model: \"{data}-portfolio\"",
     false, "the bundled zero-shot portfolio first, then random search"},
    {"metabu", "kind: ALGORITHM_KIND_RANDOM model: \"{data}-portfolio\"", true,
     "the task-aware design (best configurations of the Metabu-nearest "
     "training tasks) first, then random search"},
    {"gp", "kind: ALGORITHM_KIND_GP model: \"none\"", true,
     "GP (Matern-5/2 ARD) + EI over the catalogue, no transfer"},
    {"gp-parego",
     "kind: ALGORITHM_KIND_GP model: \"none\" multi_objective_acquisition: "
     "MULTI_OBJECTIVE_ACQUISITION_PAREGO",
     true,
     "GP + EI on ParEGO's scalarisation of several objectives (a weight "
     "vector per Suggest), no transfer; with one objective the same as gp"},
    {"gp-warp-power",
     "kind: ALGORITHM_KIND_GP model: \"none\" output_warping: "
     "OUTPUT_WARPING_POWER",
     true,
     "GP + EHVI (or EI x P(feasible)) with the further objectives' and "
     "constrained metrics' GPs on power-transformed values"},
    {"gp-samples2000",
     "kind: ALGORITHM_KIND_GP model: \"none\" acquisition_samples: 2000", true,
     "GP + EI with 2,000 random samples of a space per Suggest (the "
     "acquisition search's budget, 500 by default; a catalogue is scored "
     "whole as for gp)"},
    {"gp-samples1000",
     "kind: ALGORITHM_KIND_GP model: \"none\" acquisition_samples: 1000", true,
     "GP + EI with 1,000 random samples of a space per Suggest"},
    {"gp-samples250",
     "kind: ALGORITHM_KIND_GP model: \"none\" acquisition_samples: 250", true,
     "GP + EI with 250 random samples of a space per Suggest"},
    {"gp+portfolio", "kind: ALGORITHM_KIND_GP model: \"{data}-portfolio\"",
     false, "GP + EI after the zero-shot portfolio of the registry model"},
    {"gp+metabu", "kind: ALGORITHM_KIND_GP model: \"{data}-portfolio\"", true,
     "GP + EI after the task-aware design of the registry model"},
    {"deeppipe", "kind: ALGORITHM_KIND_DEEPPIPE", true,
     "meta-learned deep-kernel GP (registry model matching the space), "
     "task-aware design first"},
    {"deeppipe-warp-power",
     "kind: ALGORITHM_KIND_DEEPPIPE output_warping: OUTPUT_WARPING_POWER", true,
     "DeepPipe with the further objectives' and constrained metrics' GPs on "
     "power-transformed values"},
    {"deeppipe-portfolio", "kind: ALGORITHM_KIND_DEEPPIPE", false,
     "meta-learned deep-kernel GP after the fixed portfolio (no "
     "meta-features)"},
    {"deeppipe-newalg",
     "kind: ALGORITHM_KIND_DEEPPIPE model: \"{data}-deeppipe-newalg\"", true,
     "DeepPipe bound partially to a model meta-trained without one algorithm: "
     "the study's space adds it back, with a fresh encoder trained on the "
     "study"},
    {"deeppipe-scratch", "kind: ALGORITHM_KIND_DEEPPIPE model: \"none\"", true,
     "DeepPipe trained on the study's own data only (no transfer)"},
    {"fsbo", "kind: ALGORITHM_KIND_FSBO model: \"{data}-fsbo\"", false,
     "FSBO: the model's evolutionary warm start (5 settings), then EI under "
     "the meta-learned deep kernel fine-tuned whole on the study's "
     "observations at every iteration"},
    {"pmf", "kind: ALGORITHM_KIND_PMF", true,
     "probabilistic matrix factorisation over the catalogue, warm start by "
     "meta-features"},
    {"pmf-nofeatures", "kind: ALGORITHM_KIND_PMF", false,
     "PMF without meta-features: warm start from the model's portfolio"},
    {"grosi", "kind: ALGORITHM_KIND_GROSI", true,
     "GROSI: the top 5 of the meta-learned gray-box surrogate for the task's "
     "meta-features, then GROSI(+10): refit on the observations, a draw from "
     "the top 10"},
    {"grosi-zero-shot", "kind: ALGORITHM_KIND_GROSI initial_trials: 100000",
     true,
     "GROSI zero-shot only: the surrogate's ranking for the task's "
     "meta-features, never refitted (Algorithm 2)"},
    {"grosi-d2v", "kind: ALGORITHM_KIND_GROSI model: \"{data}-grosi-d2v\"",
     true,
     "GROSI with the Dataset2Vec extractor (model {data}-grosi-d2v; the "
     "task's raw sample from --dataset-samples): top 5, then GROSI(+10)"},
    {"grosi-d2v-zero-shot",
     "kind: ALGORITHM_KIND_GROSI model: \"{data}-grosi-d2v\" "
     "initial_trials: 100000",
     true, "GROSI with Dataset2Vec, zero-shot ranking only"},
    {"mosaic", "kind: ALGORITHM_KIND_MOSAIC model: \"none\"", true,
     "Mosaic: MCTS over pipeline structure, EI playouts under a random "
     "forest (no transfer)"},
    {"mosaic-deeppipe",
     "kind: ALGORITHM_KIND_MOSAIC model: \"{data}-deeppipe\" "
     "mosaic { surrogate: MOSAIC_SURROGATE_DEEPPIPE }",
     true,
     "Mosaic with the meta-learned DeepPipe model as its surrogate (and its "
     "portfolio as the initial design)"},
};

// "m:ss" or "h:mm:ss".
std::string ClockTime(absl::Duration d) {
  int64_t seconds = absl::ToInt64Seconds(d);
  if (seconds < 0) seconds = 0;
  if (seconds >= 3600) {
    return absl::StrFormat("%d:%02d:%02d", seconds / 3600, (seconds / 60) % 60,
                           seconds % 60);
  }
  return absl::StrFormat("%d:%02d", seconds / 60, seconds % 60);
}

// ---------------------------------------------------------------------------
// Progress on stderr: refreshed in place with \r on a terminal, otherwise one
// line per ~5 % of the runs. Thread-safe.
class ProgressReporter {
 public:
  ProgressReporter(std::FILE* out, int64_t total)
      : out_(out),
        tty_(out != nullptr && isatty(fileno(out)) == 1),
        total_(total),
        start_(absl::Now()) {}

  void RunDone() ABSL_LOCKS_EXCLUDED(mu_) {
    if (out_ == nullptr) return;
    metaopt::MutexLock lock(&mu_);
    ++done_;
    const absl::Time now = absl::Now();
    if (tty_) {
      if (done_ < total_ && now - last_print_ < absl::Milliseconds(200)) return;
      last_print_ = now;
      std::fprintf(out_, "\r%s\x1b[K", Line(now).c_str());
      if (done_ == total_) std::fputc('\n', out_);
    } else {
      const int64_t bucket = done_ * 20 / std::max<int64_t>(total_, 1);
      if (bucket <= last_bucket_ && done_ < total_) return;
      last_bucket_ = bucket;
      std::fprintf(out_, "%s\n", Line(now).c_str());
    }
    std::fflush(out_);
  }

 private:
  std::string Line(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const absl::Duration elapsed = now - start_;
    std::string eta = "?";
    if (done_ > 0) {
      eta = ClockTime(elapsed * (static_cast<double>(total_ - done_) /
                                 static_cast<double>(done_)));
    }
    return absl::StrFormat(
        "metaopt-bench: %d/%d runs (%.0f%%), elapsed %s, ETA %s", done_, total_,
        100.0 * static_cast<double>(done_) /
            static_cast<double>(std::max<int64_t>(total_, 1)),
        ClockTime(elapsed), eta);
  }

  std::FILE* const out_;
  const bool tty_;
  const int64_t total_;
  const absl::Time start_;
  metaopt::Mutex mu_;
  int64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t last_bucket_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_print_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// ---------------------------------------------------------------------------
// One replay.

// The study of one run. With several objectives (task.targets set) y's
// objective comes first, then `objectives` (the further columns, minimised);
// with a constraint (task.constraint_values set) `constraint_column` stays at
// most the task's bound.
v1::CreateStudyRequest MakeCreateRequest(
    const std::string& study_id, const ReplayTask& task,
    const v1::SearchSpace& space, const v1::Objective& objective,
    const std::vector<std::string>& objectives,
    const std::string& constraint_column, const MethodDefinition& method,
    uint64_t seed) {
  v1::CreateStudyRequest request;
  request.set_study_id(study_id);
  v1::StudySpec* spec = request.mutable_spec();
  *spec->mutable_search_space() = task.space.has_value() ? *task.space : space;
  *spec->mutable_objective() = objective;
  if (!task.targets.empty()) {
    *spec->add_objectives() = objective;
    for (const std::string& column : objectives) {
      v1::Objective* other = spec->add_objectives();
      other->set_name(column);
      other->set_goal(v1::GOAL_MINIMIZE);
    }
  }
  if (!task.constraint_values.empty()) {
    v1::Constraint* constraint = spec->add_constraints();
    constraint->set_metric(constraint_column);
    constraint->set_sense(v1::CONSTRAINT_SENSE_AT_MOST);
    constraint->set_bound(task.constraint_bound);
  }
  *spec->mutable_algorithm() = method.algorithm;
  spec->mutable_candidates()->Reserve(static_cast<int>(task.catalogue.size()));
  for (const v1::Configuration& config : task.catalogue) {
    *spec->add_candidates() = config;
  }
  if (method.dataset_features) {
    for (const auto& [name, value] : task.metafeatures) {
      (*spec->mutable_dataset_features())[name] = value;
    }
    if (task.sample.has_value()) *spec->mutable_dataset_sample() = *task.sample;
  }
  spec->set_seed(seed);
  if (method.early_stopping.rule_case() !=
      v1::EarlyStoppingSpec::RULE_NOT_SET) {
    *spec->mutable_early_stopping() = method.early_stopping;
  }
  return request;
}

// Replays the learning curve of catalogue entry `entry` for `trial`: reports
// its values at steps 1, 2, ... until the engine says stop or the curve ends.
// Returns the steps reported; *value is the last reported value; *stopped
// whether the rule cut the curve short (a stop at the curve's last step, as
// at a rung there, saves nothing and does not count).
absl::StatusOr<int> ReplayCurve(StudyBackend& backend,
                                const std::string& study_id, int64_t trial,
                                const ReplayTask& task, int entry,
                                double* value, bool* stopped) {
  *stopped = false;
  int steps = 0;
  const std::vector<double>& curve = task.curves[entry];
  for (size_t i = 0; i < curve.size(); ++i) {
    v1::ReportIntermediateRequest report;
    report.set_study_id(study_id);
    report.set_trial_id(trial);
    report.set_step(static_cast<int64_t>(i) + 1);
    report.set_value(curve[i]);
    for (const auto& [name, metric] : task.metric_curves) {
      (*report.mutable_metrics())[name] = metric[entry][i];
    }
    METAOPT_ASSIGN_OR_RETURN(v1::ReportIntermediateResponse response,
                             backend.ReportIntermediate(report));
    ++steps;
    *value = curve[i];
    if (response.should_stop()) {
      *stopped = i + 1 < curve.size();
      break;
    }
  }
  return steps;
}

// One run. With curves (task.curves set) every trial replays its curve and
// no trial starts once `budget` steps are spent.
// The further objectives' and the constraint's values are reported in
// ObserveRequest.metrics under their column names.
absl::StatusOr<RunResult> ReplayOne(
    StudyBackend& backend, v1::CreateStudyRequest create,
    const ReplayTask& task, v1::Goal goal, int trials, int64_t budget,
    bool keep_study, const std::vector<std::string>& objective_columns,
    const std::string& constraint_column) {
  const bool curves = !task.curves.empty();
  const std::string study_id = create.study_id();
  METAOPT_RETURN_IF_ERROR(backend.CreateStudy(create).status());
  create.Clear();  // the catalogue can be large

  RunResult result;
  std::vector<double> observed;
  observed.reserve(trials);
  for (int t = 0; t < trials && (!curves || result.cost < budget); ++t) {
    v1::SuggestRequest suggest;
    suggest.set_study_id(study_id);
    suggest.set_count(1);
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<v1::SuggestResponse> response = backend.Suggest(suggest);
    const auto stop = std::chrono::steady_clock::now();
    METAOPT_RETURN_IF_ERROR(response.status());
    result.suggest_ms.push_back(
        std::chrono::duration<double, std::milli>(stop - start).count());
    if (response->trials().empty()) break;  // the catalogue is exhausted
    const v1::Trial& trial = response->trials(0);
    int entry = -1;  // the configuration's catalogue index
    double value = 0;
    if (task.evaluate) {
      value = task.evaluate(trial.configuration());
      if (!std::isfinite(value)) {
        return absl::InternalError(absl::StrCat(
            "trial ", trial.id(), ": the function's value is not finite at ",
            trial.configuration().ShortDebugString()));
      }
    } else {
      const std::string key = space::ConfigurationKey(trial.configuration());
      auto it = task.index_by_key.find(key);
      if (it == task.index_by_key.end()) {
        return absl::InternalError(absl::StrCat(
            "trial ", trial.id(),
            ": the suggested configuration is not in the task's table: ",
            trial.configuration().ShortDebugString()));
      }
      entry = it->second;
      value = task.y[entry];
    }
    if (curves) {
      bool stopped = false;
      METAOPT_ASSIGN_OR_RETURN(
          int steps, ReplayCurve(backend, study_id, trial.id(), task, entry,
                                 &value, &stopped));
      result.costs.push_back(steps);
      result.stopped.push_back(stopped);
      result.cost += steps;
    }
    v1::ObserveRequest observe;
    observe.set_study_id(study_id);
    observe.set_trial_id(trial.id());
    observe.set_value(value);
    for (size_t k = 0; k < objective_columns.size(); ++k) {
      (*observe.mutable_metrics())[objective_columns[k]] =
          task.objective_values[k][entry];
    }
    if (!task.constraint_values.empty()) {
      (*observe.mutable_metrics())[constraint_column] =
          task.constraint_values[entry];
    }
    METAOPT_RETURN_IF_ERROR(backend.Observe(observe).status());
    observed.push_back(value);
    if (entry >= 0) result.entries.push_back(entry);
  }
  if (!keep_study) {
    v1::DeleteStudyRequest remove;
    remove.set_study_id(study_id);
    METAOPT_RETURN_IF_ERROR(backend.DeleteStudy(remove).status());
  }
  result.trials_observed = static_cast<int>(observed.size());
  result.values = observed;
  if (task.evaluate) {
    result.regret = RegretCurve(observed, task.best, task.worst, goal, trials);
    result.simple_regret = SimpleRegretCurve(observed, task.best, trials);
  } else {
    result.regret = RunRegret(task, result.entries, goal, trials);
  }
  if (curves) {
    result.regret_by_cost = RegretByCost(observed, result.costs, task.best,
                                         task.worst, goal, budget);
  }
  return result;
}

// `text` with every character outside [A-Za-z0-9._-] replaced by '_', for a
// study id.
std::string IdPart(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-') c = '_';
  }
  return out;
}

// Whether a CreateStudy error means "this method cannot run here" rather than
// a broken connection or a bench bug.
bool IsUnavailableMethod(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kInvalidArgument:
      return true;
    default:
      return false;
  }
}

// Calls work(0), work(1), ... work(total - 1) on `jobs` threads (the
// caller's among them), handing out indices in increasing order; once a call
// returns false no further index is handed out (calls under way finish).
void ForEachIndex(int jobs, size_t total,
                  const std::function<bool(size_t)>& work) {
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto worker = [&] {
    while (!stop.load()) {
      const size_t i = next.fetch_add(1);
      if (i >= total) return;
      if (!work(i)) stop.store(true);
    }
  };
  std::vector<std::thread> threads;
  const size_t threads_wanted =
      std::min<size_t>(static_cast<size_t>(std::max(jobs, 1)), total);
  for (size_t j = 1; j < threads_wanted; ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& thread : threads) thread.join();
}

// Which (method, task) pairs cannot run: reasons[m][t] is the engine's answer
// to CreateStudy (Status::ToString) when method m cannot run on task t, empty
// when it can; `unavailable` counts the non-empty ones.
struct ProbeOutcome {
  std::vector<std::vector<std::string>> reasons;
  size_t unavailable = 0;
};

// Creates and deletes the study of seed 0 of every (method, task) pair on
// `jobs` threads. An error that does not mean "cannot run here"
// (IsUnavailableMethod), such as a lost connection, is returned, naming the
// pair.
absl::StatusOr<ProbeOutcome> ProbeMethods(
    StudyBackend& backend, const std::vector<ReplayTask>& tasks,
    const std::vector<MethodDefinition>& methods, const v1::SearchSpace& space,
    const v1::Objective& objective, const std::vector<std::string>& objectives,
    const std::string& constraint_column, int jobs, const std::string& nonce,
    const std::string& backend_name) {
  ProbeOutcome out;
  out.reasons.assign(methods.size(), std::vector<std::string>(tasks.size()));
  metaopt::Mutex error_mu;
  absl::Status error;
  ForEachIndex(jobs, methods.size() * tasks.size(), [&](size_t i) {
    const size_t m = i / tasks.size();
    const size_t t = i % tasks.size();
    const std::string id = absl::StrCat("bench-", nonce, "-probe-m", m, "-t", t);
    absl::Status created =
        backend
            .CreateStudy(MakeCreateRequest(id, tasks[t], space, objective,
                                           objectives, constraint_column,
                                           methods[m],
                                           StudySeed(tasks[t].id, 0)))
            .status();
    if (created.ok()) {
      v1::DeleteStudyRequest remove;
      remove.set_study_id(id);
      created = backend.DeleteStudy(remove).status();
      if (created.ok()) return true;
    } else if (IsUnavailableMethod(created)) {
      out.reasons[m][t] = created.ToString();  // one writer per element
      return true;
    }
    metaopt::MutexLock lock(&error_mu);
    if (error.ok()) {
      error = absl::Status(
          created.code(),
          absl::StrCat("method ", methods[m].name, ", task \"", tasks[t].id,
                       "\" on ", backend_name,
                       ": the probe (CreateStudy, DeleteStudy) failed: ",
                       created.message()));
    }
    return false;
  });
  if (!error.ok()) return error;
  for (const std::vector<std::string>& row : out.reasons) {
    for (const std::string& reason : row) out.unavailable += !reason.empty();
  }
  return out;
}

// The pairs of `probe` that cannot run, per method and reason: "gp on 2 of 5
// tasks (t3, t4): <reason>; grosi on every task (5): <reason>".
std::string DescribeUnavailable(const ProbeOutcome& probe,
                                const std::vector<MethodDefinition>& methods,
                                const std::vector<ReplayTask>& tasks) {
  std::vector<std::string> parts;
  for (size_t m = 0; m < methods.size(); ++m) {
    // Reasons in order of first appearance, each with its tasks.
    std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
    for (size_t t = 0; t < tasks.size(); ++t) {
      const std::string& reason = probe.reasons[m][t];
      if (reason.empty()) continue;
      auto it = std::find_if(by_reason.begin(), by_reason.end(),
                             [&](const auto& r) { return r.first == reason; });
      if (it == by_reason.end()) {
        by_reason.push_back({reason, {}});
        it = by_reason.end() - 1;
      }
      it->second.push_back(tasks[t].id);
    }
    for (const auto& [reason, ids] : by_reason) {
      parts.push_back(
          ids.size() == tasks.size()
              ? absl::StrCat(methods[m].name, " on every task (", ids.size(),
                             "): ", reason)
              : absl::StrCat(methods[m].name, " on ", ids.size(), " of ",
                             tasks.size(), " tasks (", absl::StrJoin(ids, ", "),
                             "): ", reason));
    }
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

// ---------------------------------------------------------------------------
// Methods

const std::vector<MethodDefinition>& KnownMethods() {
  static const std::vector<MethodDefinition>* const methods = [] {
    auto* out = new std::vector<MethodDefinition>();
    for (const MethodRow& row : kMethodTable) {
      MethodDefinition method;
      method.name = row.name;
      method.dataset_features = row.dataset_features;
      method.description = row.description;
      // The table is compiled in; a parse failure is a programmer error that
      // bench_lib_test catches.
      if (!google::protobuf::TextFormat::ParseFromString(row.algorithm,
                                                         &method.algorithm)) {
        method.algorithm.Clear();
      }
      out->push_back(std::move(method));
    }
    return out;
  }();
  return *methods;
}

absl::StatusOr<std::vector<size_t>> ParseNameList(
    std::string_view comma_list, const std::vector<std::string>& known,
    std::string_view flag, std::string_view what) {
  std::vector<size_t> out;
  absl::flat_hash_set<std::string> seen;
  const std::string known_list = absl::StrJoin(known, ", ");
  const absl::string_view f = ToAbsl(flag), kind = ToAbsl(what);
  for (absl::string_view part : absl::StrSplit(
           absl::string_view(comma_list.data(), comma_list.size()), ',')) {
    const std::string name(absl::StripAsciiWhitespace(part));
    if (name.empty()) continue;
    const auto it = std::find(known.begin(), known.end(), name);
    if (it == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          f, ": unknown ", kind, " \"", name, "\"; known: ", known_list));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(f, ": \"", name, "\" is listed twice"));
    }
    out.push_back(static_cast<size_t>(it - known.begin()));
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(f, ": no ", kind, " given; known: ", known_list));
  }
  return out;
}

absl::StatusOr<std::vector<MethodDefinition>> ParseMethods(
    std::string_view comma_list) {
  std::vector<std::string> known;
  for (const MethodDefinition& m : KnownMethods()) known.push_back(m.name);
  METAOPT_ASSIGN_OR_RETURN(
      std::vector<size_t> indices,
      ParseNameList(comma_list, known, "--methods", "method"));
  std::vector<MethodDefinition> out;
  for (size_t i : indices) out.push_back(KnownMethods()[i]);
  return out;
}

// ---------------------------------------------------------------------------
// Tasks

absl::StatusOr<ReplayTask> PrepareTask(const meta::Task& task, v1::Goal goal) {
  if (task.configurations.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task \"", task.id, "\" has no configurations"));
  }
  if (task.configurations.size() != task.y.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task \"", task.id, "\": ", task.configurations.size(),
                     " configurations but ", task.y.size(), " values"));
  }
  ReplayTask out;
  out.id = task.id;
  out.metafeatures = task.metafeatures;
  out.catalogue.reserve(task.configurations.size());
  out.y.reserve(task.y.size());
  for (size_t i = 0; i < task.configurations.size(); ++i) {
    std::string key = space::ConfigurationKey(task.configurations[i]);
    auto [it, inserted] = out.index_by_key.emplace(
        std::move(key), static_cast<int>(out.catalogue.size()));
    if (!inserted) {
      ++out.duplicate_rows;
      continue;
    }
    out.catalogue.push_back(task.configurations[i]);
    out.y.push_back(task.y[i]);
  }
  out.best = out.worst = out.y.front();
  for (double v : out.y) {
    if (objective::Better(v, out.best, goal)) out.best = v;
    if (objective::Better(out.worst, v, goal)) out.worst = v;
  }
  return out;
}

uint64_t StudySeed(std::string_view task_id, int seed) {
  return Fnv1a64(ToAbsl(task_id)) + static_cast<uint64_t>(seed);
}

// ---------------------------------------------------------------------------
// Running

namespace {

// The runs of a prepared replay: opens the backend, probes every (method,
// task) pair, runs every (task, method, seed) on options.jobs threads, keeps
// the finished tasks of a failed run, imports options.traces, and fills the
// rest of `result` (whose header fields, goal and budget are set).
// `space` and `objective` are the studies' (a task's own space, if it has
// one, comes first).
absl::StatusOr<BenchResult> RunTasks(
    const BenchOptions& options, std::vector<MethodDefinition> methods,
    std::vector<ReplayTask> tasks, const v1::SearchSpace& space,
    const v1::Objective& objective,
    const std::vector<std::string>& further_objectives,
    const std::string& constraint_column, absl::Time start,
    BenchResult result) {
  std::unique_ptr<StudyBackend> backend;
  std::string nonce = "run";
  if (options.open_backend) {
    METAOPT_ASSIGN_OR_RETURN(backend, options.open_backend());
  } else if (options.server.empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        backend,
        OpenInProcessBackend(options.registry_dir, options.registry_opener));
  } else {
    METAOPT_ASSIGN_OR_RETURN(backend, OpenServerBackend(options.server));
    // A long-lived server may hold studies of earlier runs: make the ids of
    // this run unique (they do not influence the results).
    nonce = absl::StrFormat(
        "%x", static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) ^
                  (static_cast<uint64_t>(getpid()) << 40));
  }
  result.backend = backend->Describe();
  {
    METAOPT_ASSIGN_OR_RETURN(v1::ListModelsResponse models,
                             backend->ListModels());
    for (const v1::Model& model : models.models()) {
      result.models.push_back(
          absl::StrCat(model.name(), "@", model.version(), " (",
                       v1::ModelKind_Name(model.kind()), ")"));
    }
  }

  // Probe every (method, task) pair, so that whatever cannot run is reported
  // before any work is done.
  METAOPT_ASSIGN_OR_RETURN(
      ProbeOutcome probe,
      ProbeMethods(*backend, tasks, methods, space, objective,
                   further_objectives, constraint_column, options.jobs, nonce,
                   result.backend));
  if (probe.unavailable > 0 && !options.skip_unavailable) {
    return absl::FailedPreconditionError(absl::StrCat(
        "some methods cannot run on ", result.backend, ": ",
        DescribeUnavailable(probe, methods, tasks),
        ". Leave them out of --methods (or the tasks out of the split, e.g. "
        "with --tasks-with-features), or pass --skip-unavailable to run the "
        "rest and list these in report.md"));
  }
  {
    // A method that can run on no task is dropped; a task on which some
    // remaining method cannot run is left out for all of them.
    std::vector<MethodDefinition> available;
    std::vector<bool> kept_method(methods.size(), true);
    for (size_t m = 0; m < methods.size(); ++m) {
      const std::vector<std::string>& reasons = probe.reasons[m];
      const bool none = std::all_of(reasons.begin(), reasons.end(),
                                    [](const auto& r) { return !r.empty(); });
      if (none) {
        result.unavailable_methods.emplace_back(methods[m].name, reasons[0]);
        kept_method[m] = false;
      } else {
        available.push_back(methods[m]);
      }
    }
    std::vector<ReplayTask> runnable;
    for (size_t t = 0; t < tasks.size(); ++t) {
      std::vector<std::string> reasons;
      for (size_t m = 0; m < methods.size(); ++m) {
        if (kept_method[m] && !probe.reasons[m][t].empty()) {
          reasons.push_back(
              absl::StrCat(methods[m].name, ": ", probe.reasons[m][t]));
        }
      }
      if (reasons.empty()) {
        runnable.push_back(std::move(tasks[t]));
      } else {
        result.unavailable_tasks.emplace_back(tasks[t].id,
                                              absl::StrJoin(reasons, "; "));
      }
    }
    methods = std::move(available);
    tasks = std::move(runnable);
    if (methods.empty()) {
      return absl::FailedPreconditionError("no method of --methods can run");
    }
    if (tasks.empty()) {
      return absl::FailedPreconditionError(
          "no task is left on which every available method can run");
    }
  }
  result.methods = methods;
  for (const ReplayTask& task : tasks) result.task_ids.push_back(task.id);

  // Runs are ordered task, method, seed so that progress advances evenly (and
  // a failure leaves few tasks unfinished).
  const size_t num_tasks = tasks.size();
  const size_t num_methods = methods.size();
  const size_t num_seeds = static_cast<size_t>(options.seeds);
  const size_t total = num_tasks * num_methods * num_seeds;
  result.runs.resize(total);
  ProgressReporter progress(options.progress, static_cast<int64_t>(total));

  metaopt::Mutex error_mu;
  absl::Status first_error;
  ForEachIndex(options.jobs, total, [&](size_t i) {
    const size_t t = i / (num_methods * num_seeds);
    const size_t m = (i / num_seeds) % num_methods;
    const size_t s = i % num_seeds;
    // Kept studies are a history: their ids say what they were.
    const std::string id =
        options.keep_studies
            ? absl::StrCat("bench-", nonce, "-", IdPart(methods[m].name), "-",
                           IdPart(tasks[t].id), "-s", s)
                  .substr(0, 128)
            : absl::StrCat("bench-", nonce, "-m", m, "-t", t, "-s", s);
    v1::CreateStudyRequest create = MakeCreateRequest(
        id, tasks[t], space, objective, further_objectives, constraint_column,
        methods[m], StudySeed(tasks[t].id, static_cast<int>(s)));
    absl::StatusOr<RunResult> run =
        ReplayOne(*backend, std::move(create), tasks[t], result.goal,
                  options.trials, result.budget, options.keep_studies,
                  further_objectives, constraint_column);
    if (!run.ok()) {
      metaopt::MutexLock lock(&error_mu);
      if (first_error.ok()) {
        first_error = absl::Status(
            run.status().code(),
            absl::StrCat("method ", methods[m].name, ", task \"", tasks[t].id,
                         "\", seed ", s, ": ", run.status().message()));
      }
      return false;
    }
    result.runs[result.RunIndex(m, t, s)] = *std::move(run);
    progress.RunDone();
    return true;
  });
  if (!first_error.ok()) {
    // Keep the tasks all of whose runs finished (a finished run has a regret
    // per trial).
    std::vector<size_t> finished;
    for (size_t t = 0; t < num_tasks; ++t) {
      bool all = true;
      for (size_t m = 0; m < num_methods && all; ++m) {
        for (size_t s = 0; s < num_seeds && all; ++s) {
          all = !result.runs[result.RunIndex(m, t, s)].regret.empty();
        }
      }
      if (all) {
        finished.push_back(t);
      } else {
        result.unfinished_tasks.push_back(tasks[t].id);
      }
    }
    if (finished.empty()) return first_error;
    std::vector<RunResult> runs(finished.size() * num_methods * num_seeds);
    std::vector<std::string> ids;
    std::vector<ReplayTask> kept;
    for (size_t k = 0; k < finished.size(); ++k) {
      ids.push_back(tasks[finished[k]].id);
      kept.push_back(std::move(tasks[finished[k]]));
    }
    for (size_t m = 0; m < num_methods; ++m) {
      for (size_t k = 0; k < finished.size(); ++k) {
        for (size_t s = 0; s < num_seeds; ++s) {
          runs[(m * finished.size() + k) * num_seeds + s] =
              std::move(result.runs[result.RunIndex(m, finished[k], s)]);
        }
      }
    }
    result.runs = std::move(runs);
    result.task_ids = std::move(ids);
    tasks = std::move(kept);
    result.failure = first_error;
  }
  if (!options.traces.empty()) {
    METAOPT_RETURN_IF_ERROR(
        ImportTraces(options.traces, tasks, result.goal, result));
  }
  for (const ReplayTask& task : tasks) {
    result.duplicate_rows += task.duplicate_rows;
    if (!task.evaluate &&
        static_cast<int>(task.catalogue.size()) < options.trials) {
      result.short_tasks.emplace_back(task.id,
                                      static_cast<int>(task.catalogue.size()));
    }
  }
  result.wall_time = absl::Now() - start;
  return result;
}

// Checks that a --functions run sets none of the catalogue's options.
absl::Status CheckFunctionOptions(const BenchOptions& options) {
  if (!options.data_dir.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--functions: \"", options.functions,
                     "\" cannot be combined with --data \"", options.data_dir,
                     "\": a run's tasks are either synthetic functions or a "
                     "meta-dataset's"));
  }
  const std::pair<bool, const char*> catalogue_only[] = {
      {options.max_tasks != 0, "--max-tasks"},
      {options.tasks_with_features, "--tasks-with-features"},
      {!options.early_stopping.empty(), "--early-stopping"},
      {!options.curves_path.empty(), "--curves"},
      {options.budget != 0, "--budget"},
      {!options.dataset_samples.empty(), "--dataset-samples"},
      {!options.objectives.empty(), "--objectives"},
      {!options.constraint.empty(), "--constraint"},
  };
  for (const auto& [set, flag] : catalogue_only) {
    if (set) {
      return absl::InvalidArgumentError(
          absl::StrCat("--functions: \"", options.functions,
                       "\" cannot be combined with ", flag, " (", flag,
                       " applies to the tasks of a meta-dataset, --data)"));
    }
  }
  return absl::OkStatus();
}

// A --functions run: one task per function, over its space, no catalogue.
absl::StatusOr<BenchResult> RunFunctions(const BenchOptions& options,
                                         absl::Time start) {
  METAOPT_RETURN_IF_ERROR(CheckFunctionOptions(options));
  METAOPT_ASSIGN_OR_RETURN(std::vector<const TestFunction*> functions,
                           ParseFunctions(options.functions));
  METAOPT_ASSIGN_OR_RETURN(std::vector<MethodDefinition> methods,
                           ParseMethods(absl::StrJoin(options.methods, ",")));
  constexpr char kName[] = "synthetic";
  for (MethodDefinition& method : methods) {
    method.base_method = method.name;
    std::string* model = method.algorithm.mutable_model();
    const size_t at = model->find("{data}");
    if (at != std::string::npos) model->replace(at, 6, kName);
  }
  BenchResult result;
  result.dataset_name = "synthetic functions";
  result.objective_name = "f";
  result.goal = v1::GOAL_MINIMIZE;
  result.trials = options.trials;
  result.seeds = options.seeds;
  result.jobs = options.jobs;
  result.split_task_count = static_cast<int>(functions.size());
  std::vector<ReplayTask> tasks;
  for (const TestFunction* function : functions) {
    ReplayTask task;
    task.id = function->name;
    task.space = function->space;
    task.evaluate = function->evaluate;
    task.best = function->f_star;
    task.worst = ReferenceValue(*function);
    result.functions.push_back({function->name, function->description,
                                function->dimensions, task.best, task.worst});
    tasks.push_back(std::move(task));
  }
  v1::Objective objective;
  objective.set_name(result.objective_name);
  objective.set_goal(result.goal);
  return RunTasks(options, std::move(methods), std::move(tasks),
                  v1::SearchSpace(), objective, {}, "", start,
                  std::move(result));
}

}  // namespace

absl::StatusOr<BenchResult> RunBenchmark(const BenchOptions& options) {
  const absl::Time start = absl::Now();
  if (options.data_dir.empty() && options.functions.empty()) {
    return absl::InvalidArgumentError(
        "--data or --functions is required: a meta-dataset folder, or "
        "synthetic test functions to run as the tasks");
  }
  if (options.trials < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--trials: ", options.trials, " is not >= 1"));
  }
  if (options.seeds < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--seeds: ", options.seeds, " is not >= 1"));
  }
  if (options.jobs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--jobs: ", options.jobs, " is not >= 1"));
  }
  if (options.max_tasks < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-tasks: ", options.max_tasks, " is negative"));
  }
  if (!options.server.empty() && !options.registry_dir.empty()) {
    return absl::InvalidArgumentError(
        "--registry applies to the in-process engine; a server loads its "
        "models from its own --models directory");
  }
  if (options.budget < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--budget: ", options.budget, " is negative"));
  }
  if (!options.functions.empty()) return RunFunctions(options, start);
  METAOPT_RETURN_IF_ERROR(meta::ValidateSplitName(options.split));
  METAOPT_ASSIGN_OR_RETURN(std::vector<MethodDefinition> methods,
                           ParseMethods(absl::StrJoin(options.methods, ",")));
  for (MethodDefinition& method : methods) method.base_method = method.name;
  const bool early_stopping = !options.early_stopping.empty();
  if (early_stopping) {
    // One variant per (method, rule).
    METAOPT_ASSIGN_OR_RETURN(std::vector<EarlyStoppingRule> rules,
                             ParseEarlyStoppingRules(options.early_stopping));
    std::vector<MethodDefinition> variants;
    for (const MethodDefinition& method : methods) {
      for (const EarlyStoppingRule& rule : rules) {
        MethodDefinition variant = method;
        variant.name = methods.size() == 1
                           ? rule.name
                           : absl::StrCat(method.name, "/", rule.name);
        variant.early_stopping = rule.spec;
        variant.early_stopping_rule = rule.name;
        variants.push_back(std::move(variant));
      }
    }
    methods = std::move(variants);
  } else if (options.budget != 0 || !options.curves_path.empty()) {
    return absl::InvalidArgumentError(
        "--budget and --curves apply to --early-stopping runs only");
  }

  // --objectives: y, then the further columns; --constraint: COLUMN<=median.
  std::vector<std::string> further_objectives;
  if (!options.objectives.empty()) {
    if (options.objectives.front() != "y" || options.objectives.size() < 2 ||
        options.objectives.size() > 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--objectives: \"", absl::StrJoin(options.objectives, ","),
          "\" must be y followed by 1 or 2 columns of evaluations.csv (e.g. "
          "y,fit_seconds)"));
    }
    further_objectives.assign(options.objectives.begin() + 1,
                              options.objectives.end());
  }
  std::string constraint_column;
  if (!options.constraint.empty()) {
    constexpr absl::string_view kMedian = "<=median";
    if (!absl::EndsWith(options.constraint, kMedian) ||
        options.constraint.size() == kMedian.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--constraint: \"", options.constraint,
                       "\" is not COLUMN<=median (e.g. fit_seconds<=median)"));
    }
    if (!further_objectives.empty()) {
      return absl::InvalidArgumentError(
          "--constraint applies to y alone, not with --objectives");
    }
    constraint_column = options.constraint.substr(
        0, options.constraint.size() - kMedian.size());
  }
  if ((!further_objectives.empty() || !constraint_column.empty()) &&
      early_stopping) {
    return absl::InvalidArgumentError(
        "--objectives and --constraint do not apply to --early-stopping runs");
  }

  meta::ReadOptions read;
  if (options.split != "all") read.splits = {options.split};
  read.value_columns = further_objectives;
  if (!constraint_column.empty()) read.value_columns = {constraint_column};
  METAOPT_ASSIGN_OR_RETURN(meta::MetaDataset data,
                           meta::ReadMetaDataset(options.data_dir, read));
  METAOPT_ASSIGN_OR_RETURN(std::vector<const meta::Task*> split_tasks,
                           data.TasksOfSplit(options.split));

  // A method's model may name the meta-dataset: "{data}-portfolio".
  for (MethodDefinition& method : methods) {
    std::string* model = method.algorithm.mutable_model();
    const size_t at = model->find("{data}");
    if (at != std::string::npos) model->replace(at, 6, data.name);
  }

  BenchResult result;
  result.dataset_name = data.name;
  result.data_dir = options.data_dir;
  result.split = options.split;
  result.objective_name = data.objective.name();
  result.goal = data.objective.goal();
  result.trials = options.trials;
  result.seeds = options.seeds;
  result.jobs = options.jobs;
  result.split_task_count = static_cast<int>(split_tasks.size());
  result.objectives = options.objectives;
  result.constraint = constraint_column;

  CurveTable curves;
  // The metrics the rules compare (EarlyStoppingSpec.metric), by name.
  std::map<std::string, CurveTable> metric_curves;
  if (early_stopping) {
    result.early_stopping = true;
    result.curves_path = options.curves_path.empty()
                             ? absl::StrCat(options.data_dir, "/curves.csv")
                             : options.curves_path;
    METAOPT_ASSIGN_OR_RETURN(curves, ReadCurves(result.curves_path));
    for (const MethodDefinition& method : methods) {
      const std::string& metric = method.early_stopping.metric();
      if (metric.empty() || metric_curves.count(metric) > 0) continue;
      METAOPT_ASSIGN_OR_RETURN(metric_curves[metric],
                               ReadCurves(result.curves_path, metric));
    }
  }

  std::map<std::string, v1::DatasetSample> samples;
  if (!options.dataset_samples.empty()) {
    std::vector<std::string> ids;
    for (const meta::Task* task : split_tasks) ids.push_back(task->id);
    METAOPT_ASSIGN_OR_RETURN(
        samples, meta::ReadDatasetSamples(options.dataset_samples, ids,
                                          "--dataset-samples"));
  }
  std::vector<ReplayTask> tasks;
  for (const meta::Task* task : split_tasks) {
    METAOPT_ASSIGN_OR_RETURN(ReplayTask replay,
                             PrepareTask(*task, result.goal));
    if (auto it = samples.find(task->id); it != samples.end()) {
      replay.sample = it->second;
    }
    if (replay.best == replay.worst) {
      result.skipped_tasks.push_back(task->id);
      continue;
    }
    if (options.tasks_with_features && task->metafeatures.empty()) {
      result.featureless_tasks.push_back(task->id);
      continue;
    }
    if (options.max_tasks > 0 &&
        static_cast<int>(tasks.size()) >= options.max_tasks) {
      continue;
    }
    if (!further_objectives.empty()) {
      METAOPT_RETURN_IF_ERROR(
          AttachObjectives(*task, further_objectives, result.goal, replay));
    }
    if (!constraint_column.empty()) {
      METAOPT_RETURN_IF_ERROR(
          AttachConstraint(*task, constraint_column, result.goal, replay));
    }
    if (early_stopping) {
      METAOPT_RETURN_IF_ERROR(AttachCurves(curves, replay));
      for (const auto& [metric, table] : metric_curves) {
        METAOPT_RETURN_IF_ERROR(AttachMetricCurves(table, metric, replay));
      }
      const int length = static_cast<int>(replay.curves.front().size());
      if (result.curve_length != 0 && length != result.curve_length) {
        return absl::InvalidArgumentError(absl::StrCat(
            result.curves_path, ": task \"", replay.id, "\" has curves of ",
            length, " epochs, task \"", tasks.front().id, "\" of ",
            result.curve_length, " (the budget needs one length)"));
      }
      result.curve_length = length;
    }
    tasks.push_back(std::move(replay));
  }
  data.tasks.clear();  // the replay copies are all we need now
  curves.clear();
  metric_curves.clear();
  if (tasks.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(options.data_dir, ": split \"", options.split,
                     "\" has no task with a non-zero y spread (",
                     split_tasks.size(), " tasks in the split)"));
  }
  if (early_stopping) {
    result.budget = options.budget > 0 ? options.budget
                                       : static_cast<int64_t>(options.trials) *
                                             result.curve_length;
  }

  return RunTasks(options, std::move(methods), std::move(tasks), data.space,
                  data.objective, further_objectives, constraint_column, start,
                  std::move(result));
}
}  // namespace metaopt::bench
