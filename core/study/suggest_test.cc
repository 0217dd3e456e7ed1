// Suggest over the study's kept indexes (StudyTrials): the same history gives
// the same suggestions whether the policy ran under the study lock or on a
// snapshot, and whether or not the server restarted (indexes rebuilt from
// storage); a configuration held twice stays held until both trials let go;
// every policy suggests the same from the few fields of StudyTrials::
// PolicyTrials as from the whole trials.
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/common/proto_time.h"
#include "core/common/status_macros.h"
#include "tests/testutil/synthetic_grosi.h"
#include "tests/testutil/synthetic_pmf.h"
#include "core/policy/policy_factory.h"
#include "core/registry/artifact.h"
#include "core/registry/model_manager.h"
#include "core/space/search_space.h"
#include "core/storage/storage.h"
#include "tests/testutil/fake_clock.h"
#include "core/study/study_engine.h"
#include "core/study/study_trials.h"
#include "core/study/suggestion.h"
#include "core/surrogate/deeppipe_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::CatalogueSpec;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::PipelineSpec;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAre;

constexpr absl::Duration kLease = absl::Minutes(60);

// One engine over its own storage (SQLite when `db_path` is set, so that
// Restart() reopens it) and a fake clock.
class Harness {
 public:
  Harness(EngineOptions options, std::string db_path = "",
          registry::ModelManager* models = nullptr)
      : options_(std::move(options)),
        db_path_(std::move(db_path)),
        models_(models) {
    options_.trial_lease = kLease;
    options_.clock = FakeClock::Source(&clock_);
    Restart();
  }

  void Restart() {
    engine_.reset();
    storage_.reset();
    auto storage = db_path_.empty() ? storage::OpenInMemoryStorage()
                                    : storage::OpenSqliteStorage(db_path_);
    ASSERT_THAT(storage, IsOk());
    storage_ = *std::move(storage);
    engine_ = std::make_unique<StudyEngine>(storage_.get(), models_, options_);
  }

  StudyEngine& engine() { return *engine_; }
  FakeClock& clock() { return clock_; }

  void Create(const v1::StudySpec& spec) {
    v1::CreateStudyRequest request;
    request.set_study_id("s");
    *request.mutable_spec() = spec;
    ASSERT_THAT(engine_->CreateStudy(request), IsOk());
  }

  // The configuration keys of the trials Suggest returned.
  std::vector<std::string> Suggest(int count, const std::string& client) {
    v1::SuggestRequest request;
    request.set_study_id("s");
    request.set_count(count);
    request.set_client_id(client);
    auto response = engine_->Suggest(request);
    EXPECT_THAT(response, IsOk());
    std::vector<std::string> keys;
    if (!response.ok()) return keys;
    for (const v1::Trial& trial : response->trials()) {
      keys.push_back(space::ConfigurationKey(trial.configuration()));
    }
    return keys;
  }

  void Observe(int64_t trial_id, double value) {
    v1::ObserveRequest request;
    request.set_study_id("s");
    request.set_trial_id(trial_id);
    request.set_value(value);
    ASSERT_THAT(engine_->Observe(request), IsOk());
  }

  void ObserveExternal(const v1::Configuration& configuration, double value) {
    v1::ObserveRequest request;
    request.set_study_id("s");
    *request.mutable_configuration() = configuration;
    request.set_value(value);
    ASSERT_THAT(engine_->Observe(request), IsOk());
  }

  v1::Study Describe() {
    v1::GetStudyRequest request;
    request.set_study_id("s");
    auto response = engine_->GetStudy(request);
    EXPECT_THAT(response, IsOk());
    return response.ok() ? response->study() : v1::Study();
  }

 private:
  EngineOptions options_;
  std::string db_path_;
  registry::ModelManager* const models_;
  FakeClock clock_;
  std::unique_ptr<storage::Storage> storage_;
  std::unique_ptr<StudyEngine> engine_;
};

// Every kind of change to a catalogue study (suggestions by two clients,
// expiry, late and external observations), with a restart of `server` in the
// middle when `restart`; returns every suggestion in order.
std::vector<std::string> RunHistory(Harness& server, bool restart) {
  const v1::StudySpec spec = CatalogueSpec(40);
  server.Create(spec);
  std::vector<std::string> out;
  auto take = [&out](std::vector<std::string> keys) {
    out.insert(out.end(), keys.begin(), keys.end());
  };
  take(server.Suggest(6, "w1"));       // trials 1-6
  server.Observe(2, 0.5);
  server.Observe(4, 0.25);
  server.clock().Advance(kLease / 2);
  take(server.Suggest(4, "w2"));       // 7-10
  server.clock().Advance(kLease / 2);  // 1, 3, 5, 6 turn STALE
  take(server.Suggest(5, "w3"));       // 11-15
  server.Observe(3, 0.75);             // late
  server.ObserveExternal(spec.candidates(39), 0.125);  // 16
  if (restart) server.Restart();
  take(server.Suggest(3, "w1"));   // 17-19
  server.clock().Advance(kLease);  // every ACTIVE trial turns STALE
  take(server.Suggest(40, "w2"));  // every entry 2, 3, 4 and 16 do not hold
  return out;
}

TEST(SuggestTest, LockedAndSnapshotPoliciesSuggestTheSame) {
  EngineOptions locked;
  locked.max_locked_policy_cost = absl::InfiniteDuration();
  EngineOptions snapshot;
  snapshot.max_locked_policy_cost = absl::ZeroDuration();
  Harness a(locked), b(snapshot);
  const std::vector<std::string> history = RunHistory(a, false);
  EXPECT_EQ(history, RunHistory(b, false));
  EXPECT_GE(history.size(), 6u + 4 + 5 + 3 + 40 - 4);
}

// The indexes rebuilt from storage after a restart equal the ones kept
// incrementally: the suggestions after it are the same.
TEST(SuggestTest, ARestartChangesNoSuggestion) {
  ::metaopt::testing::ScopedTempDir dir;
  Harness restarted({}, dir.File("metaopt.db"));
  Harness running({});
  EXPECT_EQ(RunHistory(restarted, true), RunHistory(running, false));
  EXPECT_EQ(restarted.Describe().state(), v1::STUDY_STATE_EXHAUSTED);
}

// Continuous spaces too: random search, and the GP's initial design.
TEST(SuggestTest, ARestartChangesNoSuggestionOfAContinuousSpace) {
  for (v1::AlgorithmKind kind :
       {v1::ALGORITHM_KIND_RANDOM, v1::ALGORITHM_KIND_GP}) {
    SCOPED_TRACE(v1::AlgorithmKind_Name(kind));
    ::metaopt::testing::ScopedTempDir dir;
    Harness restarted({}, dir.File("metaopt.db"));
    Harness running({});
    std::vector<std::string> with_restart, without_restart;
    for (Harness* server : {&restarted, &running}) {
      server->Create(PipelineSpec(kind));
      std::vector<std::string> first = server->Suggest(3, "w1");
      server->Observe(1, 0.5);
      server->clock().Advance(kLease);
      if (server == &restarted) server->Restart();
      std::vector<std::string> then = server->Suggest(2, "w2");
      first.insert(first.end(), then.begin(), then.end());
      (server == &restarted ? with_restart : without_restart) = first;
    }
    EXPECT_EQ(with_restart, without_restart);
  }
}

// A stale trial's configuration is suggested again; the stale trial's late
// result then holds it as well, so it stays held when the new trial expires.
TEST(SuggestTest, AConfigurationHeldTwiceStaysHeldUntilBothLetGo) {
  Harness server({});
  server.Create(CatalogueSpec(2));
  const std::vector<std::string> first = server.Suggest(2, "w1");  // 1, 2
  ASSERT_THAT(first, SizeIs(2));
  server.clock().Advance(kLease);
  EXPECT_EQ(server.Describe().state(), v1::STUDY_STATE_ACTIVE);
  const std::vector<std::string> again = server.Suggest(2, "w2");  // 3, 4
  EXPECT_THAT(again, UnorderedElementsAre(first[0], first[1]));
  EXPECT_EQ(server.Describe().state(), v1::STUDY_STATE_EXHAUSTED);
  server.Observe(1, 0.5);  // late: trials 1 and 3 or 4 hold one entry
  server.clock().Advance(kLease);  // 3 and 4 turn STALE
  EXPECT_EQ(server.Describe().state(), v1::STUDY_STATE_ACTIVE);
  const std::vector<std::string> last = server.Suggest(2, "w3");
  EXPECT_THAT(last, UnorderedElementsAre(first[1]));
  EXPECT_EQ(server.Describe().state(), v1::STUDY_STATE_EXHAUSTED);
  EXPECT_THAT(server.Suggest(1, "w4"), IsEmpty());
}

// Writes to the registry at `dir` model `name`: a DeepPipe network over
// `space` with its initial (untrained) weights (an FSBO model with FSBO's
// architecture).
absl::Status WriteUntrainedDeepPipe(
    const std::string& dir, const std::string& name,
    const v1::SearchSpace& space,
    const surrogate::DeepPipeArchitecture& architecture =
        surrogate::DeepPipeArchitecture()) {
  auto network = surrogate::DeepPipeModel::Create(space, architecture, 5);
  if (!network.ok()) return network.status();
  v1::ModelArtifact artifact;
  artifact.set_format_version(1);
  *artifact.mutable_search_space() = space;
  network->ToArtifact(&artifact);
  return registry::WriteModelVersion(dir, name, artifact).status();
}

// Writes to the registry at `dir` the models of the PMF, GROSI and FSBO
// studies of these tests: "pmf", trained on a synthetic catalogue of
// `pmf_entries` points (x = n / (pmf_entries - 1)), "grosi", over
// CatalogueSpec's space and dataset features, and "fsbo" over that space.
// Returns the PMF artifact (its space and catalogue make the PMF study's).
absl::StatusOr<v1::ModelArtifact> WriteKindModels(const std::string& dir,
                                                  int pmf_entries) {
  train::testing::SyntheticPmfOptions pmf_options;
  pmf_options.entries = pmf_entries;
  auto pmf = train::testing::TrainSyntheticPmfArtifact(pmf_options);
  if (!pmf.ok()) return pmf.status();
  METAOPT_RETURN_IF_ERROR(
      registry::WriteModelVersion(dir, "pmf", *pmf).status());
  auto grosi = train::testing::TwoFamilyGrosiArtifact();
  if (!grosi.ok()) return grosi.status();
  METAOPT_RETURN_IF_ERROR(
      registry::WriteModelVersion(dir, "grosi", *grosi).status());
  // FSBO studies: an untrained FSBO network over CatalogueSpec's space.
  METAOPT_RETURN_IF_ERROR(
      WriteUntrainedDeepPipe(dir, "fsbo", CatalogueSpec(1).search_space(),
                             surrogate::FsboArchitecture()));
  return pmf;
}

// The engine's invariant for every algorithm kind: a catalogue entry is
// suggested once while a trial holds it, within one Suggest and across calls
// (MOSAIC handed out x = 0.3 twice in one Suggest of count 3).
TEST(SuggestTest, NoKindSuggestsAHeldCatalogueEntry) {
  // PMF needs a model over the catalogue: x = n / 9 for n = 0..9.
  ::metaopt::testing::ScopedTempDir registry_dir;
  auto artifact = WriteKindModels(registry_dir.path(), 10);
  ASSERT_THAT(artifact, IsOk());
  auto models = registry::ModelManager::Create({registry_dir.path()});
  ASSERT_THAT(models, IsOk());
  const google::protobuf::EnumDescriptor* kinds =
      v1::AlgorithmKind_descriptor();
  for (int k = 0; k < kinds->value_count(); ++k) {
    const auto kind = static_cast<v1::AlgorithmKind>(kinds->value(k)->number());
    if (kind == v1::ALGORITHM_KIND_UNSPECIFIED) continue;
    SCOPED_TRACE(v1::AlgorithmKind_Name(kind));
    auto spec_of = [&](int size) {
      v1::StudySpec spec = CatalogueSpec(size);
      spec.mutable_algorithm()->set_kind(kind);
      if (kind == v1::ALGORITHM_KIND_PMF) {
        *spec.mutable_search_space() = artifact->search_space();
        spec.clear_candidates();
        for (int i = 0; i < size; ++i) {
          *spec.add_candidates() = artifact->catalogue(i);
        }
      }
      if (kind == v1::ALGORITHM_KIND_GROSI) {
        (*spec.mutable_dataset_features())["f"] = 1.0;
      }
      return spec;
    };
    for (const int size : {3, 10}) {
      SCOPED_TRACE(size);
      Harness server({}, "", models->get());
      server.Create(spec_of(size));
      const std::vector<std::string> all = server.Suggest(size, "w1");
      EXPECT_THAT(all, SizeIs(size));
      EXPECT_THAT(std::set<std::string>(all.begin(), all.end()), SizeIs(size));
      EXPECT_THAT(server.Suggest(size, "w2"), IsEmpty());
    }
    // Across calls, with observations and a lease ending in between.
    Harness server({}, "", models->get());
    server.Create(spec_of(10));
    std::vector<std::string> keys = server.Suggest(3, "w1");  // 1-3
    server.Observe(1, 0.5);
    server.Observe(2, 0.25);
    for (const std::string& key : server.Suggest(3, "w2")) keys.push_back(key);
    server.clock().Advance(kLease);  // 3-6 turn STALE: their entries are free
    keys.erase(keys.begin() + 2, keys.end());
    for (const std::string& key : server.Suggest(10, "w3")) keys.push_back(key);
    EXPECT_THAT(keys, SizeIs(10));
    EXPECT_THAT(std::set<std::string>(keys.begin(), keys.end()), SizeIs(10));
  }
}

// Counts the writes that reach the storage it wraps.
class CountingStorage : public storage::Storage {
 public:
  explicit CountingStorage(storage::Storage* base) : base_(base) {}
  int writes() const { return writes_; }

  using storage::Storage::CreateStudy;
  absl::Status CreateStudy(const v1::Study& study,
                           int64_t max_studies_of_owner) override {
    ++writes_;
    return base_->CreateStudy(study, max_studies_of_owner);
  }
  absl::StatusOr<v1::Study> GetStudy(const storage::StudyKey& key) override {
    return base_->GetStudy(key);
  }
  absl::StatusOr<std::vector<v1::Study>> ListStudies(
      std::string_view owner, std::string_view after, int limit) override {
    return base_->ListStudies(owner, after, limit);
  }
  absl::StatusOr<int64_t> CountStudies(std::string_view owner) override {
    return base_->CountStudies(owner);
  }
  absl::Status DeleteStudy(const storage::StudyKey& key) override {
    ++writes_;
    return base_->DeleteStudy(key);
  }
  absl::Status WriteStudy(const storage::StudyKey& key,
                          const storage::StudyWrite& write) override {
    ++writes_;
    return base_->WriteStudy(key, write);
  }
  absl::StatusOr<int64_t> GetStudyVersion(
      const storage::StudyKey& key) override {
    return base_->GetStudyVersion(key);
  }
  absl::StatusOr<Changes> LoadChangesSince(const storage::StudyKey& key,
                                           int64_t version) override {
    return base_->LoadChangesSince(key, version);
  }
  absl::StatusOr<std::vector<v1::Trial>> LoadTrials(
      const storage::StudyKey& key) override {
    return base_->LoadTrials(key);
  }
  absl::StatusOr<std::optional<std::string>> GetPolicyState(
      const storage::StudyKey& key) override {
    return base_->GetPolicyState(key);
  }

 private:
  storage::Storage* const base_;
  int writes_ = 0;  // the engine under test calls from one thread
};

// Lease expiry, the client's lease renewal and the new trials of a Suggest
// reach storage in one write, and are all there after it.
TEST(SuggestTest, ASuggestStoresAllItsChangesInOneWrite) {
  for (const absl::Duration locked_cost :
       {absl::InfiniteDuration(), absl::ZeroDuration()}) {
    auto base = storage::OpenInMemoryStorage();
    ASSERT_THAT(base, IsOk());
    CountingStorage storage(base->get());
    FakeClock clock;
    EngineOptions options;
    options.trial_lease = kLease;
    options.clock = FakeClock::Source(&clock);
    options.max_locked_policy_cost = locked_cost;
    StudyEngine engine(&storage, nullptr, options);
    v1::CreateStudyRequest create;
    create.set_study_id("s");
    *create.mutable_spec() = CatalogueSpec(10);
    ASSERT_THAT(engine.CreateStudy(create), IsOk());
    v1::SuggestRequest suggest;
    suggest.set_study_id("s");
    suggest.set_count(2);
    suggest.set_client_id("w1");
    ASSERT_THAT(engine.Suggest(suggest), IsOk());  // 1, 2
    clock.Advance(kLease / 2);
    suggest.set_count(1);
    suggest.set_client_id("w2");
    ASSERT_THAT(engine.Suggest(suggest), IsOk());  // 3
    clock.Advance(kLease / 2);                     // 1 and 2 expire

    const int before = storage.writes();
    suggest.set_count(3);
    auto response = engine.Suggest(suggest);  // 3 renewed, 4 and 5 new
    ASSERT_THAT(response, IsOk());
    EXPECT_EQ(storage.writes(), before + 1);
    ASSERT_THAT(response->trials(), SizeIs(3));
    auto stored = (*base)->LoadTrials({"", "s"});
    ASSERT_THAT(stored, IsOk());
    ASSERT_THAT(*stored, SizeIs(5));
    EXPECT_EQ((*stored)[0].state(), v1::TRIAL_STATE_STALE);
    EXPECT_EQ((*stored)[1].state(), v1::TRIAL_STATE_STALE);
    for (int i = 0; i < 3; ++i) {
      const v1::Trial& trial = (*stored)[response->trials(i).id() - 1];
      EXPECT_EQ(trial.state(), v1::TRIAL_STATE_ACTIVE);
      EXPECT_EQ(trial.lease_expire_time().seconds(),
                absl::ToUnixSeconds(clock.Peek() + kLease));
      EXPECT_EQ(trial.lease_expire_time().seconds(),
                response->trials(i).lease_expire_time().seconds());
    }
  }
}

// A study bound to a meta-learned DeepPipe model fine-tunes its kernel on a
// schedule and keeps the last fit in memory only: a server restarted between
// Suggests (even between scheduled fine-tunes, where the stayed-loaded study
// reuses its kept fit) suggests exactly what a server that stayed up does,
// with the prepares of the background fit or without them.
TEST(SuggestTest, DeepPipeScheduledFineTunesSurviveRestarts) {
  const v1::StudySpec spec = [] {
    v1::StudySpec s = CatalogueSpec(300);
    s.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_DEEPPIPE);
    s.mutable_algorithm()->set_model("dp");
    return s;
  }();
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_THAT(space, IsOk());
  ::metaopt::testing::ScopedTempDir registry_dir;
  ASSERT_THAT(
      WriteUntrainedDeepPipe(registry_dir.path(), "dp", spec.search_space()),
      IsOk());
  auto models = registry::ModelManager::Create({registry_dir.path()});
  ASSERT_THAT(models, IsOk());
  ::metaopt::testing::ScopedTempDir db_dir;
  EngineOptions inline_fits;
  inline_fits.prepare_threads = 0;
  Harness restarted(inline_fits, db_dir.File("metaopt.db"), models->get());
  Harness stayed({}, "", models->get());
  restarted.Create(spec);
  stayed.Create(spec);
  // The default schedule fine-tunes at every count up to 64, then at 70:
  // restarts from round 62 on fall between fine-tunes too.
  for (int round = 0; round < 74; ++round) {
    if (round >= 62) restarted.Restart();
    const std::vector<std::string> got = restarted.Suggest(1, "w");
    const std::vector<std::string> want = stayed.Suggest(1, "w");
    ASSERT_EQ(got, want) << "round " << round;
    ASSERT_EQ(got.size(), 1u);
    const double x = static_cast<double>(round) / 73.0;
    restarted.Observe(round + 1, (x - 0.3) * (x - 0.3) + std::sin(9 * x));
    stayed.Observe(round + 1, (x - 0.3) * (x - 0.3) + std::sin(9 * x));
  }
}

// The configuration keys of `configurations`.
std::vector<std::string> Keys(
    const std::vector<v1::Configuration>& configurations) {
  std::vector<std::string> keys;
  for (const v1::Configuration& c : configurations) {
    keys.push_back(space::ConfigurationKey(c));
  }
  return keys;
}

// Replays a history on `spec`'s study as the engine keeps it (StudyTrials,
// every field of a trial set as the engine sets it), with a restart (the
// trials loaded again from their stored form) after round 5. In each round
// the policy suggests 2 configurations from the whole trials (all(), what
// policies read before PolicyTrials) and from PolicyTrials, also through a
// fit prepared on the latter when the policy prepares fits; every answer,
// random stream and policy update must be the same. Of the trials handed out
// in a round the first is observed with a curve, the second fails in odd
// rounds, expires in round 2 and stays ACTIVE (pending) otherwise.
void ExpectTheSameSuggestionsFromPolicyTrials(
    const v1::StudySpec& spec,
    std::shared_ptr<const registry::LoadedModel> model = nullptr) {
  auto created = policy::CreatePolicy(spec, std::nullopt, model);
  ASSERT_THAT(created, IsOk());
  std::shared_ptr<const policy::Policy> policy = *created;
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_THAT(space, IsOk());
  std::vector<std::string> candidate_keys;
  for (const v1::Configuration& c : spec.candidates()) {
    candidate_keys.push_back(space::ConfigurationKey(c));
  }
  const absl::Time start = absl::FromUnixSeconds(1800000000);
  StudyTrials trials;
  int model_based = 0;
  for (int round = 0; round < 9; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    if (round == 6) {
      std::vector<v1::Trial> stored;
      for (int64_t id = 1; id <= trials.size(); ++id) {
        stored.push_back(trials.Get(id));
      }
      auto loaded = StudyTrials::Load(std::move(stored), "s");
      ASSERT_THAT(loaded, IsOk());
      trials = *std::move(loaded);
    }
    const std::vector<v1::Trial> own = trials.PolicyTrials();
    const std::vector<v1::Trial>& whole = trials.all();
    ASSERT_EQ(own.size(), whole.size());
    const policy::StudyView whole_view{&spec, &*space, &whole, &candidate_keys,
                                       &trials.held_keys()};
    const policy::StudyView own_view{&spec, &*space, &own, &candidate_keys,
                                     &trials.held_keys()};
    space::Rng whole_rng = SuggestRng(spec, trials.size());
    space::Rng own_rng = whole_rng;
    const space::Rng start_rng = whole_rng;
    auto want = policy->Suggest(whole_view, 2, whole_rng);
    auto got = policy->Suggest(own_view, 2, own_rng);
    ASSERT_THAT(want, IsOk());
    ASSERT_THAT(got, IsOk());
    const std::vector<std::string> keys = Keys(want->configurations);
    ASSERT_THAT(keys, SizeIs(2));
    EXPECT_EQ(Keys(got->configurations), keys);
    EXPECT_EQ(got->source, want->source);
    EXPECT_TRUE(own_rng == whole_rng);
    ASSERT_EQ(got->update.has_value(), want->update.has_value());
    if (want->update.has_value()) {
      EXPECT_EQ(got->update->state, want->update->state);
    }
    if (policy->PreparesFits()) {
      auto fit = policy->PrepareFit(own_view, start_rng);
      ASSERT_THAT(fit, IsOk());
      space::Rng prepared_rng = start_rng;
      auto prepared = policy->SuggestPrepared(own_view, 2, prepared_rng, *fit);
      ASSERT_THAT(prepared, IsOk());
      EXPECT_EQ(Keys(prepared->configurations), keys);
      EXPECT_EQ(prepared->used_prepared_fit, *fit != nullptr);
    }
    for (const char* step : {"/ei", "+ei", "mcts", "refit-top"}) {
      if (want->source.find(step) != std::string::npos) {
        ++model_based;
        break;
      }
    }
    if (want->update.has_value()) policy = want->update->policy;

    const absl::Time now = start + absl::Minutes(round);
    std::vector<v1::Trial> handed_out;
    for (size_t i = 0; i < want->configurations.size(); ++i) {
      v1::Trial trial;
      trial.set_id(trials.size() + 1);
      *trial.mutable_configuration() = want->configurations[i];
      trial.set_state(v1::TRIAL_STATE_ACTIVE);
      trial.set_client_id("worker");
      *trial.mutable_create_time() = ToProtoTimestamp(now);
      *trial.mutable_lease_expire_time() =
          ToProtoTimestamp(now + absl::Hours(1));
      (*trial.mutable_metadata())["policy"] = want->source;
      trial.set_study_incarnation(7);
      trials.Put(trial);
      handed_out.push_back(std::move(trial));
    }
    v1::Trial& observed = handed_out[0];
    for (int step = 1; step <= 3; ++step) {
      v1::IntermediateValue* v = observed.add_intermediate_values();
      v->set_step(step);
      v->set_value(1.0 / step);
      (*v->mutable_metrics())["loss"] = 2.0 / step;
      *v->mutable_report_time() = ToProtoTimestamp(now + absl::Seconds(step));
    }
    observed.set_state(v1::TRIAL_STATE_COMPLETED);
    // Distinct values with no order in the ids.
    observed.set_value(0.1 * static_cast<double>((observed.id() * 7) % 11));
    (*observed.mutable_metrics())["accuracy"] = observed.value();
    *observed.mutable_complete_time() =
        ToProtoTimestamp(now + absl::Seconds(9));
    observed.clear_lease_expire_time();
    trials.Put(observed);
    v1::Trial& second = handed_out[1];
    if (round % 2 == 1) {
      second.set_state(v1::TRIAL_STATE_FAILED);
      second.set_failure_reason("out of memory");
      trials.Put(second);
    } else if (round == 2) {
      second.set_state(v1::TRIAL_STATE_STALE);
      trials.Put(second);
    }
  }
  EXPECT_GE(model_based, 3) << "too few rounds under the surrogate";
}

TEST(SuggestTest, EveryPolicySuggestsTheSameFromPolicyTrials) {
  auto with_kind = [](v1::StudySpec spec, v1::AlgorithmKind kind) {
    spec.mutable_algorithm()->set_kind(kind);
    spec.mutable_algorithm()->set_initial_trials(3);
    return spec;
  };
  for (const v1::AlgorithmKind kind :
       {v1::ALGORITHM_KIND_GP, v1::ALGORITHM_KIND_MOSAIC}) {
    SCOPED_TRACE(v1::AlgorithmKind_Name(kind));
    ExpectTheSameSuggestionsFromPolicyTrials(with_kind(PipelineSpec(), kind));
    ExpectTheSameSuggestionsFromPolicyTrials(
        with_kind(CatalogueSpec(40), kind));
  }
  // DeepPipe (an untrained network: what matters is that both lists give it
  // the same observations), PMF and GROSI need models.
  ::metaopt::testing::ScopedTempDir registry_dir;
  for (const v1::StudySpec& spec : {PipelineSpec(), CatalogueSpec(40)}) {
    ASSERT_THAT(WriteUntrainedDeepPipe(
                    registry_dir.path(),
                    spec.candidates().empty() ? "dp-space" : "dp-cat",
                    spec.search_space()),
                IsOk());
  }
  auto pmf = WriteKindModels(registry_dir.path(), 40);
  ASSERT_THAT(pmf, IsOk());
  auto models = registry::ModelManager::Create({registry_dir.path()});
  ASSERT_THAT(models, IsOk());
  auto model = [&](const std::string& name) {
    std::shared_ptr<const registry::LoadedModel> loaded = (*models)->Get(name);
    EXPECT_NE(loaded, nullptr) << name;
    return loaded;
  };
  {
    SCOPED_TRACE("DEEPPIPE");
    ExpectTheSameSuggestionsFromPolicyTrials(
        with_kind(PipelineSpec(), v1::ALGORITHM_KIND_DEEPPIPE),
        model("dp-space"));
    ExpectTheSameSuggestionsFromPolicyTrials(
        with_kind(CatalogueSpec(40), v1::ALGORITHM_KIND_DEEPPIPE),
        model("dp-cat"));
  }
  {
    SCOPED_TRACE("PMF");
    v1::StudySpec spec = with_kind(CatalogueSpec(40), v1::ALGORITHM_KIND_PMF);
    *spec.mutable_search_space() = pmf->search_space();
    spec.clear_candidates();
    for (const v1::Configuration& c : pmf->catalogue())
      *spec.add_candidates() = c;
    ExpectTheSameSuggestionsFromPolicyTrials(spec, model("pmf"));
  }
  {
    SCOPED_TRACE("GROSI");
    v1::StudySpec spec = with_kind(CatalogueSpec(40), v1::ALGORITHM_KIND_GROSI);
    (*spec.mutable_dataset_features())["f"] = 1.0;
    ExpectTheSameSuggestionsFromPolicyTrials(spec, model("grosi"));
  }
  {
    SCOPED_TRACE("FSBO");
    ExpectTheSameSuggestionsFromPolicyTrials(
        with_kind(CatalogueSpec(40), v1::ALGORITHM_KIND_FSBO), model("fsbo"));
  }
}

}  // namespace
}  // namespace metaopt::study
