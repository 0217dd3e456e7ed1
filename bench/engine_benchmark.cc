// Speed of the study engine's Suggest + Observe loop on a RANDOM study that
// already holds n trials, over in-memory storage so that only the engine and
// the policy are timed (no SQLite write). The cost of one loop should not grow
// with n.
//
//   build/bench/engine_benchmark
#include <cstdlib>
#include <string>

#include "benchmark/benchmark.h"
#include "core/storage/in_memory_storage.h"
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
                       double value) {
  v1::SuggestRequest suggest;
  suggest.set_study_id("s");
  suggest.set_client_id(client);
  auto suggested = engine.Suggest(suggest);
  if (!suggested.ok() || suggested->trials().empty()) std::abort();
  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(suggested->trials(0).id());
  observe.set_value(value);
  if (!engine.Observe(observe).ok()) std::abort();
}

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

// The one-time cost of a model-based Suggest on a study whose trials are
// compact (loaded, or idle for a while): parsing every trial into the list
// that policies read (StudyTrials::all). Arg: trials, all COMPLETED, filled
// through the engine as above.
void BM_ParseCompactTrials(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
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
  for (auto _ : state) {
    trials->ReleaseParsed();
    benchmark::DoNotOptimize(trials->all().data());
  }
}

BENCHMARK(BM_ParseCompactTrials)->Arg(100)->Arg(1000)->Unit(
    benchmark::kMicrosecond);

}  // namespace
}  // namespace metaopt::study

BENCHMARK_MAIN();
