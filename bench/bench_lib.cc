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
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/svg_plot.h"
#include "clients/cpp/metaopt_client.h"
#include "core/common/goal.h"
#include "core/common/mutex.h"
#include "core/common/strings.h"
#include "core/common/status_macros.h"
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
     true, "the bundled zero-shot portfolio first, then random search"},
    {"gp", "kind: ALGORITHM_KIND_GP model: \"none\"", true,
     "GP (Matern-5/2 ARD) + EI over the catalogue, no transfer"},
    {"gp+portfolio", "kind: ALGORITHM_KIND_GP model: \"{data}-portfolio\"",
     true, "GP + EI after the zero-shot portfolio of the registry model"},
    {"deeppipe", "kind: ALGORITHM_KIND_DEEPPIPE", true,
     "meta-learned deep-kernel GP (registry model matching the space)"},
    {"deeppipe-scratch", "kind: ALGORITHM_KIND_DEEPPIPE model: \"none\"", true,
     "DeepPipe trained on the study's own data only (no transfer)"},
    {"pmf", "kind: ALGORITHM_KIND_PMF", true,
     "probabilistic matrix factorisation over the catalogue, warm start by "
     "meta-features"},
    {"pmf-nofeatures", "kind: ALGORITHM_KIND_PMF", false,
     "PMF without meta-features: warm start from the model's portfolio"},
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

// ---------------------------------------------------------------------------
// Small helpers.

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  return std::accumulate(v.begin(), v.end(), 0.0) /
         static_cast<double>(v.size());
}

// Standard error of the mean (sample standard deviation / sqrt(n)); 0 for
// n < 2.
double StandardError(const std::vector<double>& v) {
  const size_t n = v.size();
  if (n < 2) return 0;
  const double mean = Mean(v);
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(n - 1)) /
         std::sqrt(static_cast<double>(n));
}

// Linear-interpolation percentile (q in [0, 1]) of sorted `v`.
double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  const size_t j = std::min(i + 1, sorted.size() - 1);
  return sorted[i] + (pos - static_cast<double>(i)) * (sorted[j] - sorted[i]);
}

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

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot open ", path, " for writing: ", std::strerror(errno)));
  }
  out << text;
  out.close();
  if (!out) {
    return absl::DataLossError(absl::StrCat("writing ", path, " failed"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Backends.

// Thread-safe (StudyEngine is).
class EngineBackend final : public StudyBackend {
 public:
  EngineBackend(std::unique_ptr<storage::Storage> storage,
                std::shared_ptr<registry::ModelManager> models)
      : storage_(std::move(storage)),
        models_(std::move(models)),
        engine_(storage_.get(), models_.get()) {}

  absl::StatusOr<v1::CreateStudyResponse> CreateStudy(
      const v1::CreateStudyRequest& request) override {
    return engine_.CreateStudy(request);
  }
  absl::StatusOr<v1::SuggestResponse> Suggest(
      const v1::SuggestRequest& request) override {
    return engine_.Suggest(request);
  }
  absl::StatusOr<v1::ObserveResponse> Observe(
      const v1::ObserveRequest& request) override {
    return engine_.Observe(request);
  }
  absl::StatusOr<v1::DeleteStudyResponse> DeleteStudy(
      const v1::DeleteStudyRequest& request) override {
    return engine_.DeleteStudy(request);
  }
  absl::StatusOr<v1::ListModelsResponse> ListModels() override {
    return engine_.ListModels(v1::ListModelsRequest());
  }
  std::string Describe() const override {
    return models_ != nullptr ? absl::StrCat("in-process (registry ",
                                             models_->base_path(), ")")
                              : "in-process";
  }

 private:
  std::unique_ptr<storage::Storage> storage_;
  std::shared_ptr<registry::ModelManager> models_;
  study::StudyEngine engine_;
};

// Thread-safe (MetaoptClient is).
class ServerBackend final : public StudyBackend {
 public:
  ServerBackend(std::unique_ptr<MetaoptClient> client, std::string address)
      : client_(std::move(client)), address_(std::move(address)) {}

  absl::StatusOr<v1::CreateStudyResponse> CreateStudy(
      const v1::CreateStudyRequest& request) override {
    return client_->CreateStudy(request);
  }
  absl::StatusOr<v1::SuggestResponse> Suggest(
      const v1::SuggestRequest& request) override {
    return client_->Suggest(request);
  }
  absl::StatusOr<v1::ObserveResponse> Observe(
      const v1::ObserveRequest& request) override {
    return client_->Observe(request);
  }
  absl::StatusOr<v1::DeleteStudyResponse> DeleteStudy(
      const v1::DeleteStudyRequest& request) override {
    return client_->DeleteStudy(request);
  }
  absl::StatusOr<v1::ListModelsResponse> ListModels() override {
    return client_->ListModels(v1::ListModelsRequest());
  }
  std::string Describe() const override {
    return absl::StrCat("server ", address_);
  }

 private:
  std::unique_ptr<MetaoptClient> client_;
  std::string address_;
};

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

v1::CreateStudyRequest MakeCreateRequest(const std::string& study_id,
                                         const ReplayTask& task,
                                         const v1::SearchSpace& space,
                                         const v1::Objective& objective,
                                         const MethodDefinition& method,
                                         uint64_t seed) {
  v1::CreateStudyRequest request;
  request.set_study_id(study_id);
  v1::StudySpec* spec = request.mutable_spec();
  *spec->mutable_search_space() = space;
  *spec->mutable_objective() = objective;
  *spec->mutable_algorithm() = method.algorithm;
  spec->mutable_candidates()->Reserve(static_cast<int>(task.catalogue.size()));
  for (const v1::Configuration& config : task.catalogue) {
    *spec->add_candidates() = config;
  }
  if (method.dataset_features) {
    for (const auto& [name, value] : task.metafeatures) {
      (*spec->mutable_dataset_features())[name] = value;
    }
  }
  spec->set_seed(seed);
  return request;
}

absl::StatusOr<RunResult> ReplayOne(StudyBackend& backend,
                                    v1::CreateStudyRequest create,
                                    const ReplayTask& task, v1::Goal goal,
                                    int trials) {
  const std::string study_id = create.study_id();
  METAOPT_RETURN_IF_ERROR(backend.CreateStudy(create).status());
  create.Clear();  // the catalogue can be large

  RunResult result;
  std::vector<double> observed;
  observed.reserve(trials);
  for (int t = 0; t < trials; ++t) {
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
    const std::string key = space::ConfigurationKey(trial.configuration());
    auto it = task.index_by_key.find(key);
    if (it == task.index_by_key.end()) {
      return absl::InternalError(absl::StrCat(
          "trial ", trial.id(),
          ": the suggested configuration is not in the task's table: ",
          trial.configuration().ShortDebugString()));
    }
    const double value = task.y[it->second];
    v1::ObserveRequest observe;
    observe.set_study_id(study_id);
    observe.set_trial_id(trial.id());
    observe.set_value(value);
    METAOPT_RETURN_IF_ERROR(backend.Observe(observe).status());
    observed.push_back(value);
    result.entries.push_back(it->second);
  }
  v1::DeleteStudyRequest remove;
  remove.set_study_id(study_id);
  METAOPT_RETURN_IF_ERROR(backend.DeleteStudy(remove).status());
  result.trials_observed = static_cast<int>(observed.size());
  result.values = observed;
  result.regret = RegretCurve(observed, task.best, task.worst, goal, trials);
  return result;
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

// A regret for report.md: 4 decimals, or 3 significant digits in scientific
// notation below 0.001 (fcnet's regrets are ~1e-6: its worst values are huge).
std::string FormatRegret(double v) {
  if (v != 0 && std::abs(v) < 1e-3) return absl::StrFormat("%.2e", v);
  return absl::StrFormat("%.4f", v);
}

std::string GoalName(v1::Goal goal) {
  switch (goal) {
    case v1::GOAL_MINIMIZE:
      return "minimize";
    case v1::GOAL_MAXIMIZE:
      return "maximize";
    default:
      return "unspecified";
  }
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

absl::StatusOr<std::vector<MethodDefinition>> ParseMethods(
    std::string_view comma_list) {
  std::vector<MethodDefinition> out;
  absl::flat_hash_set<std::string> seen;
  std::vector<std::string> known;
  for (const MethodDefinition& m : KnownMethods()) known.push_back(m.name);
  for (absl::string_view part : absl::StrSplit(
           absl::string_view(comma_list.data(), comma_list.size()), ',')) {
    const std::string name(absl::StripAsciiWhitespace(part));
    if (name.empty()) continue;
    auto it =
        std::find_if(KnownMethods().begin(), KnownMethods().end(),
                     [&](const MethodDefinition& m) { return m.name == name; });
    if (it == KnownMethods().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--methods: unknown method \"", name,
                       "\"; known: ", absl::StrJoin(known, ", ")));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--methods: \"", name, "\" is listed twice"));
    }
    out.push_back(*it);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--methods: no method given; known: ", absl::StrJoin(known, ", ")));
  }
  return out;
}

// ---------------------------------------------------------------------------
// Metrics

double NormalizedRegret(double best_so_far, double best, double worst) {
  const double r = (best_so_far - best) / (worst - best);
  return std::clamp(r, 0.0, 1.0);
}

std::vector<double> RegretCurve(const std::vector<double>& observed,
                                double best, double worst, v1::Goal goal,
                                int trials) {
  std::vector<double> curve;
  curve.reserve(std::max(trials, 0));
  double regret = 1;
  bool any = false;
  double best_so_far = 0;
  for (int t = 0; t < trials; ++t) {
    if (t < static_cast<int>(observed.size())) {
      if (!any || Better(observed[t], best_so_far, goal)) {
        best_so_far = observed[t];
        any = true;
      }
      regret = NormalizedRegret(best_so_far, best, worst);
    }
    curve.push_back(regret);
  }
  return curve;
}

std::vector<double> AverageRanks(const std::vector<double>& values) {
  const size_t n = values.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(n);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && values[order[j + 1]] == values[order[i]]) ++j;
    // Positions i..j (0-based) share ranks i+1..j+1.
    const double rank = (static_cast<double>(i + j) / 2.0) + 1.0;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = rank;
    i = j + 1;
  }
  return ranks;
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
    if (Better(v, out.best, goal)) out.best = v;
    if (Better(out.worst, v, goal)) out.worst = v;
  }
  return out;
}

uint64_t StudySeed(std::string_view task_id, int seed) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (unsigned char c : task_id) {
    hash ^= c;
    hash *= 1099511628211ull;  // FNV-1a 64 prime
  }
  return hash + static_cast<uint64_t>(seed);
}

// ---------------------------------------------------------------------------
// Backends

RegistryOpener DefaultRegistryOpener() {
  return [](const std::string& dir)
             -> absl::StatusOr<std::shared_ptr<registry::ModelManager>> {
    std::error_code error;
    if (!std::filesystem::is_directory(dir, error)) {
      return absl::NotFoundError(
          absl::StrCat("--registry ", dir, ": not a directory"));
    }
    registry::ModelManager::Options options;
    options.base_path = dir;  // poll_interval 0: no poll thread
    METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<registry::ModelManager> manager,
                             registry::ModelManager::Create(options));
    return std::shared_ptr<registry::ModelManager>(std::move(manager));
  };
}

absl::StatusOr<std::unique_ptr<StudyBackend>> OpenInProcessBackend(
    const std::string& registry_dir, const RegistryOpener& opener) {
  METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<storage::Storage> storage,
                           storage::OpenInMemoryStorage());
  std::shared_ptr<registry::ModelManager> models;
  if (!registry_dir.empty()) {
    if (!opener) {
      return absl::FailedPreconditionError(
          absl::StrCat("--registry ", registry_dir,
                       ": no model registry support in this run (empty "
                       "registry opener)"));
    }
    METAOPT_ASSIGN_OR_RETURN(models, opener(registry_dir));
  }
  return std::unique_ptr<StudyBackend>(
      new EngineBackend(std::move(storage), std::move(models)));
}

absl::StatusOr<std::unique_ptr<StudyBackend>> OpenServerBackend(
    const std::string& address) {
  MetaoptClient::Options options;
  options.address = address;
  // CreateStudy carries the whole catalogue (up to ~60k configurations).
  options.timeout = absl::Minutes(5);
  METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<MetaoptClient> client,
                           MetaoptClient::Create(options));
  return std::unique_ptr<StudyBackend>(
      new ServerBackend(std::move(client), address));
}

// ---------------------------------------------------------------------------
// Running

absl::StatusOr<BenchResult> RunBenchmark(const BenchOptions& options) {
  const absl::Time start = absl::Now();
  if (options.data_dir.empty()) {
    return absl::InvalidArgumentError(
        "--data: a meta-dataset folder is required");
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
  METAOPT_RETURN_IF_ERROR(meta::ValidateSplitName(options.split));
  METAOPT_ASSIGN_OR_RETURN(std::vector<MethodDefinition> methods,
                           ParseMethods(absl::StrJoin(options.methods, ",")));

  meta::ReadOptions read;
  if (options.split != "all") read.splits = {options.split};
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

  std::vector<ReplayTask> tasks;
  for (const meta::Task* task : split_tasks) {
    METAOPT_ASSIGN_OR_RETURN(ReplayTask replay,
                             PrepareTask(*task, result.goal));
    if (replay.best == replay.worst) {
      result.skipped_tasks.push_back(task->id);
      continue;
    }
    if (options.max_tasks > 0 &&
        static_cast<int>(tasks.size()) >= options.max_tasks) {
      continue;
    }
    result.duplicate_rows += replay.duplicate_rows;
    if (static_cast<int>(replay.catalogue.size()) < options.trials) {
      result.short_tasks.emplace_back(
          replay.id, static_cast<int>(replay.catalogue.size()));
    }
    result.task_ids.push_back(replay.id);
    tasks.push_back(std::move(replay));
  }
  data.tasks.clear();  // the replay copies are all we need now
  if (tasks.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(options.data_dir, ": split \"", options.split,
                     "\" has no task with a non-zero y spread (",
                     split_tasks.size(), " tasks in the split)"));
  }

  std::unique_ptr<StudyBackend> backend;
  std::string nonce = "run";
  if (options.server.empty()) {
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

  // Probe every method once with the first task, so that an unavailable one
  // is reported before any work is done.
  {
    std::vector<MethodDefinition> available;
    for (size_t m = 0; m < methods.size(); ++m) {
      const std::string id = absl::StrCat("bench-", nonce, "-probe-m", m);
      v1::CreateStudyRequest create =
          MakeCreateRequest(id, tasks.front(), data.space, data.objective,
                            methods[m], StudySeed(tasks.front().id, 0));
      absl::Status created = backend->CreateStudy(create).status();
      if (created.ok()) {
        v1::DeleteStudyRequest remove;
        remove.set_study_id(id);
        METAOPT_RETURN_IF_ERROR(backend->DeleteStudy(remove).status());
        available.push_back(methods[m]);
      } else if (IsUnavailableMethod(created)) {
        result.unavailable_methods.emplace_back(methods[m].name,
                                                created.ToString());
      } else {
        return absl::Status(
            created.code(),
            absl::StrCat("method ", methods[m].name, " on ", result.backend,
                         ": CreateStudy failed: ", created.message()));
      }
    }
    if (!result.unavailable_methods.empty() && !options.skip_unavailable) {
      std::vector<std::string> lines;
      for (const auto& [name, reason] : result.unavailable_methods) {
        lines.push_back(absl::StrCat(name, ": ", reason));
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "these methods cannot run on ", result.backend, ": ",
          absl::StrJoin(lines, "; "),
          ". Leave them out of --methods, or pass --skip-unavailable to run "
          "the others and list these in report.md"));
    }
    methods = std::move(available);
    if (methods.empty()) {
      return absl::FailedPreconditionError("no method of --methods can run");
    }
  }
  result.methods = methods;

  // Runs are ordered task, method, seed so that progress advances evenly.
  const size_t num_tasks = tasks.size();
  const size_t num_methods = methods.size();
  const size_t num_seeds = static_cast<size_t>(options.seeds);
  const size_t total = num_tasks * num_methods * num_seeds;
  result.runs.resize(total);
  ProgressReporter progress(options.progress, static_cast<int64_t>(total));

  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  metaopt::Mutex error_mu;
  absl::Status first_error;
  auto worker = [&] {
    while (!failed.load()) {
      const size_t i = next.fetch_add(1);
      if (i >= total) return;
      const size_t t = i / (num_methods * num_seeds);
      const size_t m = (i / num_seeds) % num_methods;
      const size_t s = i % num_seeds;
      const std::string id =
          absl::StrCat("bench-", nonce, "-m", m, "-t", t, "-s", s);
      v1::CreateStudyRequest create = MakeCreateRequest(
          id, tasks[t], data.space, data.objective, methods[m],
          StudySeed(tasks[t].id, static_cast<int>(s)));
      absl::StatusOr<RunResult> run = ReplayOne(
          *backend, std::move(create), tasks[t], result.goal, options.trials);
      if (!run.ok()) {
        metaopt::MutexLock lock(&error_mu);
        if (first_error.ok()) {
          first_error = absl::Status(
              run.status().code(),
              absl::StrCat("method ", methods[m].name, ", task \"", tasks[t].id,
                           "\", seed ", s, ": ", run.status().message()));
        }
        failed.store(true);
        return;
      }
      result.runs[result.RunIndex(m, t, s)] = *std::move(run);
      progress.RunDone();
    }
  };
  std::vector<std::thread> threads;
  const int jobs = static_cast<int>(
      std::min<size_t>(static_cast<size_t>(options.jobs), total));
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (std::thread& thread : threads) thread.join();
  if (failed.load()) {
    metaopt::MutexLock lock(&error_mu);
    return first_error;
  }
  result.wall_time = absl::Now() - start;
  return result;
}

// ---------------------------------------------------------------------------
// Aggregation

std::vector<SummaryRow> Summarize(const BenchResult& result) {
  const size_t num_methods = result.methods.size();
  const size_t num_tasks = result.task_ids.size();
  const size_t num_seeds = static_cast<size_t>(result.seeds);
  const int trials = result.trials;
  // ranks[m][k]: one rank per (task, seed) at trial k+1.
  std::vector<std::vector<std::vector<double>>> ranks(
      num_methods, std::vector<std::vector<double>>(trials));
  std::vector<double> values(num_methods);
  for (size_t t = 0; t < num_tasks; ++t) {
    for (size_t s = 0; s < num_seeds; ++s) {
      for (int k = 0; k < trials; ++k) {
        for (size_t m = 0; m < num_methods; ++m) {
          values[m] = result.runs[result.RunIndex(m, t, s)].regret[k];
        }
        std::vector<double> r = AverageRanks(values);
        for (size_t m = 0; m < num_methods; ++m) ranks[m][k].push_back(r[m]);
      }
    }
  }
  std::vector<SummaryRow> rows;
  for (size_t m = 0; m < num_methods; ++m) {
    for (int k = 0; k < trials; ++k) {
      std::vector<double> regrets;
      regrets.reserve(num_tasks * num_seeds);
      for (size_t t = 0; t < num_tasks; ++t) {
        for (size_t s = 0; s < num_seeds; ++s) {
          regrets.push_back(result.runs[result.RunIndex(m, t, s)].regret[k]);
        }
      }
      SummaryRow row;
      row.method = result.methods[m].name;
      row.trials = k + 1;
      row.regret_mean = Mean(regrets);
      row.regret_sem = StandardError(regrets);
      row.rank_mean = Mean(ranks[m][k]);
      row.rank_sem = StandardError(ranks[m][k]);
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

std::vector<TimingRow> SummarizeTiming(const BenchResult& result) {
  std::vector<TimingRow> rows;
  for (size_t m = 0; m < result.methods.size(); ++m) {
    std::vector<double> ms;
    for (size_t t = 0; t < result.task_ids.size(); ++t) {
      for (int s = 0; s < result.seeds; ++s) {
        const RunResult& run = result.runs[result.RunIndex(m, t, s)];
        ms.insert(ms.end(), run.suggest_ms.begin(), run.suggest_ms.end());
      }
    }
    std::sort(ms.begin(), ms.end());
    TimingRow row;
    row.method = result.methods[m].name;
    row.calls = static_cast<int64_t>(ms.size());
    row.mean_ms = Mean(ms);
    row.p50_ms = Percentile(ms, 0.5);
    row.p95_ms = Percentile(ms, 0.95);
    rows.push_back(std::move(row));
  }
  return rows;
}

// ---------------------------------------------------------------------------
// Outputs

std::string SummaryCsv(const std::vector<SummaryRow>& rows) {
  std::string out = "method,trials,regret_mean,regret_sem,rank_mean\n";
  for (const SummaryRow& row : rows) {
    absl::StrAppend(
        &out, absl::StrFormat("%s,%d,%.8g,%.8g,%.8g\n", row.method, row.trials,
                              row.regret_mean, row.regret_sem, row.rank_mean));
  }
  return out;
}

std::string PerTaskCsv(const BenchResult& result) {
  std::string out = "method,task,seed,trial,regret\n";
  for (size_t m = 0; m < result.methods.size(); ++m) {
    for (size_t t = 0; t < result.task_ids.size(); ++t) {
      for (int s = 0; s < result.seeds; ++s) {
        const RunResult& run = result.runs[result.RunIndex(m, t, s)];
        for (size_t k = 0; k < run.regret.size(); ++k) {
          absl::StrAppend(
              &out,
              absl::StrFormat("%s,%s,%d,%d,%.8g\n", result.methods[m].name,
                              result.task_ids[t], s, k + 1, run.regret[k]));
        }
      }
    }
  }
  return out;
}

std::string TrialsCsv(const BenchResult& result) {
  std::string out = "method,task,seed,trial,entry,value\n";
  for (size_t m = 0; m < result.methods.size(); ++m) {
    for (size_t t = 0; t < result.task_ids.size(); ++t) {
      for (int s = 0; s < result.seeds; ++s) {
        const RunResult& run = result.runs[result.RunIndex(m, t, s)];
        for (size_t k = 0; k < run.entries.size(); ++k) {
          absl::StrAppend(
              &out, absl::StrFormat("%s,%s,%d,%d,%d,%.10g\n",
                                    result.methods[m].name, result.task_ids[t],
                                    s, k + 1, run.entries[k], run.values[k]));
        }
      }
    }
  }
  return out;
}

std::string TimingCsv(const std::vector<TimingRow>& rows) {
  std::string out = "method,suggest_ms_mean,suggest_ms_p50,suggest_ms_p95\n";
  for (const TimingRow& row : rows) {
    absl::StrAppend(&out, absl::StrFormat("%s,%.4f,%.4f,%.4f\n", row.method,
                                          row.mean_ms, row.p50_ms, row.p95_ms));
  }
  return out;
}

std::vector<int> ReportCheckpoints(int trials) {
  std::vector<int> out;
  for (int k : {5, 10, 25, 50}) {
    if (k <= trials) out.push_back(k);
  }
  if (out.empty() || out.back() != trials) out.push_back(trials);
  return out;
}

std::string ReportMarkdown(const BenchResult& result,
                           const std::vector<SummaryRow>& summary,
                           const std::vector<TimingRow>& timing,
                           const ReportInfo& info) {
  const std::vector<int> checkpoints = ReportCheckpoints(result.trials);
  auto row_of = [&](const std::string& method, int k) -> const SummaryRow* {
    for (const SummaryRow& row : summary) {
      if (row.method == method && row.trials == k) return &row;
    }
    return nullptr;
  };
  std::vector<std::string> method_names;
  for (const MethodDefinition& m : result.methods)
    method_names.push_back(m.name);

  std::string md;
  absl::StrAppend(&md, "# metaopt-bench: ", result.dataset_name, " (",
                  result.split, " split)\n\n");
  absl::StrAppend(&md, "| | |\n|---|---|\n");
  absl::StrAppend(&md, "| data | `", result.dataset_name, "` (folder `",
                  result.data_dir, "`), split `", result.split, "` |\n");
  absl::StrAppend(&md, "| objective | `", result.objective_name, "` (",
                  GoalName(result.goal), ") |\n");
  std::string skipped = result.skipped_tasks.empty()
                            ? "none"
                            : absl::StrJoin(result.skipped_tasks, ", ");
  absl::StrAppend(&md, "| tasks | ", result.task_ids.size(), " evaluated of ",
                  result.split_task_count,
                  " in the split; skipped (zero y spread): ",
                  result.skipped_tasks.size(), " (", skipped, ") |\n");
  absl::StrAppend(&md, "| methods | ", absl::StrJoin(method_names, ", "),
                  " |\n");
  if (!result.unavailable_methods.empty()) {
    std::vector<std::string> parts;
    for (const auto& [name, reason] : result.unavailable_methods) {
      parts.push_back(absl::StrCat(name, " (", reason, ")"));
    }
    absl::StrAppend(&md, "| not run (unavailable) | ",
                    absl::StrJoin(parts, "; "), " |\n");
  }
  absl::StrAppend(&md, "| trials x seeds | ", result.trials, " x ",
                  result.seeds,
                  " (study seed = FNV-1a-64(task id) + seed, seeds 0..",
                  result.seeds - 1, ") |\n");
  absl::StrAppend(&md, "| engine | ", result.backend, ", ", result.jobs,
                  result.jobs == 1 ? " job" : " jobs", " |\n");
  absl::StrAppend(
      &md, "| registry models | ",
      result.models.empty() ? "none" : absl::StrJoin(result.models, ", "),
      " |\n");
  absl::StrAppend(&md, "| metaopt | ", info.version, " |\n");
  absl::StrAppend(&md, "| compiler | ", info.compiler, " |\n");
  absl::StrAppend(&md, "| date | ",
                  absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", info.start_time,
                                   absl::UTCTimeZone()),
                  " |\n");
  absl::StrAppend(
      &md, "| wall time | ",
      absl::StrFormat("%.1f s", absl::ToDoubleSeconds(result.wall_time)),
      " |\n\n");
  absl::StrAppend(&md, "Command:\n\n```sh\n", info.command_line, "\n```\n\n");

  auto header = [&](const char* first) {
    std::string h = absl::StrCat("| ", first, " |");
    std::string rule = "|---|";
    for (int k : checkpoints) {
      absl::StrAppend(&h, " ", k, k == 1 ? " trial" : " trials", " |");
      absl::StrAppend(&rule, "---|");
    }
    return absl::StrCat(h, "\n", rule, "\n");
  };
  absl::StrAppend(&md,
                  "## Normalised regret\n\nMean ± standard error over tasks x "
                  "seeds of `(best so far - best in task) / (worst in task - "
                  "best in task)` (0: the task's best configuration was "
                  "found).\n\n",
                  header("method"));
  for (const std::string& name : method_names) {
    absl::StrAppend(&md, "| ", name, " |");
    for (int k : checkpoints) {
      const SummaryRow* row = row_of(name, k);
      absl::StrAppend(&md, " ", FormatRegret(row->regret_mean), " ± ",
                      FormatRegret(row->regret_sem), " |");
    }
    absl::StrAppend(&md, "\n");
  }
  absl::StrAppend(&md,
                  "\n## Average rank\n\nRank of each method per (task, seed, "
                  "trial count) on regret, ties averaged (1 = best), averaged "
                  "over tasks x seeds.\n\n",
                  header("method"));
  for (const std::string& name : method_names) {
    absl::StrAppend(&md, "| ", name, " |");
    for (int k : checkpoints) {
      absl::StrAppend(&md,
                      absl::StrFormat(" %.2f |", row_of(name, k)->rank_mean));
    }
    absl::StrAppend(&md, "\n");
  }
  absl::StrAppend(&md,
                  "\n## Suggest latency\n\nWall time of one Suggest(count=1) "
                  "call as the bench sees it (",
                  result.backend,
                  ").\n\n| method | calls | mean (ms) | p50 (ms) | p95 (ms) "
                  "|\n|---|---|---|---|---|\n");
  for (const TimingRow& row : timing) {
    absl::StrAppend(
        &md, absl::StrFormat("| %s | %d | %.3f | %.3f | %.3f |\n", row.method,
                             row.calls, row.mean_ms, row.p50_ms, row.p95_ms));
  }
  absl::StrAppend(
      &md,
      "\n## Plots\n\n![Normalised regret](regret_vs_trials.svg)\n\n"
      "![Average rank](rank_vs_trials.svg)\n\n"
      "![Normalised regret, log scale](log_regret_vs_trials.svg)\n");
  if (!result.short_tasks.empty() || result.duplicate_rows > 0) {
    absl::StrAppend(&md, "\n## Notes\n\n");
    if (!result.short_tasks.empty()) {
      std::vector<std::string> parts;
      for (const auto& [id, size] : result.short_tasks) {
        parts.push_back(absl::StrCat(id, " (", size, ")"));
      }
      absl::StrAppend(&md, "- Tasks with fewer than ", result.trials,
                      " configurations (the run stops when the catalogue is "
                      "exhausted and its last best value is carried forward): ",
                      absl::StrJoin(parts, ", "), ".\n");
    }
    if (result.duplicate_rows > 0) {
      absl::StrAppend(&md, "- ", result.duplicate_rows,
                      " rows repeated a configuration of their task; the "
                      "first row of each configuration was used.\n");
    }
  }
  return md;
}

std::string ShellCommandLine(const std::vector<std::string>& args) {
  std::vector<std::string> quoted;
  quoted.reserve(args.size());
  for (const std::string& arg : args) quoted.push_back(ShellQuote(arg));
  return absl::StrJoin(quoted, " ");
}

absl::Status WriteOutputs(const BenchResult& result, const ReportInfo& info,
                          const std::string& out_dir) {
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat("--out: cannot create ", out_dir, ": ", error.message()));
  }
  const std::vector<SummaryRow> summary = Summarize(result);
  const std::vector<TimingRow> timing = SummarizeTiming(result);
  const std::string dir = absl::StrCat(out_dir, "/");
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "summary.csv"), SummaryCsv(summary)));
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "per_task.csv"), PerTaskCsv(result)));
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "trials.csv"), TrialsCsv(result)));
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "timing.csv"), TimingCsv(timing)));
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "report.md"),
                    ReportMarkdown(result, summary, timing, info)));

  // Plots: one series per method over trials 1..T.
  const std::string where =
      absl::StrCat(result.dataset_name, " (", result.split, " split)");
  const std::string sample = absl::StrCat(
      result.task_ids.size(),
      result.task_ids.size() == 1 ? " task x " : " tasks x ", result.seeds,
      result.seeds == 1 ? " seed" : " seeds", "; mean ± 1 standard error");
  LineChart regret;
  regret.title = absl::StrCat(where, ": normalised regret");
  regret.subtitle = absl::StrCat(sample, "; 0 = the task's best configuration");
  regret.x_label = "trials";
  regret.y_label = "normalised regret";
  regret.y_min = 0;
  LineChart log_regret = regret;
  log_regret.title = absl::StrCat(where, ": normalised regret, log scale");
  log_regret.log_y = true;
  log_regret.y_min.reset();
  LineChart rank;
  rank.title = absl::StrCat(where, ": average rank");
  rank.subtitle = absl::StrCat(sample, "; 1 = best, ties averaged");
  rank.x_label = "trials";
  rank.y_label = "average rank";
  const double n = static_cast<double>(result.methods.size());
  rank.y_min = n > 1 ? 1.0 : 0.0;
  rank.y_max = n > 1 ? n : 2.0;
  for (const MethodDefinition& method : result.methods) {
    PlotSeries r{method.name, {}, {}, {}, {}};
    PlotSeries k{method.name, {}, {}, {}, {}};
    for (const SummaryRow& row : summary) {
      if (row.method != method.name) continue;
      r.x.push_back(row.trials);
      r.y.push_back(row.regret_mean);
      r.lower.push_back(row.regret_mean - row.regret_sem);
      r.upper.push_back(row.regret_mean + row.regret_sem);
      k.x.push_back(row.trials);
      k.y.push_back(row.rank_mean);
      k.lower.push_back(row.rank_mean - row.rank_sem);
      k.upper.push_back(row.rank_mean + row.rank_sem);
    }
    regret.series.push_back(r);
    log_regret.series.push_back(std::move(r));
    rank.series.push_back(std::move(k));
  }
  METAOPT_RETURN_IF_ERROR(WriteTextFile(
      absl::StrCat(dir, "regret_vs_trials.svg"), RenderLineChart(regret)));
  METAOPT_RETURN_IF_ERROR(WriteTextFile(absl::StrCat(dir, "rank_vs_trials.svg"),
                                        RenderLineChart(rank)));
  METAOPT_RETURN_IF_ERROR(
      WriteTextFile(absl::StrCat(dir, "log_regret_vs_trials.svg"),
                    RenderLineChart(log_regret)));
  return absl::OkStatus();
}

}  // namespace metaopt::bench
