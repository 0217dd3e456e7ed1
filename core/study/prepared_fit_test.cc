// Fits prepared in the background after Observe (FitPreparer): the engine's
// suggestions are exactly those of an engine that fits every Suggest inline,
// whatever the timing (prepared, waited for, stale, or cancelled), across
// Observes and deletes during a prepare and across a restart.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/storage/storage.h"
#include "tests/testutil/restartable_engine.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::CatalogueSpec;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::PipelineAccuracy;
using ::metaopt::testing::PipelineSpec;
using ::metaopt::testing::StatusIs;

// A value for any configuration of PipelineSpec or CatalogueSpec.
double Value(const v1::Configuration& c) {
  if (c.assignments_size() == 2) return PipelineAccuracy(c);
  const double x = c.assignments(0).parameters().at("x").number();
  return (x - 0.3) * (x - 0.3);
}

// What a trial's suggestion is: its configuration and metadata, serialized
// deterministically (map entries sorted).
std::string Suggestion(const v1::Trial& trial) {
  v1::Trial kept;
  *kept.mutable_configuration() = trial.configuration();
  *kept.mutable_metadata() = trial.metadata();
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    kept.SerializeToCodedStream(&coded);
  }
  return out;
}

// A study driven on an engine: Suggest batches, Observe in a given order.
class Driver {
 public:
  Driver(StudyEngine* engine, std::string id) : engine_(engine), id_(id) {}

  absl::Status Create(const v1::StudySpec& spec) {
    v1::CreateStudyRequest request;
    request.set_study_id(id_);
    *request.mutable_spec() = spec;
    return engine_->CreateStudy(request).status();
  }
  std::vector<v1::Trial> Suggest(int count) {
    v1::SuggestRequest request;
    request.set_study_id(id_);
    request.set_count(count);
    auto response = engine_->Suggest(request);
    EXPECT_THAT(response, IsOk());
    if (!response.ok()) return {};
    return {response->trials().begin(), response->trials().end()};
  }
  absl::Status Observe(const v1::Trial& trial) {
    v1::ObserveRequest request;
    request.set_study_id(id_);
    request.set_trial_id(trial.id());
    request.set_value(Value(trial.configuration()));
    return engine_->Observe(request).status();
  }
  std::vector<std::string> Suggestions() {
    v1::ListTrialsRequest request;
    request.set_study_id(id_);
    request.set_page_size(1000);
    auto response = engine_->ListTrials(request);
    EXPECT_THAT(response, IsOk());
    std::vector<std::string> out;
    if (response.ok()) {
      for (const v1::Trial& t : response->trials()) {
        out.push_back(Suggestion(t));
      }
    }
    return out;
  }

 private:
  StudyEngine* engine_;
  std::string id_;
};

// Waits (bounded) until `engine` has no background prepare queued or
// running, so that the next Suggest finds them done.
void AwaitPrepares(StudyEngine& engine) {
  for (int i = 0; i < 60000; ++i) {
    const FitPreparer::Stats stats = engine.PrepareStats();
    if (stats.queued == 0 && stats.running == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ADD_FAILURE() << "background prepares did not finish";
}

class PreparedFitTest : public RestartableEngineTest<60> {
 protected:
  void SetUp() override {
    RestartableEngineTest<60>::SetUp();
    auto storage = storage::OpenInMemoryStorage();
    ASSERT_THAT(storage, IsOk());
    inline_storage_ = *std::move(storage);
    EngineOptions options;
    options.prepare_threads = 0;
    options.clock = FakeClock::Source(&clock_);
    inline_engine_ =
        std::make_unique<StudyEngine>(inline_storage_.get(), nullptr, options);
  }

  // Runs `rounds` Suggest(count) / Observe rounds of `spec` on both engines;
  // on the background engine each Suggest first lets the prepares finish
  // when `await` (else it races them). Expects equal suggestions.
  void RunBoth(const v1::StudySpec& spec, int rounds, int count, bool await) {
    Driver background(engine_.get(), "s");
    Driver reference(inline_engine_.get(), "s");
    ASSERT_THAT(background.Create(spec), IsOk());
    ASSERT_THAT(reference.Create(spec), IsOk());
    for (int round = 0; round < rounds; ++round) {
      if (await) AwaitPrepares(*engine_);
      const std::vector<v1::Trial> got = background.Suggest(count);
      const std::vector<v1::Trial> want = reference.Suggest(count);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(Suggestion(got[i]), Suggestion(want[i]))
            << "round " << round << " trial " << i;
        ASSERT_THAT(background.Observe(got[i]), IsOk());
        ASSERT_THAT(reference.Observe(want[i]), IsOk());
      }
    }
    EXPECT_EQ(background.Suggestions(), reference.Suggestions());
  }

  std::unique_ptr<storage::Storage> inline_storage_;
  std::unique_ptr<StudyEngine> inline_engine_;
};

TEST_F(PreparedFitTest, GpSuggestsAsInlineWithPreparedFits) {
  v1::StudySpec spec = PipelineSpec(v1::ALGORITHM_KIND_GP);
  RunBoth(spec, 14, 1, /*await=*/true);
  const FitPreparer::Stats stats = engine_->PrepareStats();
  EXPECT_GE(stats.hits, 6) << "misses " << stats.misses;
  EXPECT_EQ(inline_engine_->PrepareStats().hits, 0);
}

TEST_F(PreparedFitTest, GpCatalogueBatchesSuggestAsInline) {
  v1::StudySpec spec = CatalogueSpec(200);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  RunBoth(spec, 8, 3, /*await=*/true);
  EXPECT_GE(engine_->PrepareStats().hits, 3);
}

TEST_F(PreparedFitTest, RacingThePreparesChangesNothing) {
  // Suggest right after Observe: the prepare is queued (the Suggest then
  // computes it), running (the Suggest waits) or done.
  v1::StudySpec spec = CatalogueSpec(150);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  RunBoth(spec, 12, 2, /*await=*/false);
}

TEST_F(PreparedFitTest, DeepPipeSuggestsAsInlineWithPreparedFits) {
  // Without a registry model: the network trained on the study, its
  // parameters persisted by every Suggest.
  RunBoth(PipelineSpec(v1::ALGORITHM_KIND_DEEPPIPE), 9, 1, /*await=*/true);
  EXPECT_GE(engine_->PrepareStats().hits, 2);
}

TEST_F(PreparedFitTest, ObservesDuringAPrepareMakeItStale) {
  v1::StudySpec spec = CatalogueSpec(200);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  Driver background(engine_.get(), "s");
  Driver reference(inline_engine_.get(), "s");
  ASSERT_THAT(background.Create(spec), IsOk());
  ASSERT_THAT(reference.Create(spec), IsOk());
  for (int round = 0; round < 6; ++round) {
    // Four pending trials observed back to back: each Observe makes the
    // prepare of the previous state stale while it may be running.
    const std::vector<v1::Trial> got = background.Suggest(4);
    const std::vector<v1::Trial> want = reference.Suggest(4);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(Suggestion(got[i]), Suggestion(want[i])) << round;
      ASSERT_THAT(background.Observe(got[i]), IsOk());
      ASSERT_THAT(reference.Observe(want[i]), IsOk());
    }
  }
  EXPECT_EQ(background.Suggestions(), reference.Suggestions());
}

TEST_F(PreparedFitTest, DeletingAStudyWhilePreparingDropsItsFit) {
  v1::StudySpec spec = CatalogueSpec(400);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  for (int attempt = 0; attempt < 5; ++attempt) {
    const std::string id = "doomed" + std::to_string(attempt);
    Driver study(engine_.get(), id);
    ASSERT_THAT(study.Create(spec), IsOk());
    for (int round = 0; round < 4; ++round) {
      for (const v1::Trial& trial : study.Suggest(3)) {
        ASSERT_THAT(study.Observe(trial), IsOk());
      }
    }
    // The last Observe queued a prepare; delete at once.
    v1::DeleteStudyRequest request;
    request.set_study_id(id);
    ASSERT_THAT(engine_->DeleteStudy(request), IsOk());
    v1::SuggestRequest suggest;
    suggest.set_study_id(id);
    EXPECT_THAT(engine_->Suggest(suggest),
                StatusIs(absl::StatusCode::kNotFound, ::testing::_));
    // Created again under the same id: a fresh study, whose Suggests are
    // those of a fresh study on the reference engine.
    Driver again(engine_.get(), id);
    Driver reference(inline_engine_.get(), id);
    ASSERT_THAT(again.Create(spec), IsOk());
    ASSERT_THAT(reference.Create(spec), IsOk());
    for (int round = 0; round < 3; ++round) {
      const std::vector<v1::Trial> got = again.Suggest(2);
      const std::vector<v1::Trial> want = reference.Suggest(2);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(Suggestion(got[i]), Suggestion(want[i]));
        ASSERT_THAT(again.Observe(got[i]), IsOk());
        ASSERT_THAT(reference.Observe(want[i]), IsOk());
      }
    }
  }
  // The engine stops with prepares queued or running.
  engine_.reset();
}

TEST_F(PreparedFitTest, ARestartedServerSuggestsAsTheInlineEngine) {
  UseSqlite();
  v1::StudySpec spec = PipelineSpec(v1::ALGORITHM_KIND_GP);
  Driver reference(inline_engine_.get(), "s");
  ASSERT_THAT(reference.Create(spec), IsOk());
  {
    Driver background(engine_.get(), "s");
    ASSERT_THAT(background.Create(spec), IsOk());
  }
  for (int round = 0; round < 12; ++round) {
    // Restart every third round: the prepared fit is lost with the process,
    // the stored policy state is not.
    if (round % 3 == 2) Restart();
    Driver background(engine_.get(), "s");
    const std::vector<v1::Trial> got = background.Suggest(1);
    const std::vector<v1::Trial> want = reference.Suggest(1);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(Suggestion(got[i]), Suggestion(want[i])) << round;
      ASSERT_THAT(background.Observe(got[i]), IsOk());
      ASSERT_THAT(reference.Observe(want[i]), IsOk());
    }
  }
}

TEST_F(PreparedFitTest, KeptFitsAreBounded) {
  EngineOptions options;
  options.max_prepared_fits = 2;
  options.clock = FakeClock::Source(&clock_);
  auto storage = storage::OpenInMemoryStorage();
  ASSERT_THAT(storage, IsOk());
  StudyEngine engine(storage->get(), nullptr, options);
  StudyEngine& reference = *inline_engine_;
  v1::StudySpec spec = CatalogueSpec(100);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  // Five studies in turn: each Suggest finds its fit evicted by the others'
  // (or still kept), and suggests as inline either way.
  for (int round = 0; round < 8; ++round) {
    for (int s = 0; s < 5; ++s) {
      const std::string id = "s" + std::to_string(s);
      Driver got_driver(&engine, id);
      Driver want_driver(&reference, id);
      if (round == 0) {
        ASSERT_THAT(got_driver.Create(spec), IsOk());
        ASSERT_THAT(want_driver.Create(spec), IsOk());
      }
      const std::vector<v1::Trial> got = got_driver.Suggest(1);
      const std::vector<v1::Trial> want = want_driver.Suggest(1);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(Suggestion(got[i]), Suggestion(want[i]));
        ASSERT_THAT(got_driver.Observe(got[i]), IsOk());
        ASSERT_THAT(want_driver.Observe(want[i]), IsOk());
      }
    }
  }
}

}  // namespace
}  // namespace metaopt::study
