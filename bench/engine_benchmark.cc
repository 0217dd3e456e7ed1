// Speed of the study engine's Suggest + Observe loop on a study that already
// holds n trials, over in-memory storage so that only the engine and the
// policy are timed (no SQLite write): on a RANDOM study (the cost of one loop
// should not grow with n) and on a GP study (the engine's part of a
// model-based Suggest: handing the policy the study's trials).
//
//   build/bench/engine_benchmark
#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/storage/in_memory_storage.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "core/study/study_trials.h"
#include "tools/loadgen/load_generator.h"

namespace metaopt::study {
namespace {

// The loadgen's study: x0..x3 in [0, 1], RANDOM; over a catalogue of
// `catalogue_size` random points of that space when positive.
v1::StudySpec Spec(int catalogue_size) {
  loadgen::LoadOptions options;
  if (catalogue_size > 0) {
    options.space = loadgen::SpaceKind::kCatalogue;
    options.catalogue_size = catalogue_size;
  }
  return loadgen::MakeStudySpec(options, 0);
}

// One Suggest (count 1, as client `client`) and the Observe of its trial.
void SuggestAndObserve(StudyEngine& engine, const std::string& client,
                       double value, const std::string& study_id = "s") {
  v1::SuggestRequest suggest;
  suggest.set_study_id(study_id);
  suggest.set_client_id(client);
  auto suggested = engine.Suggest(suggest);
  if (!suggested.ok() || suggested->trials().empty()) std::abort();
  v1::ObserveRequest observe;
  observe.set_study_id(study_id);
  observe.set_trial_id(suggested->trials(0).id());
  observe.set_value(value);
  if (!engine.Observe(observe).ok()) std::abort();
}

// Observes `n` random configurations of the loadgen's space in study "s" (as
// external evaluations, valued by loadgen::TestFunction), drawn by a RANDOM
// study "fill" of the same space.
void ObserveRandomConfigurations(StudyEngine& engine, int n) {
  v1::CreateStudyRequest create;
  create.set_study_id("fill");
  *create.mutable_spec() = Spec(0);
  if (!engine.CreateStudy(create).ok()) std::abort();
  for (int done = 0; done < n;) {
    v1::SuggestRequest suggest;
    suggest.set_study_id("fill");
    suggest.set_count(std::min(100, n - done));
    auto suggested = engine.Suggest(suggest);
    if (!suggested.ok()) std::abort();
    for (const v1::Trial& trial : suggested->trials()) {
      v1::ObserveRequest observe;
      observe.set_study_id("s");
      *observe.mutable_configuration() = trial.configuration();
      auto value = loadgen::TestFunction(trial.configuration(), 4);
      if (!value.ok()) std::abort();
      observe.set_value(*value);
      if (!engine.Observe(observe).ok()) std::abort();
      ++done;
    }
  }
}

// Suggest (count 1) + Observe on a GP study of the loadgen's space holding n
// observations. Args: n; the engine's prepare_threads. With 0 every Suggest
// fits inline (the cold path); with 1 the fit is prepared in the background
// after each Observe and the Suggest waits for it, so that the CPU time of
// this thread is the engine's and the policy's work around a prepared fit.
void BM_GpSuggestObserve(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  storage::InMemoryStorage storage;
  EngineOptions options;
  options.prepare_threads = static_cast<int>(state.range(1));
  StudyEngine engine(&storage, nullptr, options);
  loadgen::LoadOptions load;
  load.algorithm = v1::ALGORITHM_KIND_GP;
  v1::CreateStudyRequest create;
  create.set_study_id("s");
  *create.mutable_spec() = loadgen::MakeStudySpec(load, 0);
  if (!engine.CreateStudy(create).ok()) std::abort();
  ObserveRandomConfigurations(engine, n);
  for (auto _ : state) SuggestAndObserve(engine, "bench", 0.25);
}

BENCHMARK(BM_GpSuggestObserve)
    ->ArgsProduct({{100, 1000}, {0, 1}})
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);

// Args: trials held before timing starts; catalogue size (0: continuous).
void BM_RandomSuggestObserve(benchmark::State& state) {
  const int held = static_cast<int>(state.range(0));
  storage::InMemoryStorage storage;
  StudyEngine engine(&storage, nullptr);
  v1::CreateStudyRequest create;
  create.set_study_id("s");
  *create.mutable_spec() = Spec(static_cast<int>(state.range(1)));
  if (!engine.CreateStudy(create).ok()) std::abort();
  for (int i = 0; i < held; ++i) SuggestAndObserve(engine, "fill", 0.5);
  int64_t loops = 0;
  for (auto _ : state) {
    SuggestAndObserve(engine, "bench", 0.25);
    ++loops;
  }
  state.counters["trials_at_end"] = static_cast<double>(held + loops);
}

// A fixed number of loops, so that the study grows by at most 10 % of the
// largest n while being timed.
BENCHMARK(BM_RandomSuggestObserve)
    ->ArgsProduct({{100, 1000, 4000}, {0, 5000}})
    ->Iterations(400)
    ->Unit(benchmark::kMicrosecond);

// One ReportIntermediate of a tiny value (no metrics) on a trial that already
// holds `history` values, so that its cost can be compared at the start and
// the end of a long curve: it should not grow with the history. Args:
// history; storage (0: in memory, 1: SQLite in a temporary file, each report
// a durable commit); whether the response leaves the values out
// (ReportIntermediateRequest.omit_intermediate_values).
void BM_ReportIntermediate(benchmark::State& state) {
  const int history = static_cast<int>(state.range(0));
  std::unique_ptr<storage::Storage> storage;
  std::string path;
  if (state.range(1) == 0) {
    storage = std::make_unique<storage::InMemoryStorage>();
  } else {
    char dir[] = "/tmp/report_benchmark_XXXXXX";
    if (mkdtemp(dir) == nullptr) std::abort();
    path = std::string(dir) + "/bench.db";
    auto opened = storage::OpenSqliteStorage(path);
    if (!opened.ok()) std::abort();
    storage = *std::move(opened);
  }
  EngineOptions options;
  options.trial_lease = absl::Hours(24);
  {
    StudyEngine engine(storage.get(), nullptr, options);
    v1::CreateStudyRequest create;
    create.set_study_id("s");
    *create.mutable_spec() = Spec(0);
    if (!engine.CreateStudy(create).ok()) std::abort();
    v1::SuggestRequest suggest;
    suggest.set_study_id("s");
    if (!engine.Suggest(suggest).ok()) std::abort();
    v1::ReportIntermediateRequest report;
    report.set_study_id("s");
    report.set_trial_id(1);
    report.set_omit_intermediate_values(state.range(2) != 0);
    int64_t step = 0;
    for (; step < history; ++step) {
      report.set_step(step);
      report.set_value(1.0 / static_cast<double>(step + 1));
      if (!engine.ReportIntermediate(report).ok()) std::abort();
    }
    for (auto _ : state) {
      report.set_step(step);
      report.set_value(1.0 / static_cast<double>(step + 1));
      auto answered = engine.ReportIntermediate(report);
      if (!answered.ok()) std::abort();
      benchmark::DoNotOptimize(answered->ByteSizeLong());
      ++step;
    }
    state.counters["values_at_end"] = static_cast<double>(step);
  }
  storage.reset();
  if (!path.empty()) {
    std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  }
}

// A fixed number of reports, so that the longest curve stays within the
// default limit of 10,000 values per trial.
BENCHMARK(BM_ReportIntermediate)
    ->ArgNames({"history", "sqlite", "omit"})
    ->ArgsProduct({{0, 1000, 9000}, {0, 1}, {0, 1}})
    ->Iterations(500)
    ->Unit(benchmark::kMicrosecond);

// The trials of a RANDOM study of `n` observed trials (filled through the
// engine as above), loaded as after a restart: all compact.
StudyTrials LoadedTrials(int n) {
  storage::InMemoryStorage storage;
  {
    StudyEngine engine(&storage, nullptr);
    v1::CreateStudyRequest create;
    create.set_study_id("s");
    *create.mutable_spec() = Spec(0);
    if (!engine.CreateStudy(create).ok()) std::abort();
    for (int i = 0; i < n; ++i) SuggestAndObserve(engine, "fill", 0.5);
  }
  auto stored = storage.LoadTrials({"", "s"});
  if (!stored.ok()) std::abort();
  auto trials = StudyTrials::Load(*std::move(stored), "s");
  if (!trials.ok()) std::abort();
  return *std::move(trials);
}

// The one-time cost of parsing every trial into the list StudyTrials::all (a
// model-based Suggest's on a study whose trials were compact, before policies
// read a list of their own; now early stopping's). Arg: trials, all
// COMPLETED.
void BM_ParseCompactTrials(benchmark::State& state) {
  StudyTrials trials = LoadedTrials(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    trials.ReleaseParsed();
    benchmark::DoNotOptimize(trials.all().data());
  }
}

BENCHMARK(BM_ParseCompactTrials)->Arg(100)->Arg(1000)->Unit(
    benchmark::kMicrosecond);

// What a model-based Suggest that runs outside the study's lock paid before
// policies read a list of their own (StudyTrials::PolicyTrials): a copy of
// the parsed list. Arg: trials, as above.
void BM_CopyParsedTrials(benchmark::State& state) {
  StudyTrials trials = LoadedTrials(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    std::vector<v1::Trial> snapshot = trials.all();
    benchmark::DoNotOptimize(snapshot.data());
  }
}

BENCHMARK(BM_CopyParsedTrials)
    ->Arg(100)
    ->Arg(1000)
    ->Unit(benchmark::kMicrosecond);

// What a model-based Suggest (or a background fit) pays now for the trials
// it hands the policy: StudyTrials::PolicyTrials, parsed from the front of
// each compact trial. Arg: trials, as above.
void BM_PolicyTrials(benchmark::State& state) {
  StudyTrials trials = LoadedTrials(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    std::vector<v1::Trial> policy_trials = trials.PolicyTrials();
    benchmark::DoNotOptimize(policy_trials.data());
  }
}

BENCHMARK(BM_PolicyTrials)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace metaopt::study

BENCHMARK_MAIN();
