// Resident memory of the study engine per loaded study, and with many idle
// studies (the memory targets in docs/performance.md). Fills `--studies` RANDOM studies of
// `--trials` observed trials each through a StudyEngine over a SQLite database
// (put it on tmpfs, e.g. /dev/shm, so that filling is not bound by fsync),
// then starts a fresh engine over the same database (a restart: nothing
// loaded), reads every study once (GetStudy) and reports the resident size
// before and after, with freed heap returned to the system each time.
//
//   build/bench/study_memory --db /dev/shm/mem.db --studies 100 --trials 1000
//   build/bench/study_memory --db /dev/shm/idle.db --studies 10000 \
//       --trials 100 --max-loaded-studies 4096
//   build/bench/study_memory --db /dev/shm/gp.db --studies 20 --trials 1000 \
//       --algorithm gp --suggest --max-prepared-fits 0
//
// The space is the load generator's (four floats, one stage), the study kind
// RANDOM, GP or DEEPPIPE; a study's memory is mostly its trials and their
// indexes. A model-based study's trials are its random initial design
// (initial_trials = --trials), so that filling costs no fit. DEEPPIPE studies
// are bound to an untrained DeepPipe network over that space (its initial
// weights: what is measured is the study, not the model's quality), written
// to a registry in "<db>.models". With --suggest every study then gets one
// Suggest (a GP one fits the surrogate on all its observations: a study in
// active use by a model-based policy) and the resident size is read again;
// the fit that Suggest keeps for the next one (EngineOptions::
// max_prepared_fits, 64 studies by default) counts too unless that is 0.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "core/common/memory.h"
#include "core/registry/artifact.h"
#include "core/registry/model_manager.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "core/surrogate/deeppipe_model.h"
#include "tools/loadgen/load_generator.h"

namespace metaopt::study {
namespace {

void Check(const absl::Status& status, const std::string& what) {
  if (!status.ok()) {
    std::fprintf(stderr, "study_memory: %s: %s\n", what.c_str(),
                 status.ToString().c_str());
    std::exit(1);
  }
}

double ResidentMiB() {
  ReleaseFreedMemory();
  return static_cast<double>(ResidentBytes()) / (1024.0 * 1024.0);
}

constexpr char kDeepPipeModel[] = "deeppipe";

// The spec of every study: the loadgen's space, `algorithm`, and for a
// model-based one an initial design of `trials` random trials (DEEPPIPE bound
// to kDeepPipeModel).
v1::StudySpec Spec(v1::AlgorithmKind algorithm, int trials) {
  loadgen::LoadOptions load;
  v1::StudySpec spec = loadgen::MakeStudySpec(load, 0);
  spec.mutable_algorithm()->set_kind(algorithm);
  if (algorithm != v1::ALGORITHM_KIND_RANDOM) {
    spec.mutable_algorithm()->set_initial_trials(trials);
  }
  if (algorithm == v1::ALGORITHM_KIND_DEEPPIPE) {
    spec.mutable_algorithm()->set_model(kDeepPipeModel);
  }
  return spec;
}

// A registry in `dir` holding kDeepPipeModel: an untrained DeepPipe network
// over the loadgen's space.
std::unique_ptr<registry::ModelManager> DeepPipeRegistry(
    const std::string& dir) {
  const v1::SearchSpace space =
      loadgen::MakeStudySpec(loadgen::LoadOptions(), 0).search_space();
  auto network = surrogate::DeepPipeModel::Create(
      space, surrogate::DeepPipeArchitecture(), 1);
  Check(network.status(), "DeepPipe network");
  v1::ModelArtifact artifact;
  artifact.set_format_version(1);
  *artifact.mutable_search_space() = space;
  network->ToArtifact(&artifact);
  Check(registry::WriteModelVersion(dir, kDeepPipeModel, artifact).status(),
        "writing the DeepPipe model to " + dir);
  auto models = registry::ModelManager::Create({dir});
  Check(models.status(), "opening the registry " + dir);
  return *std::move(models);
}

// Creates study `id` and observes `trials` trials, suggested 100 at a time.
void Fill(StudyEngine& engine, const std::string& id, int trials,
          v1::AlgorithmKind algorithm) {
  v1::CreateStudyRequest create;
  create.set_study_id(id);
  *create.mutable_spec() = Spec(algorithm, trials);
  Check(engine.CreateStudy(create).status(), "CreateStudy " + id);
  for (int done = 0; done < trials;) {
    v1::SuggestRequest suggest;
    suggest.set_study_id(id);
    suggest.set_count(std::min(100, trials - done));
    auto suggested = engine.Suggest(suggest);
    Check(suggested.status(), "Suggest " + id);
    for (const v1::Trial& trial : suggested->trials()) {
      v1::ObserveRequest observe;
      observe.set_study_id(id);
      observe.set_trial_id(trial.id());
      observe.set_value(0.001 * static_cast<double>(trial.id()));
      Check(engine.Observe(observe).status(), "Observe " + id);
      ++done;
    }
  }
}

int Run(int argc, char** argv) {
  std::string db;
  int studies = 100;
  int trials = 1000;
  int max_loaded = 0;
  std::string algorithm_name = "random";
  bool suggest = false;
  int max_prepared_fits = EngineOptions().max_prepared_fits;
  CLI::App app{"Resident memory of the study engine per loaded study"};
  app.add_option("--db", db, "SQLite database to fill (should not exist)")
      ->required();
  app.add_option("--studies", studies, "RANDOM studies to fill")
      ->check(CLI::PositiveNumber);
  app.add_option("--trials", trials, "observed trials per study")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-loaded-studies", max_loaded,
                 "the engine's limit of loaded studies (0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--algorithm", algorithm_name, "the studies' kind")
      ->check(CLI::IsMember({"random", "gp", "deeppipe"}));
  app.add_flag("--suggest", suggest,
               "after reading every study, Suggest once on each");
  app.add_option("--max-prepared-fits", max_prepared_fits,
                 "the engine's max_prepared_fits")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  const v1::AlgorithmKind algorithm =
      algorithm_name == "gp"         ? v1::ALGORITHM_KIND_GP
      : algorithm_name == "deeppipe" ? v1::ALGORITHM_KIND_DEEPPIPE
                                     : v1::ALGORITHM_KIND_RANDOM;
  std::unique_ptr<registry::ModelManager> models;
  if (algorithm == v1::ALGORITHM_KIND_DEEPPIPE) {
    models = DeepPipeRegistry(db + ".models");
  }

  auto storage = storage::OpenSqliteStorage(db);
  Check(storage.status(), "opening " + db);
  {
    EngineOptions filling;
    filling.prepare_threads = 0;  // the design needs no fit
    StudyEngine filler(storage->get(), models.get(), filling);
    const absl::Time start = absl::Now();
    for (int i = 0; i < studies; ++i) {
      Fill(filler, absl::StrCat("s", i), trials, algorithm);
      if ((i + 1) % std::max(1, studies / 20) == 0 || i + 1 == studies) {
        std::fprintf(stderr, "\rfilled %d/%d studies (%.0f s)", i + 1, studies,
                     absl::ToDoubleSeconds(absl::Now() - start));
      }
    }
    std::fprintf(stderr, "\n");
  }
  const double before = ResidentMiB();
  EngineOptions options;
  options.max_loaded_studies = max_loaded;
  // Suggests fit inline, so that what stays is what a Suggest keeps.
  options.prepare_threads = 0;
  options.max_prepared_fits = max_prepared_fits;
  StudyEngine engine(storage->get(), models.get(), options);
  const double empty = ResidentMiB();
  for (int i = 0; i < studies; ++i) {
    v1::GetStudyRequest get;
    get.set_study_id(absl::StrCat("s", i));
    Check(engine.GetStudy(get).status(), "GetStudy");
  }
  const double after = ResidentMiB();
  const StudyEngine::LoadedStats stats = engine.Stats();
  std::printf(
      "| studies | trials each | max loaded | loaded | RSS before (MiB) | RSS "
      "after reading all (MiB) | per loaded study (KiB) |\n"
      "|---|---|---|---|---|---|---|\n");
  std::printf("| %d | %d | %d | %lld | %.1f | %.1f | %.0f |\n", studies, trials,
              max_loaded, static_cast<long long>(stats.studies), empty, after,
              stats.studies > 0 ? (after - empty) * 1024.0 /
                                      static_cast<double>(stats.studies)
                                : 0.0);
  if (suggest) {
    const absl::Time start = absl::Now();
    for (int i = 0; i < studies; ++i) {
      v1::SuggestRequest request;
      request.set_study_id(absl::StrCat("s", i));
      Check(engine.Suggest(request).status(), "Suggest");
    }
    const double active = ResidentMiB();
    std::printf(
        "after one Suggest on each (%.1f s): RSS %.1f MiB, %.0f KiB per "
        "loaded study\n",
        absl::ToDoubleSeconds(absl::Now() - start), active,
        stats.studies > 0
            ? (active - empty) * 1024.0 / static_cast<double>(stats.studies)
            : 0.0);
  }
  std::fprintf(stderr, "RSS after filling (filler engine freed): %.1f MiB\n",
               before);
  // What one trial costs as a message (the largest part of a loaded study).
  v1::ListTrialsRequest list;
  list.set_study_id("s0");
  list.set_page_size(100);
  auto listed = engine.ListTrials(list);
  Check(listed.status(), "ListTrials");
  int64_t used = 0, serialized = 0;
  for (const v1::Trial& trial : listed->trials()) {
    used += static_cast<int64_t>(trial.SpaceUsedLong());
    serialized += static_cast<int64_t>(trial.ByteSizeLong());
  }
  const double count = std::max(1, listed->trials_size());
  std::fprintf(stderr,
               "a trial of s0: %.0f bytes as a message (SpaceUsedLong), %.0f "
               "serialized\n",
               static_cast<double>(used) / count,
               static_cast<double>(serialized) / count);
  return 0;
}

}  // namespace
}  // namespace metaopt::study

int main(int argc, char** argv) { return metaopt::study::Run(argc, argv); }
