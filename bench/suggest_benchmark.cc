// Speed of one GP, DeepPipe or FSBO Suggest end to end (policy: fit schedule or
// kernel fine-tune, fantasies, acquisition search), at n = 20 ... 2,000
// observations over a 5,000-entry catalogue (names n:<N>/catalogue:5000), at
// n = 100 over a continuous 10-dimensional space, and right after one new
// Observe over a continuous 4-dimensional space and a mixed one (names
// n:<N>/space:continuous4 and n:<N>/space:mixed, N = 100, 300, 1,000).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "benchmark/benchmark.h"
#include "core/common/memory.h"
#include "core/common/parallel.h"
#include "core/gp/catalogue_kernel_cache.h"
#include "core/policy/gp_policy.h"
#include "core/policy/output_fit_cache.h"
#include "core/policy/policy_factory.h"
#include "core/registry/artifact.h"
#include "core/space/encoding.h"
#include "core/space/search_space.h"
#include "core/surrogate/deeppipe_model.h"

namespace metaopt::policy {
namespace {

constexpr int kDim = 10;

// With objectives = 2 the study minimises Objective and Seconds together
// (StudySpec.objectives; the trials report Seconds in their metrics).
v1::StudySpec Spec(int catalogue_size, space::Rng& rng, int objectives = 1) {
  v1::StudySpec spec;
  auto* stage = spec.mutable_search_space()->add_stages();
  stage->set_name("model");
  auto* algorithm = stage->add_algorithms();
  algorithm->set_name("f");
  for (int d = 0; d < kDim; ++d) {
    auto* p = algorithm->add_parameters();
    p->set_name("x" + std::to_string(d));
    p->mutable_float_domain()->set_low(0);
    p->mutable_float_domain()->set_high(1);
  }
  spec.mutable_objective()->set_name("loss");
  spec.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  if (objectives > 1) {
    *spec.add_objectives() = spec.objective();
    v1::Objective* seconds = spec.add_objectives();
    seconds->set_name("seconds");
    seconds->set_goal(v1::GOAL_MINIMIZE);
  }
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  auto space = space::SearchSpace::Create(spec.search_space());
  for (int i = 0; i < catalogue_size; ++i) {
    *spec.add_candidates() = space->Sample(rng);
  }
  return spec;
}

// A GP study over a space of the families n:<N>/space:<kind>, without a
// catalogue: "continuous4", four floats on [0, 1]; "mixed", two floats (one on
// a log scale), an integer and a three-way categorical.
v1::StudySpec SpaceSpec(const std::string& kind) {
  v1::StudySpec spec;
  auto* algorithm = spec.mutable_search_space()->add_stages();
  algorithm->set_name("model");
  auto* f = algorithm->add_algorithms();
  f->set_name("f");
  auto add_float = [f](const std::string& name, double low, double high,
                       bool log) {
    auto* p = f->add_parameters();
    p->set_name(name);
    p->mutable_float_domain()->set_low(low);
    p->mutable_float_domain()->set_high(high);
    p->mutable_float_domain()->set_log(log);
  };
  if (kind == "continuous4") {
    for (int d = 0; d < 4; ++d) add_float("x" + std::to_string(d), 0, 1, false);
  } else {
    add_float("x0", 0, 1, false);
    add_float("x1", 1e-3, 1, true);
    auto* k = f->add_parameters();
    k->set_name("k");
    k->mutable_int_domain()->set_low(1);
    k->mutable_int_domain()->set_high(10);
    auto* c = f->add_parameters();
    c->set_name("c");
    for (const char* v : {"a", "bb", "ccc"}) {
      c->mutable_categorical_domain()->add_values(v);
    }
  }
  spec.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  return spec;
}

double Objective(const v1::Configuration& c) {
  double total = 0;
  for (const auto& [name, value] : c.assignments(0).parameters()) {
    // A category counts as its length (1, 2 or 3).
    const double x = value.has_category()
                         ? static_cast<double>(value.category().size()) / 3
                         : value.number();
    total += std::sin(7 * x) + x * x;
  }
  return total;
}

// A second objective at odds with Objective: a cost that grows with x0 and
// x1.
double Seconds(const v1::Configuration& c) {
  const auto& p = c.assignments(0).parameters();
  return std::exp(2 * p.at("x0").number()) + p.at("x1").number();
}

// n COMPLETED trials valued by Objective (and Seconds in their metrics when
// the spec has several objectives): the first n catalogue entries, or
// n samples of the space.
std::vector<v1::Trial> CompletedTrials(const v1::StudySpec& spec,
                                       const space::SearchSpace& space, int n,
                                       bool from_catalogue, space::Rng& rng) {
  std::vector<v1::Trial> trials;
  for (int i = 0; i < n; ++i) {
    v1::Trial trial;
    trial.set_id(i + 1);
    *trial.mutable_configuration() =
        from_catalogue ? spec.candidates(i) : space.Sample(rng);
    trial.set_state(v1::TRIAL_STATE_COMPLETED);
    trial.set_value(Objective(trial.configuration()));
    if (spec.objectives_size() > 1) {
      (*trial.mutable_metrics())["loss"] = trial.value();
      (*trial.mutable_metrics())["seconds"] = Seconds(trial.configuration());
    }
    trials.push_back(std::move(trial));
  }
  return trials;
}

// A study (spec, space, trials) and the policy under test.
struct PolicySetup {
  v1::StudySpec spec;
  std::optional<space::SearchSpace> space;
  std::vector<v1::Trial> trials;
  std::shared_ptr<const Policy> policy;
  StudyView view() const { return StudyView{&spec, &*space, &trials}; }
};

// The timed loops, shared by GP and DeepPipe: a Suggest that fits inline
// ("cold"), the fit alone (Policy::PrepareFit, what the study engine computes
// in the background after an Observe), and a Suggest whose fit was prepared
// (the steady state when the client's evaluation takes longer than the fit).
// The cold Suggest keeps nothing between calls (the catalogue's kernel
// cache is off): what the first Suggest after a restart, a hyperparameter
// refit or a fine-tune computes.
// The other outputs' GPs of a study with several objectives fit their
// hyperparameters in every cold Suggest too (OutputFitCache is cleared),
// unless `kept_output_fits`: a Suggest between their refits, which reads
// the fit kept from the previous Suggest.
void TimeSuggest(benchmark::State& state, const PolicySetup& setup,
                 space::Rng& rng, bool kept_output_fits = false) {
  const StudyView view = setup.view();
  const int64_t budget = gp::CatalogueKernelCache::ProcessBudgetBytes();
  gp::CatalogueKernelCache::SetProcessBudgetBytes(0);
  for (auto _ : state) {
    if (!kept_output_fits) OutputFitCache::Global().Clear();
    auto result = setup.policy->Suggest(view, 1, rng);
    benchmark::DoNotOptimize(result);
  }
  gp::CatalogueKernelCache::SetProcessBudgetBytes(budget);
}

// A cold Suggest right after one new Observe, by the policy that served the
// previous Suggest (its catalogue's kernel cache on, as in a running
// server): the timed Suggests alternate between the setup's history and one
// whose last observation is another catalogue entry, so each finds the
// first n - 1 observations cached and one new. A Suggest that would refit
// the hyperparameters or fine-tune the kernel is an error here (those are
// the refit:1 rows).
// Over a space without a catalogue the other last observation is a sample of
// the space.
void TimeSuggestAfterObserve(benchmark::State& state, const PolicySetup& setup,
                             space::Rng& rng) {
  std::vector<v1::Trial> other = setup.trials;
  v1::Trial& last = other.back();
  const int next = static_cast<int>(setup.trials.size());
  *last.mutable_configuration() = setup.spec.candidates().empty()
                                      ? setup.space->Sample(rng)
                                      : setup.spec.candidates(next);
  last.set_value(Objective(last.configuration()));
  if (setup.spec.objectives_size() > 1) {
    (*last.mutable_metrics())["loss"] = last.value();
    (*last.mutable_metrics())["seconds"] = Seconds(last.configuration());
  }
  const StudyView views[2] = {setup.view(),
                              StudyView{&setup.spec, &*setup.space, &other}};
  auto warm = setup.policy->Suggest(views[0], 1, rng);
  if (!warm.ok()) {
    state.SkipWithError("the first Suggest failed");
    return;
  }
  const std::string source = warm->source;
  // The fit of the previous Suggest stays alive, as the study engine keeps
  // it (a GP extends its Cholesky factor).
  absl::StatusOr<SuggestResult> kept = std::move(warm);
  int i = 1;
  for (auto _ : state) {
    auto result = setup.policy->Suggest(views[i++ % 2], 1, rng);
    if (!result.ok() || result->source != source ||
        (setup.spec.algorithm().kind() == v1::ALGORITHM_KIND_DEEPPIPE &&
         result->update.has_value())) {
      state.SkipWithError("the Suggest failed or fitted anew");
      break;
    }
    benchmark::DoNotOptimize(result);
    kept = std::move(result);
  }
}

// The fit alone, from nothing kept (as TimeSuggest).
void TimePrepare(benchmark::State& state, const PolicySetup& setup,
                 space::Rng& rng) {
  const StudyView view = setup.view();
  const int64_t budget = gp::CatalogueKernelCache::ProcessBudgetBytes();
  gp::CatalogueKernelCache::SetProcessBudgetBytes(0);
  for (auto _ : state) {
    auto fit = setup.policy->PrepareFit(view, rng);
    benchmark::DoNotOptimize(fit);
  }
  gp::CatalogueKernelCache::SetProcessBudgetBytes(budget);
}

void TimeSuggestPrepared(benchmark::State& state, const PolicySetup& setup,
                         const space::Rng& start) {
  const StudyView view = setup.view();
  const std::shared_ptr<const PreparedFit> fit =
      *setup.policy->PrepareFit(view, start);
  for (auto _ : state) {
    space::Rng suggest_rng = start;
    auto result = setup.policy->SuggestPrepared(view, 1, suggest_rng, fit);
    if (!result.ok() || !result->used_prepared_fit) {
      state.SkipWithError("the prepared fit was not used");
      break;
    }
    benchmark::DoNotOptimize(result);
  }
}

// n COMPLETED trials valued by Objective over a space, placed as a
// model-based search places them: the first n / 5 uniform, the others
// concentrated around the best of those (Gaussian steps of 0.1 in the unit
// cube, space::Encoder::Neighbor), so that most observations are dense in
// one region and few elsewhere.
std::vector<v1::Trial> ConcentratedTrials(const space::SearchSpace& space,
                                          int n, space::Rng& rng) {
  std::vector<v1::Trial> trials;
  const space::Encoder encoder(space);
  const v1::Configuration* best = nullptr;
  trials.reserve(n);  // `best` points into it
  for (int i = 0; i < n; ++i) {
    v1::Trial trial;
    trial.set_id(i + 1);
    if (best == nullptr || i < n / 5) {
      *trial.mutable_configuration() = space.Sample(rng);
    } else {
      for (;;) {
        auto near = space.Canonicalize(encoder.Neighbor(*best, 0.1, rng), "x");
        if (near.ok()) {
          *trial.mutable_configuration() = *std::move(near);
          break;
        }
      }
    }
    trial.set_state(v1::TRIAL_STATE_COMPLETED);
    trial.set_value(Objective(trial.configuration()));
    trials.push_back(std::move(trial));
    if (i + 1 == std::max(n / 5, 1)) {
      best = &std::min_element(trials.begin(), trials.end(),
                               [](const v1::Trial& a, const v1::Trial& b) {
                                 return a.value() < b.value();
                               })
                  ->configuration();
    }
  }
  return trials;
}

// The first n trials of bench/data/continuous4_gp_loop.csv (a real GP loop
// through the server, bench/data/README.md) over SpaceSpec("continuous4"),
// COMPLETED with their recorded values; empty if the file cannot be read.
std::vector<v1::Trial> RecordedTrials(const space::SearchSpace& space, int n,
                                      space::Rng& rng) {
  std::ifstream in(METAOPT_BENCH_DATA_DIR "/continuous4_gp_loop.csv");
  std::string line;
  std::getline(in, line);  // header: x0,x1,x2,x3,loss
  std::vector<v1::Trial> trials;
  while (static_cast<int>(trials.size()) < n && std::getline(in, line)) {
    const std::vector<std::string> cells = absl::StrSplit(line, ',');
    double values[5];
    if (cells.size() != 5) return {};
    for (int c = 0; c < 5; ++c) {
      if (!absl::SimpleAtod(cells[c], &values[c])) return {};
    }
    v1::Trial trial;
    trial.set_id(static_cast<int64_t>(trials.size()) + 1);
    *trial.mutable_configuration() = space.Sample(rng);
    auto& parameters = *trial.mutable_configuration()
                            ->mutable_assignments(0)
                            ->mutable_parameters();
    for (int d = 0; d < 4; ++d) {
      parameters["x" + std::to_string(d)].set_number(values[d]);
    }
    trial.set_state(v1::TRIAL_STATE_COMPLETED);
    trial.set_value(values[4]);
    trials.push_back(std::move(trial));
  }
  if (static_cast<int>(trials.size()) < n) return {};
  return trials;
}

// A GP study with n completed trials (catalogue entries or samples), and a
// policy whose hyperparameters were fitted on them (so the timed Suggest
// reuses them, as most Suggests do under the refit schedule) unless `refit`.
// With `recorded`: RecordedTrials instead (continuous4 only).
PolicySetup MakeGpSetupFor(v1::StudySpec spec, int n, bool refit,
                           space::Rng& rng, bool concentrated = false,
                           int samples = 0, bool recorded = false) {
  PolicySetup setup;
  setup.spec = std::move(spec);
  setup.space.emplace(*space::SearchSpace::Create(setup.spec.search_space()));
  setup.trials = recorded ? RecordedTrials(*setup.space, n, rng)
                 : concentrated
                     ? ConcentratedTrials(*setup.space, n, rng)
                     : CompletedTrials(setup.spec, *setup.space, n,
                                       !setup.spec.candidates().empty(), rng);
  GpPolicyOptions options;
  if (samples > 0) options.search.random_samples = samples;
  absl::StatusOr<std::shared_ptr<const Policy>> policy =
      GpPolicy::Create(setup.spec, std::nullopt, nullptr, options);
  // One Suggest fits the hyperparameters; the benchmark starts from its state.
  auto first = (*policy)->Suggest(setup.view(), 1, rng);
  setup.policy = first->update->policy;
  if (refit) {
    // Pretend the last fit saw 10% fewer observations: a warm single-start
    // refit runs inside every timed Suggest.
    v1::PolicyState stored;
    stored.ParseFromString(first->update->state);
    stored.mutable_gp()->set_fitted_observations(n - n / 10 - 1);
    setup.policy = *CreatePolicy(setup.spec, stored.SerializeAsString());
  }
  return setup;
}

PolicySetup MakeGpSetup(int n, int catalogue, bool refit, space::Rng& rng,
                        int objectives = 1) {
  v1::StudySpec spec = Spec(catalogue, rng, objectives);
  return MakeGpSetupFor(std::move(spec), n, refit, rng);
}

// A Suggest that fits inline ("cold": no prepared fit).
void BM_GpSuggest(benchmark::State& state) {
  const int catalogue = static_cast<int>(state.range(1));
  space::Rng rng(42);
  const PolicySetup setup = MakeGpSetup(static_cast<int>(state.range(0)),
                                        catalogue, state.range(2) != 0, rng);
  TimeSuggest(state, setup, rng);
  state.SetLabel(catalogue > 0 ? "catalogue" : "continuous");
}

// The fit a Suggest needs, alone (Policy::PrepareFit: what the study engine
// computes in the background after an Observe).
void BM_GpPrepare(benchmark::State& state) {
  const int catalogue = static_cast<int>(state.range(1));
  space::Rng rng(42);
  const PolicySetup setup = MakeGpSetup(static_cast<int>(state.range(0)),
                                        catalogue, state.range(2) != 0, rng);
  TimePrepare(state, setup, rng);
  state.SetLabel(catalogue > 0 ? "catalogue" : "continuous");
}

// A Suggest whose fit was prepared (the steady state when the client's
// evaluation takes longer than the fit): the acquisition step alone.
void BM_GpSuggestPrepared(benchmark::State& state) {
  const int catalogue = static_cast<int>(state.range(1));
  space::Rng rng(42);
  const PolicySetup setup = MakeGpSetup(static_cast<int>(state.range(0)),
                                        catalogue, /*refit=*/false, rng);
  TimeSuggestPrepared(state, setup, rng);
  state.SetLabel(catalogue > 0 ? "catalogue" : "continuous");
}

// The cold Suggests of both policies: n, catalogue size (0: the continuous
// space), refit.
void ColdSuggestArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"n", "catalogue", "refit"});
  for (const int64_t n : {20, 100, 500, 1000, 2000}) {
    b->Args({n, 5000, 0});
    if (n == 100 || n == 1000) b->Args({n, 5000, 1});
  }
  b->Args({100, 0, 0});
  b->Args({100, 0, 1});
  b->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
}

BENCHMARK(BM_GpSuggest)->Apply(ColdSuggestArgs);

// A Suggest right after one new Observe (TimeSuggestAfterObserve).
void BM_GpSuggestAfterObserve(benchmark::State& state) {
  space::Rng rng(42);
  const PolicySetup setup =
      MakeGpSetup(static_cast<int>(state.range(0)),
                  static_cast<int>(state.range(1)), /*refit=*/false, rng);
  TimeSuggestAfterObserve(state, setup, rng);
  state.SetLabel("catalogue");
}

// DeepPipe with a "meta-learned" model (a seeded network of the authors'
// default architecture stored as a registry artifact: its speed is that of a
// trained one): the kernel fine-tune on its schedule, cached catalogue
// embeddings, fantasies and the EI search. The policy keeps the scheduled
// fine-tune for n (so the timed Suggest reuses it, as most Suggests do under
// the schedule) unless `refit`: then every timed Suggest runs it (100 Adam
// steps on the scheduled prefix of the observations, at most 128 of them).
// With `fsbo`: ALGORITHM_KIND_FSBO over a MODEL_KIND_FSBO model
// (surrogate::FsboArchitecture, randomly initialised).
PolicySetup MakeDeepPipeSetupFor(v1::StudySpec spec, int n, bool refit,
                                 space::Rng& rng, bool concentrated = false,
                                 bool fsbo = false) {
  PolicySetup setup;
  setup.spec = std::move(spec);
  const int catalogue = setup.spec.candidates_size();
  setup.spec.mutable_algorithm()->set_kind(fsbo ? v1::ALGORITHM_KIND_FSBO
                                                : v1::ALGORITHM_KIND_DEEPPIPE);
  setup.space.emplace(*space::SearchSpace::Create(setup.spec.search_space()));
  auto network = surrogate::DeepPipeModel::Create(
      setup.spec.search_space(),
      fsbo ? surrogate::FsboArchitecture() : surrogate::DeepPipeArchitecture(),
      3);
  v1::ModelArtifact artifact;
  artifact.set_format_version(1);
  *artifact.mutable_search_space() = setup.spec.search_space();
  network->ToArtifact(&artifact);
  auto model =
      registry::LoadedModel::Create("bench", 1, artifact, v1::ModelManifest(),
                                    *setup.space, absl::UnixEpoch())
          .value();
  setup.trials = concentrated ? ConcentratedTrials(*setup.space, n, rng)
                              : CompletedTrials(setup.spec, *setup.space, n,
                                                catalogue > 0, rng);
  setup.policy = *CreatePolicy(setup.spec, std::nullopt, model);
  if (!refit) {
    // One Suggest runs the scheduled fine-tune; its policy keeps it.
    auto first = setup.policy->Suggest(setup.view(), 1, rng);
    if (first.ok() && first->update.has_value()) {
      setup.policy = first->update->policy;
    }
  }
  return setup;
}

PolicySetup MakeDeepPipeSetup(int n, int catalogue, bool refit, space::Rng& rng,
                              int objectives = 1) {
  v1::StudySpec spec = Spec(catalogue, rng, objectives);
  return MakeDeepPipeSetupFor(std::move(spec), n, refit, rng);
}

// A Suggest that fits inline ("cold": no prepared fit).
void BM_DeepPipeSuggest(benchmark::State& state) {
  const int catalogue = static_cast<int>(state.range(1));
  space::Rng rng(7);
  const PolicySetup setup = MakeDeepPipeSetup(
      static_cast<int>(state.range(0)), catalogue, state.range(2) != 0, rng);
  TimeSuggest(state, setup, rng);
  state.SetLabel(catalogue > 0 ? "catalogue" : "continuous");
}

// The fit alone (Policy::PrepareFit): the posterior and the screen, after
// the scheduled fine-tune if `refit`.
void BM_DeepPipePrepare(benchmark::State& state) {
  const int catalogue = static_cast<int>(state.range(1));
  space::Rng rng(7);
  const PolicySetup setup = MakeDeepPipeSetup(
      static_cast<int>(state.range(0)), catalogue, state.range(2) != 0, rng);
  TimePrepare(state, setup, rng);
  state.SetLabel(catalogue > 0 ? "catalogue" : "continuous");
}

// A Suggest whose fit was prepared: the acquisition step alone.
void BM_DeepPipeSuggestPrepared(benchmark::State& state) {
  const int catalogue = static_cast<int>(state.range(1));
  space::Rng rng(7);
  const PolicySetup setup =
      MakeDeepPipeSetup(static_cast<int>(state.range(0)), catalogue,
                        /*refit=*/false, rng);
  TimeSuggestPrepared(state, setup, rng);
  state.SetLabel(catalogue > 0 ? "catalogue" : "continuous");
}

BENCHMARK(BM_DeepPipeSuggest)->Apply(ColdSuggestArgs);

// FSBO: a cold Suggest fine-tunes the whole network on the n observations
// and embeds the catalogue anew (no screen below 64 observations), at n = 20
// and 45 over catalogues of 15,625, 30,000 and 62,208 entries (nasbench201's,
// hpobench-mlp's and fcnet's test tasks):
//   BM_FsboSuggest/n:<N>/catalogue:<C>
void BM_FsboSuggest(benchmark::State& state) {
  space::Rng rng(7);
  const PolicySetup setup = MakeDeepPipeSetupFor(
      Spec(static_cast<int>(state.range(1)), rng),
      static_cast<int>(state.range(0)), /*refit=*/true, rng,
      /*concentrated=*/false, /*fsbo=*/true);
  TimeSuggest(state, setup, rng);
  state.SetLabel("catalogue");
}
BENCHMARK(BM_FsboSuggest)
    ->ArgNames({"n", "catalogue"})
    ->ArgsProduct({{20, 45}, {15625, 30000, 62208}})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

void BM_DeepPipeSuggestAfterObserve(benchmark::State& state) {
  space::Rng rng(7);
  const PolicySetup setup =
      MakeDeepPipeSetup(static_cast<int>(state.range(0)),
                        static_cast<int>(state.range(1)), /*refit=*/false, rng);
  TimeSuggestAfterObserve(state, setup, rng);
  state.SetLabel("catalogue");
}

// Several objectives: a cold Suggest (as BM_GpSuggest and
// BM_DeepPipeSuggest with refit 0) of a study minimising Objective alone
// (objectives:1) or Objective and Seconds (objectives:2: a GP of Seconds on
// the surrogate's inputs and the exact expected hypervolume improvement), at
// the same n (100, 1,000) over the same catalogue:
//   BM_GpSuggest/n:<N>/catalogue:5000/objectives:<1|2>
//   BM_DeepPipeSuggest/n:<N>/catalogue:5000/objectives:<1|2>
//   BM_GpSuggest/n:<N>/catalogue:5000/objectives:2/kept_fit:1
//   BM_DeepPipeSuggest/n:<N>/catalogue:5000/objectives:2/kept_fit:1
// With kept_fit (the Kept variants: objectives:2/kept_fit:1), a Suggest
// between the other output's hyperparameter refits (TimeSuggest's
// kept_output_fits).
void GpSuggestObjectives(benchmark::State& state, bool kept_fit) {
  space::Rng rng(42);
  const PolicySetup setup = MakeGpSetup(
      static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
      /*refit=*/false, rng, static_cast<int>(state.range(2)));
  TimeSuggest(state, setup, rng, kept_fit);
  state.SetLabel("catalogue");
}

void DeepPipeSuggestObjectives(benchmark::State& state, bool kept_fit) {
  space::Rng rng(7);
  const PolicySetup setup = MakeDeepPipeSetup(
      static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
      /*refit=*/false, rng, static_cast<int>(state.range(2)));
  TimeSuggest(state, setup, rng, kept_fit);
  state.SetLabel("catalogue");
}

// Several objectives, a Suggest right after one new Observe (caches on, as
// in a running server; TimeSuggestAfterObserve):
//   BM_GpSuggest/n:<N>/catalogue:5000/objectives:<1|2>/after_observe:1
//   BM_DeepPipeSuggest/n:<N>/catalogue:5000/objectives:<1|2>/after_observe:1
void BM_GpSuggestObjectivesAfterObserve(benchmark::State& state) {
  space::Rng rng(42);
  const PolicySetup setup = MakeGpSetup(
      static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
      /*refit=*/false, rng, static_cast<int>(state.range(2)));
  TimeSuggestAfterObserve(state, setup, rng);
  state.SetLabel("catalogue");
}
void BM_DeepPipeSuggestObjectivesAfterObserve(benchmark::State& state) {
  space::Rng rng(7);
  const PolicySetup setup = MakeDeepPipeSetup(
      static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
      /*refit=*/false, rng, static_cast<int>(state.range(2)));
  TimeSuggestAfterObserve(state, setup, rng);
  state.SetLabel("catalogue");
}

void BM_GpSuggestObjectives(benchmark::State& state) {
  GpSuggestObjectives(state, false);
}
void BM_GpSuggestObjectivesKept(benchmark::State& state) {
  GpSuggestObjectives(state, true);
}
void BM_DeepPipeSuggestObjectives(benchmark::State& state) {
  DeepPipeSuggestObjectives(state, false);
}
void BM_DeepPipeSuggestObjectivesKept(benchmark::State& state) {
  DeepPipeSuggestObjectives(state, true);
}

// The prepared Suggests and the fits alone, under names that keep the
// n:<N>/catalogue:5000 form of the Suggests above:
//   BM_GpSuggest/n:<N>/catalogue:5000/prepared:1
//   BM_GpPrepare/n:<N>/catalogue:5000/refit:<0|1>
//   BM_DeepPipeSuggest/n:<N>/catalogue:5000/prepared:1
//   BM_DeepPipePrepare/n:<N>/catalogue:5000/refit:<0|1>
//   BM_GpSuggest/n:<N>/catalogue:5000/after_observe:1
//   BM_DeepPipeSuggest/n:<N>/catalogue:5000/after_observe:1
const bool kRegistered = [] {
  const int sizes[] = {20, 100, 500, 1000, 2000};
  auto configure = [](benchmark::internal::Benchmark* b) {
    b->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
  };
  auto* gp_prepared =
      benchmark::RegisterBenchmark("BM_GpSuggest", BM_GpSuggestPrepared)
          ->ArgNames({"n", "catalogue", "prepared"});
  auto* gp_prepare = benchmark::RegisterBenchmark("BM_GpPrepare", BM_GpPrepare)
                         ->ArgNames({"n", "catalogue", "refit"});
  auto* dp_prepared = benchmark::RegisterBenchmark("BM_DeepPipeSuggest",
                                                   BM_DeepPipeSuggestPrepared)
                          ->ArgNames({"n", "catalogue", "prepared"});
  auto* dp_prepare =
      benchmark::RegisterBenchmark("BM_DeepPipePrepare", BM_DeepPipePrepare)
          ->ArgNames({"n", "catalogue", "refit"});
  auto* gp_after =
      benchmark::RegisterBenchmark("BM_GpSuggest", BM_GpSuggestAfterObserve)
          ->ArgNames({"n", "catalogue", "after_observe"});
  auto* dp_after = benchmark::RegisterBenchmark("BM_DeepPipeSuggest",
                                                BM_DeepPipeSuggestAfterObserve)
                       ->ArgNames({"n", "catalogue", "after_observe"});
  for (const int n : sizes) {
    gp_after->Args({n, 5000, 1});
    dp_after->Args({n, 5000, 1});
    gp_prepared->Args({n, 5000, 1});
    gp_prepare->Args({n, 5000, 0});
    gp_prepare->Args({n, 5000, 1});
    dp_prepared->Args({n, 5000, 1});
    dp_prepare->Args({n, 5000, 0});
    dp_prepare->Args({n, 5000, 1});
  }
  auto* gp_objectives =
      benchmark::RegisterBenchmark("BM_GpSuggest", BM_GpSuggestObjectives)
          ->ArgNames({"n", "catalogue", "objectives"});
  auto* dp_objectives = benchmark::RegisterBenchmark(
                            "BM_DeepPipeSuggest", BM_DeepPipeSuggestObjectives)
                            ->ArgNames({"n", "catalogue", "objectives"});
  auto* gp_kept =
      benchmark::RegisterBenchmark("BM_GpSuggest", BM_GpSuggestObjectivesKept)
          ->ArgNames({"n", "catalogue", "objectives", "kept_fit"});
  auto* dp_kept = benchmark::RegisterBenchmark("BM_DeepPipeSuggest",
                                               BM_DeepPipeSuggestObjectivesKept)
                      ->ArgNames({"n", "catalogue", "objectives", "kept_fit"});
  auto* gp_objectives_after =
      benchmark::RegisterBenchmark("BM_GpSuggest",
                                   BM_GpSuggestObjectivesAfterObserve)
          ->ArgNames({"n", "catalogue", "objectives", "after_observe"});
  auto* dp_objectives_after =
      benchmark::RegisterBenchmark("BM_DeepPipeSuggest",
                                   BM_DeepPipeSuggestObjectivesAfterObserve)
          ->ArgNames({"n", "catalogue", "objectives", "after_observe"});
  for (const int n : {100, 1000}) {
    for (const int objectives : {1, 2}) {
      gp_objectives->Args({n, 5000, objectives});
      dp_objectives->Args({n, 5000, objectives});
      gp_objectives_after->Args({n, 5000, objectives, 1});
      dp_objectives_after->Args({n, 5000, objectives, 1});
    }
    gp_kept->Args({n, 5000, 2, 1});
    dp_kept->Args({n, 5000, 2, 1});
  }
  configure(gp_objectives);
  configure(dp_objectives);
  configure(gp_kept);
  configure(dp_kept);
  configure(gp_objectives_after);
  configure(dp_objectives_after);
  // Over a space without a catalogue, on ConcentratedTrials, a Suggest right
  // after one new Observe (TimeSuggestAfterObserve):
  //   BM_GpSuggest/n:<N>/space:<continuous4|mixed>
  //   BM_DeepPipeSuggest/n:<N>/space:<continuous4|mixed>
  // the GP's after the first N trials of a recorded GP loop through the
  // server (RecordedTrials; what a real study's Suggest meets):
  //   BM_GpSuggest/n:<N>/space:continuous4/history:gp_loop
  // and the GP's with S random samples of the space instead of the default
  // (SearchOptions::random_samples; the cost side of that budget):
  //   BM_GpSuggest/n:<N>/space:<continuous4|mixed>/samples:<S>
  for (const char* kind : {"continuous4", "mixed"}) {
    for (const int n : {100, 300, 1000}) {
      const std::string name = absl::StrCat("/n:", n, "/space:", kind);
      configure(benchmark::RegisterBenchmark(
          ("BM_GpSuggest" + name).c_str(), [n, kind](benchmark::State& state) {
            space::Rng rng(42);
            const PolicySetup setup =
                MakeGpSetupFor(SpaceSpec(kind), n, /*refit=*/false, rng,
                               /*concentrated=*/true);
            TimeSuggestAfterObserve(state, setup, rng);
          }));
      for (const int samples : {250, 1000, 2000}) {
        configure(benchmark::RegisterBenchmark(
            ("BM_GpSuggest" + name + absl::StrCat("/samples:", samples))
                .c_str(),
            [n, kind, samples](benchmark::State& state) {
              space::Rng rng(42);
              const PolicySetup setup =
                  MakeGpSetupFor(SpaceSpec(kind), n, /*refit=*/false, rng,
                                 /*concentrated=*/true, samples);
              TimeSuggestAfterObserve(state, setup, rng);
            }));
      }
      if (std::string(kind) == "continuous4") {
        configure(benchmark::RegisterBenchmark(
            ("BM_GpSuggest" + name + "/history:gp_loop").c_str(),
            [n, kind](benchmark::State& state) {
              space::Rng rng(42);
              const PolicySetup setup =
                  MakeGpSetupFor(SpaceSpec(kind), n, /*refit=*/false, rng,
                                 /*concentrated=*/false, /*samples=*/0,
                                 /*recorded=*/true);
              if (static_cast<int>(setup.trials.size()) != n) {
                state.SkipWithError(
                    "bench/data/continuous4_gp_loop.csv unreadable");
                return;
              }
              TimeSuggestAfterObserve(state, setup, rng);
            }));
      }
      configure(benchmark::RegisterBenchmark(
          ("BM_DeepPipeSuggest" + name).c_str(),
          [n, kind](benchmark::State& state) {
            space::Rng rng(7);
            const PolicySetup setup =
                MakeDeepPipeSetupFor(SpaceSpec(kind), n, /*refit=*/false, rng,
                                     /*concentrated=*/true);
            TimeSuggestAfterObserve(state, setup, rng);
          }));
    }
  }
  gp_prepared->Args({100, 0, 1});
  dp_prepared->Args({100, 0, 1});
  for (auto* b :
       {gp_after, dp_after, gp_prepared, gp_prepare, dp_prepared, dp_prepare}) {
    configure(b);
  }
  return true;
}();

}  // namespace
}  // namespace metaopt::policy

// As metaopt-server: the allocator keeps freed buffers (core/common/memory.h).
// Besides Google Benchmark's flags: --compute_threads=N (1 by default), the
// threads one Suggest may use, as metaopt-server's --compute-threads.
int main(int argc, char** argv) {
  metaopt::KeepFreedBuffersForReuse();
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--compute_threads=")) {
      int threads = 0;
      if (!absl::SimpleAtoi(arg, &threads) || threads < 1 || threads > 64) {
        std::fprintf(stderr, "--compute_threads: an integer in [1, 64]\n");
        return 1;
      }
      metaopt::SetComputeThreads(threads);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::AddCustomContext("compute_threads",
                              std::to_string(metaopt::ComputeThreads()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
