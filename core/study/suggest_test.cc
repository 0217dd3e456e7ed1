// Suggest over the study's kept indexes (StudyTrials): the same history gives
// the same suggestions whether the policy ran under the study lock or on a
// snapshot, and whether or not the server restarted (indexes rebuilt from
// storage); a configuration held twice stays held until both trials let go.
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "core/meta/train/grosi_testutil.h"
#include "core/meta/train/pmf_testutil.h"
#include "core/registry/artifact.h"
#include "core/registry/model_manager.h"
#include "core/space/search_space.h"
#include "core/storage/storage.h"
#include "core/study/fake_clock.h"
#include "core/study/study_engine.h"
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

// The engine's invariant for every algorithm kind: a catalogue entry is
// suggested once while a trial holds it, within one Suggest and across calls
// (MOSAIC handed out x = 0.3 twice in one Suggest of count 3).
TEST(SuggestTest, NoKindSuggestsAHeldCatalogueEntry) {
  // PMF needs a model over the catalogue: x = n / 9 for n = 0..9.
  train::testing::SyntheticPmfOptions pmf_options;
  pmf_options.entries = 10;
  auto artifact = train::testing::TrainSyntheticPmfArtifact(pmf_options);
  ASSERT_THAT(artifact, IsOk());
  ::metaopt::testing::ScopedTempDir registry_dir;
  ASSERT_THAT(registry::WriteModelVersion(registry_dir.path(), "pmf", *artifact),
              IsOk());
  // GROSI needs a model over CatalogueSpec's space and dataset features.
  auto grosi = train::testing::TwoFamilyGrosiArtifact();
  ASSERT_THAT(grosi, IsOk());
  ASSERT_THAT(registry::WriteModelVersion(registry_dir.path(), "grosi", *grosi),
              IsOk());
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
  auto network = surrogate::DeepPipeModel::Create(
      spec.search_space(), surrogate::DeepPipeArchitecture(), 5);
  ASSERT_THAT(network, IsOk());
  v1::ModelArtifact artifact;
  artifact.set_format_version(1);
  *artifact.mutable_search_space() = spec.search_space();
  network->ToArtifact(&artifact);
  ::metaopt::testing::ScopedTempDir registry_dir;
  ASSERT_THAT(registry::WriteModelVersion(registry_dir.path(), "dp", artifact),
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

}  // namespace
}  // namespace metaopt::study
