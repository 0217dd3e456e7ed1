#include "core/registry/model_manager.h"

#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "core/registry/artifact.h"
#include "tests/testutil/test_artifacts.h"
#include "core/surrogate/deeppipe_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::registry {

namespace {

namespace fs = std::filesystem;
using ::metaopt::registry::testing::TestArtifact;
using ::metaopt::registry::testing::TestSearchSpace;
using ::metaopt::registry::testing::WriteFile;
using ::metaopt::registry::testing::WriteRawVersion;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::IsNull;
using ::testing::NotNull;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The marker TestArtifact(marker) put in the tensor values.
double Marker(const LoadedModel& model) {
  return model.artifact.tensors(0).values(0);
}

int CountOccurrences(const std::string& text, const std::string& pattern) {
  int count = 0;
  for (size_t pos = text.find(pattern); pos != std::string::npos;
       pos = text.find(pattern, pos + 1)) {
    ++count;
  }
  return count;
}

// A manager without a poll thread over a fresh registry directory.
class ModelManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ModelManager::Options options;
    options.base_path = registry_.path();
    auto manager = ModelManager::Create(options);
    ASSERT_THAT(manager, IsOk());
    manager_ = *std::move(manager);
  }

  int64_t Publish(const std::string& name, double marker) {
    absl::StatusOr<int64_t> version =
        WriteModelVersion(registry_.path(), name, TestArtifact(marker));
    EXPECT_THAT(version, IsOk());
    return version.value_or(-1);
  }

  // Makes version `version` of `name` fail its checksum (same size, one byte
  // changed).
  void Corrupt(const std::string& name, int64_t version) {
    const std::string path =
        registry_.File(name + "/" + std::to_string(version) + "/model.pb");
    std::string bytes = ReadFile(path);
    bytes[bytes.size() / 2] ^= 0x01;
    ASSERT_TRUE(WriteFile(path, bytes));
  }

  ScopedTempDir registry_;
  std::unique_ptr<ModelManager> manager_;
};

// ---- Create ----

TEST(ModelManagerCreateTest, RejectsEmptyBasePathAndNegativeInterval) {
  EXPECT_THAT(ModelManager::Create({}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("base_path is empty")));
  ScopedTempDir registry;
  EXPECT_THAT(
      ModelManager::Create({registry.path(), absl::Seconds(-1)}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("negative")));
}

TEST(ModelManagerCreateTest, LoadsExistingModelsAtCreation) {
  ScopedTempDir registry;
  ASSERT_THAT(WriteModelVersion(registry.path(), "m", TestArtifact(1)), IsOk());
  ASSERT_THAT(WriteModelVersion(registry.path(), "m", TestArtifact(2)), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(auto manager,
                               ModelManager::Create({registry.path()}));
  ASSERT_THAT(manager->Get("m"), NotNull());
  EXPECT_EQ(manager->Get("m")->version, 2);
}

TEST(ModelManagerCreateTest, MissingBasePathServesNothingUntilItAppears) {
  ScopedTempDir temp;
  const std::string base = temp.File("registry");
  METAOPT_ASSERT_OK_AND_ASSIGN(auto manager, ModelManager::Create({base}));
  EXPECT_THAT(manager->List(), IsEmpty());
  EXPECT_THAT(manager->PollOnce(), StatusIs(absl::StatusCode::kNotFound,
                                            HasSubstr("does not exist")));
  ASSERT_THAT(WriteModelVersion(base, "m", TestArtifact()), IsOk());
  EXPECT_THAT(manager->PollOnce(), IsOk());
  EXPECT_THAT(manager->Get("m"), NotNull());
}

// ---- Polling ----

TEST_F(ModelManagerTest, ServesNewestVersionOfEachModelListedByName) {
  Publish("zeta", 1);
  Publish("alpha", 1);
  Publish("alpha", 2);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  const auto models = manager_->List();
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0]->reference(), "alpha@2");
  EXPECT_EQ(models[1]->reference(), "zeta@1");
  EXPECT_THAT(manager_->Get("missing"), IsNull());
}

TEST_F(ModelManagerTest, NewVersionIsSwappedInWhileOldSnapshotStaysValid) {
  Publish("m", 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  std::shared_ptr<const LoadedModel> old = manager_->Get("m");
  ASSERT_THAT(old, NotNull());

  Publish("m", 2);
  EXPECT_EQ(manager_->Get("m"), old);  // nothing changes before the poll
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  std::shared_ptr<const LoadedModel> current = manager_->Get("m");
  ASSERT_THAT(current, NotNull());
  EXPECT_EQ(current->version, 2);
  EXPECT_EQ(Marker(*current), 2);
  // The reader's snapshot is untouched.
  EXPECT_EQ(old->version, 1);
  EXPECT_EQ(Marker(*old), 1);
  EXPECT_EQ(old->artifact.tensors(0).values_size(), 6);
}

TEST_F(ModelManagerTest, IncompleteVersionIsIgnoredUntilItsManifestAppears) {
  Publish("m", 1);
  fs::create_directories(registry_.File("m/2"));
  ASSERT_TRUE(WriteFile(registry_.File("m/2/model.pb"),
                        TestArtifact(2).SerializeAsString()));
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  EXPECT_EQ(manager_->Get("m")->version, 1);

  fs::remove_all(registry_.File("m/2"));
  ASSERT_TRUE(WriteRawVersion(registry_.File("m/2"), TestArtifact(2)));
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  EXPECT_EQ(manager_->Get("m")->version, 2);
}

TEST_F(ModelManagerTest, ChecksumMismatchFallsBackToOlderVersion) {
  Publish("m", 1);
  Publish("m", 2);
  Corrupt("m", 2);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  ASSERT_THAT(manager_->Get("m"), NotNull());
  EXPECT_EQ(manager_->Get("m")->version, 1);
}

TEST_F(ModelManagerTest, BrokenNewerVersionDoesNotDisplaceServedOne) {
  Publish("m", 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  std::shared_ptr<const LoadedModel> served = manager_->Get("m");

  v1::ModelArtifact invalid = TestArtifact(2);
  invalid.mutable_tensors(0)->set_values(
      0, std::numeric_limits<double>::quiet_NaN());
  ASSERT_TRUE(WriteRawVersion(registry_.File("m/2"), invalid));
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  EXPECT_EQ(manager_->Get("m"), served);

  // A good version after the broken one is picked up.
  EXPECT_EQ(Publish("m", 3), 3);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  EXPECT_EQ(manager_->Get("m")->version, 3);
}

// A version is decoded into its typed model when it loads, before the swap:
// one whose model does not decode is broken like any other.
TEST_F(ModelManagerTest, VersionThatDoesNotDecodeDoesNotDisplaceServedOne) {
  Publish("m", 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  std::shared_ptr<const LoadedModel> served = manager_->Get("m");

  // A valid artifact whose tensors are no DeepPipe network.
  v1::ModelArtifact undecodable = TestArtifact(2);
  undecodable.set_kind(v1::MODEL_KIND_DEEPPIPE);
  ASSERT_THAT(WriteModelVersion(registry_.path(), "m", undecodable), IsOk());
  ::testing::internal::CaptureStderr();
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("skipping broken version"));
  EXPECT_EQ(manager_->Get("m"), served);
  EXPECT_THAT(manager_->Get("m", 2).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(registry_.File("m/2"))));
}

// Every study bound to a version shares its one decoded model.
TEST_F(ModelManagerTest, ServesTheDecodedModelOfTheVersion) {
  absl::StatusOr<surrogate::DeepPipeModel> network =
      surrogate::DeepPipeModel::Create(TestSearchSpace(),
                                       surrogate::DeepPipeArchitecture(), 1);
  ASSERT_THAT(network, IsOk());
  v1::ModelArtifact artifact;
  artifact.set_format_version(kCurrentFormatVersion);
  *artifact.mutable_search_space() = TestSearchSpace();
  network->ToArtifact(&artifact);
  ASSERT_THAT(WriteModelVersion(registry_.path(), "dp", artifact), IsOk());
  Publish("portfolio", 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());

  std::shared_ptr<const LoadedModel> model = manager_->Get("dp");
  ASSERT_THAT(model, NotNull());
  ASSERT_THAT(model->servable.deeppipe, NotNull());
  EXPECT_EQ(model->servable.deeppipe->parameters(), network->parameters());
  EXPECT_THAT(model->servable.pmf, IsNull());
  EXPECT_THAT(model->servable.grosi, IsNull());
  EXPECT_EQ(manager_->Get("dp", 1).value()->servable.deeppipe,
            model->servable.deeppipe);
  // A portfolio model has nothing to decode.
  const Servable& portfolio = manager_->Get("portfolio")->servable;
  EXPECT_THAT(portfolio.deeppipe, IsNull());
  EXPECT_THAT(portfolio.pmf, IsNull());
  EXPECT_THAT(portfolio.grosi, IsNull());
}

TEST_F(ModelManagerTest, BrokenVersionBetweenServedAndNewestIsSkipped) {
  Publish("m", 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  Publish("m", 2);
  Publish("m", 3);
  Corrupt("m", 3);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  EXPECT_EQ(manager_->Get("m")->version, 2);
}

TEST_F(ModelManagerTest, BrokenVersionIsLoggedOnceUntilItChanges) {
  Publish("m", 1);
  Publish("m", 2);
  Corrupt("m", 2);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) ASSERT_THAT(manager_->PollOnce(), IsOk());
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(CountOccurrences(log, "checksum mismatch"), 1) << log;

  // Repairing the file makes the next poll retry it.
  Corrupt("m", 2);  // flips the byte back
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  EXPECT_EQ(manager_->Get("m")->version, 2);
}

TEST_F(ModelManagerTest, MissingBasePathIsAnErrorAndUnloadsNothing) {
  Publish("m", 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  fs::remove_all(registry_.path());
  EXPECT_THAT(manager_->PollOnce(), StatusIs(absl::StatusCode::kNotFound,
                                             HasSubstr("does not exist")));
  ASSERT_THAT(manager_->Get("m"), NotNull());
  EXPECT_EQ(manager_->Get("m")->version, 1);
  EXPECT_EQ(manager_->List().size(), 1u);

  // A file where the directory was.
  ASSERT_TRUE(WriteFile(registry_.path(), "not a directory"));
  EXPECT_THAT(manager_->PollOnce(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("is not a directory")));
  EXPECT_THAT(manager_->Get("m"), NotNull());
  fs::remove(registry_.path());
}

TEST_F(ModelManagerTest, RemovedModelDirectoryKeepsServing) {
  Publish("m", 1);
  Publish("other", 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  fs::remove_all(registry_.File("m"));
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  ASSERT_THAT(manager_->Get("m"), NotNull());
  EXPECT_EQ(manager_->List().size(), 2u);
}

TEST_F(ModelManagerTest, IgnoresDirectoriesThatAreNotVersionsOrModelNames) {
  Publish("m", 1);
  // Complete, valid versions under names that are not versions.
  for (const char* name : {"0", "01", "+2", "-3", "abc", "4.0"}) {
    ASSERT_TRUE(WriteRawVersion(registry_.File(std::string("m/") + name),
                                TestArtifact(9)));
  }
  // Valid versions under directory names that are not model names.
  ASSERT_TRUE(WriteRawVersion(registry_.File("bad name/1"), TestArtifact(9)));
  ASSERT_TRUE(WriteRawVersion(registry_.File("_hidden/1"), TestArtifact(9)));
  // Plain files are ignored too.
  ASSERT_TRUE(WriteFile(registry_.File("README.md"), "models"));
  ASSERT_TRUE(
      WriteFile(registry_.File("m/5"), "a file, not a version directory"));

  ::testing::internal::CaptureStderr();
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  const std::string log = ::testing::internal::GetCapturedStderr();
  const auto models = manager_->List();
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0]->reference(), "m@1");
  EXPECT_EQ(Marker(*models[0]), 1);
  // Warned once each, not on every poll.
  EXPECT_EQ(CountOccurrences(log, "\"01\" is not a version"), 1) << log;
  EXPECT_EQ(CountOccurrences(log, "\"bad name\" is not a model name"), 1)
      << log;
}

TEST_F(ModelManagerTest, IgnoresPublishInProgress) {
  ASSERT_TRUE(
      WriteRawVersion(registry_.File("m/.tmp-abc123"), TestArtifact(1)));
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  EXPECT_THAT(manager_->Get("m"), IsNull());
}

TEST_F(ModelManagerTest, NeverGoesBackToAnOlderVersion) {
  Publish("m", 1);
  Publish("m", 2);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  fs::remove_all(registry_.File("m/2"));
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  EXPECT_EQ(manager_->Get("m")->version, 2);
}

// ---- Get(name, version) and Resolve ----

TEST_F(ModelManagerTest, OlderServedVersionsStayAvailable) {
  Publish("m", 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  std::shared_ptr<const LoadedModel> first = manager_->Get("m");
  Publish("m", 2);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  // Even after its directory is gone.
  fs::remove_all(registry_.File("m/1"));
  METAOPT_ASSERT_OK_AND_ASSIGN(auto model, manager_->Get("m", 1));
  EXPECT_EQ(model, first);
}

TEST_F(ModelManagerTest, LoadsRequestedVersionOnDemandOnce) {
  Publish("m", 1);
  Publish("m", 2);
  Publish("m", 3);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  EXPECT_EQ(manager_->Get("m")->version, 3);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto first, manager_->Get("m", 1));
  EXPECT_EQ(first->version, 1);
  EXPECT_EQ(Marker(*first), 1);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto again, manager_->Get("m", 1));
  EXPECT_EQ(again, first);
  EXPECT_EQ(manager_->Get("m")->version, 3);  // the served version is unchanged
}

TEST_F(ModelManagerTest, PollReusesVersionLoadedOnDemand) {
  Publish("m", 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  Publish("m", 2);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto second, manager_->Get("m", 2));
  EXPECT_EQ(manager_->Get("m")->version, 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  EXPECT_EQ(manager_->Get("m"), second);
}

TEST_F(ModelManagerTest, GetVersionErrors) {
  Publish("m", 1);
  Publish("m", 2);
  Corrupt("m", 2);
  EXPECT_THAT(manager_->Get("m", 9),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("model \"m\" has no version 9")));
  EXPECT_THAT(manager_->Get("nope", 1),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
  EXPECT_THAT(manager_->Get("m", 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a positive integer")));
  EXPECT_THAT(manager_->Get("m", 2), StatusIs(absl::StatusCode::kDataLoss,
                                              HasSubstr("checksum mismatch")));
  EXPECT_THAT(manager_->Get("../m", 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a model name")));
}

TEST_F(ModelManagerTest, ResolvesReferences) {
  Publish("m", 1);
  Publish("m", 2);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(auto served, manager_->Resolve({"m", 0}));
  EXPECT_EQ(served->version, 2);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto first, manager_->Resolve({"m", 1}));
  EXPECT_EQ(first->version, 1);
  EXPECT_THAT(manager_->Resolve({"other", 0}),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("model \"other\" is not served")));
}

// ---- Matching ----

// ---- ParseModelReference ----

TEST(ParseModelReferenceTest, ParsesNameAndOptionalVersion) {
  METAOPT_ASSERT_OK_AND_ASSIGN(ModelReference plain,
                               ParseModelReference("oboe-portfolio"));
  EXPECT_EQ(plain.name, "oboe-portfolio");
  EXPECT_EQ(plain.version, 0);
  EXPECT_EQ(plain.ToString(), "oboe-portfolio");
  METAOPT_ASSERT_OK_AND_ASSIGN(ModelReference pinned,
                               ParseModelReference("oboe-portfolio@12"));
  EXPECT_EQ(pinned.name, "oboe-portfolio");
  EXPECT_EQ(pinned.version, 12);
  EXPECT_EQ(pinned.ToString(), "oboe-portfolio@12");
}

TEST(ParseModelReferenceTest, RejectsMalformedReferences) {
  EXPECT_THAT(ParseModelReference(""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.algorithm.model: empty")));
  for (const char* spec : {"@3", "bad name", "-m", "a/b", "m@1@2"}) {
    EXPECT_THAT(ParseModelReference(spec),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("spec.algorithm.model")))
        << spec;
  }
  for (const char* spec : {"m@", "m@0", "m@01", "m@+1", "m@-1", "m@x", "m@1.5",
                           "m@99999999999999999999"}) {
    EXPECT_THAT(
        ParseModelReference(spec),
        StatusIs(
            absl::StatusCode::kInvalidArgument,
            HasSubstr(
                "is not a positive integer without sign or leading zeros")))
        << spec;
  }
  EXPECT_THAT(ParseModelReference("m@0", "algorithm.model"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("algorithm.model: \"m@0\": version \"0\"")));
}

// ---- Describe ----

TEST_F(ModelManagerTest, DescribesLoadedModel) {
  Publish("oboe-portfolio", 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  const v1::Model description = Describe(*manager_->Get("oboe-portfolio"));
  EXPECT_EQ(description.name(), "oboe-portfolio");
  EXPECT_EQ(description.version(), 1);
  EXPECT_EQ(description.kind(), v1::MODEL_KIND_PORTFOLIO);
  EXPECT_EQ(description.search_space_summary(),
            "2 stages, 4 algorithms, 5 parameters");
  EXPECT_EQ(description.training_data(), "oboe (train, 3 tasks)");
  EXPECT_EQ(description.create_time().seconds(), 1700000000);
  EXPECT_EQ(description.validation_metrics().at("regret@10"), 0.125);
  EXPECT_EQ(description.portfolio_size(), 2);
}

// ---- Concurrency ----

TEST_F(ModelManagerTest, ReadersAlwaysSeeCompleteModelsDuringSwaps) {
  Publish("m", 1);
  ASSERT_THAT(manager_->PollOnce(), IsOk());
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<int64_t> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      int64_t last_version = 0;
      while (!done.load()) {
        std::shared_ptr<const LoadedModel> model = manager_->Get("m");
        const bool complete =
            model != nullptr && model->version >= last_version &&
            Marker(*model) == static_cast<double>(model->version) &&
            model->artifact.tensors(0).values_size() == 6 &&
            model->artifact.portfolio_size() == 2 &&
            model->space.proto().stages_size() == 2;
        if (!complete) failures.fetch_add(1);
        if (model != nullptr) last_version = model->version;
        reads.fetch_add(1);
      }
    });
  }
  for (int version = 2; version <= 21; ++version) {
    ASSERT_EQ(Publish("m", version), version);
    ASSERT_THAT(manager_->PollOnce(), IsOk());
  }
  done.store(true);
  for (std::thread& reader : readers) reader.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(manager_->Get("m")->version, 21);
  // Every version served stays available.
  for (int version = 1; version <= 21; ++version) {
    EXPECT_THAT(manager_->Get("m", version), IsOk());
  }
}

// ---- Background thread ----

TEST(ModelManagerThreadTest, DestructorStopsPollThreadPromptly) {
  ScopedTempDir registry;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto manager, ModelManager::Create({registry.path(), absl::Hours(1)}));
  const absl::Time start = absl::Now();
  manager.reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST(ModelManagerThreadTest, PollThreadPicksUpNewVersions) {
  ScopedTempDir registry;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto manager,
      ModelManager::Create({registry.path(), absl::Milliseconds(5)}));
  ASSERT_THAT(WriteModelVersion(registry.path(), "m", TestArtifact(1)), IsOk());
  // Waits for the thread (no sleep: yields until the model shows up or the
  // deadline passes).
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (manager->Get("m") == nullptr && absl::Now() < deadline)
    std::this_thread::yield();
  ASSERT_THAT(manager->Get("m"), NotNull());
  EXPECT_EQ(manager->Get("m")->version, 1);
}

}  // namespace
}  // namespace metaopt::registry
