// Request rules found wanting by testing the server from outside: names with
// control characters, FineTune's unspecified scope, and a spec whose DeepPipe
// network is too large.
#include "core/study/request_validation.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::PipelineAccuracy;
using ::metaopt::testing::PipelineSpec;
using ::metaopt::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(RequestValidationTest, ClientIdFollowsTheNameRules) {
  v1::SuggestRequest request;
  request.set_study_id("s");
  EXPECT_THAT(ValidateSuggestRequest(request, {}), IsOk());  // no client
  request.set_client_id("worker-1");
  EXPECT_THAT(ValidateSuggestRequest(request, {}), IsOk());
  request.set_client_id(std::string("w\0\n", 3) + "\xF0\x9F\x98\x80");
  EXPECT_THAT(ValidateSuggestRequest(request, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("client_id: client id \"w\\000\\n")));
  request.set_client_id("w\x7f");
  EXPECT_THAT(ValidateSuggestRequest(request, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("control character 0x7f")));
  request.set_client_id(std::string(129, 'w'));
  EXPECT_THAT(ValidateSuggestRequest(request, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("more than the limit of 128")));
}

// Invisible Unicode characters (C1 controls, zero-width and bidirectional
// format characters, line and paragraph separators) are refused like ASCII
// controls, naming the code point and the quoted value.
TEST(RequestValidationTest, NamesRefuseUnicodeControlAndFormatCharacters) {
  v1::SuggestRequest request;
  request.set_study_id("s");
  struct Case {
    std::string name;
    const char* code_point;
  };
  for (const Case& c : std::vector<Case>{{"w\xC2\x85", "U+0085"},
                                         {"w\xE2\x80\x8B", "U+200B"},
                                         {"w\xE2\x80\xAE", "U+202E"},
                                         {"w\xE2\x80\xA8", "U+2028"},
                                         {"w\xE2\x80\xA9", "U+2029"},
                                         {"\xEF\xBB\xBFw", "U+FEFF"},
                                         {"w\xC2\xAD", "U+00AD"},
                                         {"w\xF3\xA0\x80\x81", "U+E0001"}}) {
    request.set_client_id(c.name);
    EXPECT_THAT(ValidateSuggestRequest(request, {}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("client_id: client id \""),
                               HasSubstr(c.code_point))))
        << c.code_point;
  }
  // Other non-ASCII letters and symbols are names like any other.
  for (const char* name : {"caf\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC",
                           "w\xF0\x9F\x98\x80", "a\xC2\xA0" "b"}) {
    request.set_client_id(name);
    EXPECT_THAT(ValidateSuggestRequest(request, {}), IsOk()) << name;
  }
}

TEST(RequestValidationTest, MetricNamesFollowTheNameRules) {
  v1::ObserveRequest request;
  request.set_study_id("s");
  request.set_trial_id(1);
  request.set_value(0.5);
  (*request.mutable_metrics())["fit_seconds"] = 2.5;
  EXPECT_THAT(ValidateObserveRequest(request), IsOk());
  (*request.mutable_metrics())[std::string("m\0", 2)] = 1;
  EXPECT_THAT(ValidateObserveRequest(request),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("metrics: name \"m\\000\" contains control "
                                 "character 0x00")));
  request.mutable_metrics()->clear();
  (*request.mutable_metrics())[""] = 1;
  EXPECT_THAT(ValidateObserveRequest(request),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("metrics: name must not be empty")));
}

class EngineRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto storage = storage::OpenInMemoryStorage();
    ASSERT_THAT(storage, IsOk());
    storage_ = *std::move(storage);
    engine_ = std::make_unique<StudyEngine>(storage_.get(), nullptr);
  }

  absl::Status Create(const std::string& id, const v1::StudySpec& spec) {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    *request.mutable_spec() = spec;
    return engine_->CreateStudy(request).status();
  }

  // Suggests and observes `n` trials of study `id` one at a time; the
  // values of `extremes` replace the first ones observed.
  void Run(const std::string& id, int n,
           const std::vector<double>& extremes = {}) {
    for (int i = 0; i < n; ++i) {
      v1::SuggestRequest suggest;
      suggest.set_study_id(id);
      auto suggested = engine_->Suggest(suggest);
      ASSERT_THAT(suggested, IsOk());
      ASSERT_EQ(suggested->trials_size(), 1);
      v1::ObserveRequest observe;
      observe.set_study_id(id);
      observe.set_trial_id(suggested->trials(0).id());
      observe.set_value(
          i < static_cast<int>(extremes.size())
              ? extremes[i]
              : PipelineAccuracy(suggested->trials(0).configuration()));
      ASSERT_THAT(engine_->Observe(observe), IsOk());
    }
  }

  std::unique_ptr<storage::Storage> storage_;
  std::unique_ptr<StudyEngine> engine_;
};

// docs/api.md: an unspecified scope is FINE_TUNE_SCOPE_KERNEL, like the
// other unspecified fields that mean a default.
// Free text that is stored (a client's stop reason, a failure reason) keeps
// no control characters: they are replaced by escapes (a newline by a space).
TEST_F(EngineRequestTest, StoredReasonsAreSanitized) {
  ASSERT_THAT(Create("s", PipelineSpec()), IsOk());
  v1::SuggestRequest suggest;
  suggest.set_study_id("s");
  suggest.set_count(2);
  auto suggested = engine_->Suggest(suggest);
  ASSERT_THAT(suggested, IsOk());
  v1::ReportIntermediateRequest report;
  report.set_study_id("s");
  report.set_trial_id(1);
  report.set_step(1);
  report.set_value(0.5);
  report.set_client_stop_reason(std::string("nan\0loss\x1b[2J\nstop", 17));
  auto reported = engine_->ReportIntermediate(report);
  ASSERT_THAT(reported, IsOk());
  EXPECT_TRUE(reported->should_stop());
  EXPECT_EQ(reported->reason(), "client: nan\\x00loss\\x1b[2J stop");
  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(2);
  observe.mutable_failure()->set_state(v1::TRIAL_STATE_FAILED);
  observe.mutable_failure()->set_reason("Traceback:\n  line 1\xE2\x80\xAE");
  auto observed = engine_->Observe(observe);
  ASSERT_THAT(observed, IsOk());
  EXPECT_EQ(observed->trial().failure_reason(),
            "Traceback:   line 1\\u202e");
  auto stored = storage_->LoadTrials({"", "s"});
  ASSERT_THAT(stored, IsOk());
  EXPECT_EQ((*stored)[1].failure_reason(), "Traceback:   line 1\\u202e");
}

// An enum value the proto does not define is named by its number.
TEST_F(EngineRequestTest, UnknownEnumValuesAreNamedByNumber) {
  v1::StudySpec spec = PipelineSpec();
  v1::DatasetSample* sample = spec.mutable_dataset_sample();
  sample->add_column_kinds(static_cast<v1::ColumnKind>(77));
  sample->set_num_targets(1);
  sample->add_values(1);
  sample->add_values(2);
  sample->add_targets(0);
  sample->add_targets(1);
  EXPECT_THAT(Create("s", spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.dataset_sample.column_kinds[0]: 77 is "
                                 "not COLUMN_KIND_NUMERIC")));
  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(1);
  observe.mutable_failure()->set_state(static_cast<v1::TrialState>(42));
  EXPECT_THAT(ValidateObserveRequest(observe),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("failure.state: 42 must be")));
}

TEST_F(EngineRequestTest, FineTuneWithoutScopeTunesTheKernel) {
  for (const char* id : {"kernel", "unspecified"}) {
    ASSERT_THAT(Create(id, PipelineSpec(v1::ALGORITHM_KIND_GP)), IsOk());
    Run(id, 8);
  }
  v1::FineTuneRequest request;
  request.set_study_id("kernel");
  request.set_steps(20);
  request.set_scope(v1::FINE_TUNE_SCOPE_KERNEL);
  auto kernel = engine_->FineTune(request);
  ASSERT_THAT(kernel, IsOk());
  request.set_study_id("unspecified");
  request.clear_scope();
  auto unspecified = engine_->FineTune(request);
  ASSERT_THAT(unspecified, IsOk());
  EXPECT_GT(unspecified->steps_run(), 0);
  EXPECT_EQ(unspecified->steps_run(), kernel->steps_run());
  EXPECT_DOUBLE_EQ(unspecified->loss_after(), kernel->loss_after());

  request.set_scope(static_cast<v1::FineTuneScope>(7));
  EXPECT_THAT(engine_->FineTune(request),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("scope: 7 is not a FineTuneScope")));
}

TEST(RequestValidationTest, ValuesLieWithinTheStatedBound) {
  v1::ObserveRequest request;
  request.set_study_id("s");
  request.set_trial_id(1);
  for (const double value : {1e100, -1e100, 0.0}) {
    request.set_value(value);
    EXPECT_THAT(ValidateObserveRequest(request), IsOk()) << value;
  }
  for (const double value : {1.7e308, -1.7e308, 1.0001e100}) {
    request.set_value(value);
    EXPECT_THAT(ValidateObserveRequest(request),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("is outside [-1e100, 1e100]")))
        << value;
  }
}

// Values at the bound keep the model-based kinds on their models (1.7e308
// turned every GP and DeepPipe Suggest into random-fallback) and FineTune
// working.
TEST_F(EngineRequestTest, ValuesAtTheBoundKeepTheSurrogates) {
  for (const v1::AlgorithmKind kind :
       {v1::ALGORITHM_KIND_GP, v1::ALGORITHM_KIND_DEEPPIPE}) {
    const std::string id = v1::AlgorithmKind_Name(kind);
    SCOPED_TRACE(id);
    ASSERT_THAT(Create(id, PipelineSpec(kind)), IsOk());
    Run(id, 10, {1e100, -1e100});
    v1::SuggestRequest suggest;
    suggest.set_study_id(id);
    auto suggested = engine_->Suggest(suggest);
    ASSERT_THAT(suggested, IsOk());
    ASSERT_EQ(suggested->trials_size(), 1);
    EXPECT_THAT(suggested->trials(0).metadata().at("policy"),
                Not(HasSubstr("fallback")));
    v1::FineTuneRequest fine_tune;
    fine_tune.set_study_id(id);
    fine_tune.set_steps(5);
    EXPECT_THAT(engine_->FineTune(fine_tune), IsOk());
  }
}

// A space too wide for a DeepPipe network built from scratch is the spec's
// fault, and the error says where.
TEST_F(EngineRequestTest, OversizedDeepPipeNetworkNamesTheSearchSpace) {
  v1::StudySpec spec = PipelineSpec(v1::ALGORITHM_KIND_DEEPPIPE);
  v1::SearchSpace& space = *spec.mutable_search_space();
  space.clear_stages();
  for (int s = 0; s < 5; ++s) {
    v1::Stage* stage = space.add_stages();
    stage->set_name("stage" + std::to_string(s));
    v1::Algorithm* algorithm = stage->add_algorithms();
    algorithm->set_name("a");
    for (int p = 0; p < 256; ++p) {
      v1::Parameter* parameter = algorithm->add_parameters();
      parameter->set_name("p" + std::to_string(p));
      parameter->mutable_float_domain()->set_high(1);
    }
  }
  EXPECT_THAT(Create("wide", spec),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("spec.search_space: building the DeepPipe "
                                  "network: ")));
}

// Trial ids start at 1 in every study, so a worker of a
// deleted study must not complete the trial with its id in the study created
// again under the same study_id.
TEST_F(EngineRequestTest, TrialsOfADeletedStudyAreNotTakenForTheNewOnes) {
  const v1::StudySpec spec = PipelineSpec(v1::ALGORITHM_KIND_RANDOM);
  ASSERT_THAT(Create("s", spec), IsOk());
  v1::SuggestRequest suggest;
  suggest.set_study_id("s");
  auto old_trial = engine_->Suggest(suggest);
  ASSERT_THAT(old_trial, IsOk());
  const uint64_t old_incarnation = old_trial->trials(0).study_incarnation();
  EXPECT_NE(old_incarnation, 0u);
  v1::GetStudyRequest get;
  get.set_study_id("s");
  EXPECT_EQ(engine_->GetStudy(get)->study().incarnation(), old_incarnation);

  v1::DeleteStudyRequest remove;
  remove.set_study_id("s");
  ASSERT_THAT(engine_->DeleteStudy(remove), IsOk());
  ASSERT_THAT(Create("s", spec), IsOk());
  auto new_trial = engine_->Suggest(suggest);
  ASSERT_THAT(new_trial, IsOk());
  ASSERT_EQ(new_trial->trials(0).id(), old_trial->trials(0).id());
  const uint64_t new_incarnation = new_trial->trials(0).study_incarnation();
  EXPECT_NE(new_incarnation, old_incarnation);
  EXPECT_EQ(engine_->GetStudy(get)->study().incarnation(), new_incarnation);

  v1::ObserveRequest observe;
  observe.set_study_id("s");
  observe.set_trial_id(1);
  observe.set_value(0.5);
  observe.set_study_incarnation(old_incarnation);
  EXPECT_THAT(engine_->Observe(observe),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr(absl::StrCat(
                           "study_incarnation: ", old_incarnation,
                           " is not the incarnation of study \"s\""))));
  v1::HeartbeatRequest heartbeat;
  heartbeat.set_study_id("s");
  heartbeat.add_trial_ids(1);
  heartbeat.set_study_incarnation(old_incarnation);
  EXPECT_THAT(engine_->Heartbeat(heartbeat),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("was deleted")));
  // An external configuration of the old study is refused the same way.
  v1::ObserveRequest external = observe;
  *external.mutable_configuration() = old_trial->trials(0).configuration();
  EXPECT_THAT(engine_->Observe(external),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("was deleted")));

  heartbeat.set_study_incarnation(new_incarnation);
  EXPECT_THAT(engine_->Heartbeat(heartbeat), IsOk());
  // Without an incarnation (clients older than incarnations) nothing is
  // checked.
  observe.clear_study_incarnation();
  auto observed = engine_->Observe(observe);
  ASSERT_THAT(observed, IsOk());
  EXPECT_EQ(observed->trial().study_incarnation(), new_incarnation);
}

// A study stored before incarnations existed has the creation time in
// microseconds as its incarnation, on the study and on its trials.
TEST_F(EngineRequestTest, StudiesWithoutIncarnationUseTheirCreationTime) {
  v1::Study legacy;
  legacy.set_study_id("legacy");
  *legacy.mutable_spec() = PipelineSpec(v1::ALGORITHM_KIND_RANDOM);
  legacy.set_state(v1::STUDY_STATE_ACTIVE);
  legacy.mutable_create_time()->set_seconds(1700000000);
  legacy.mutable_create_time()->set_nanos(123456000);
  ASSERT_THAT(storage_->CreateStudy(legacy, 0), IsOk());
  constexpr uint64_t kMicros = 1700000000123456;

  v1::SuggestRequest suggest;
  suggest.set_study_id("legacy");
  auto suggested = engine_->Suggest(suggest);
  ASSERT_THAT(suggested, IsOk());
  EXPECT_EQ(suggested->trials(0).study_incarnation(), kMicros);
  v1::GetStudyRequest get;
  get.set_study_id("legacy");
  EXPECT_EQ(engine_->GetStudy(get)->study().incarnation(), kMicros);
  v1::ObserveRequest observe;
  observe.set_study_id("legacy");
  observe.set_trial_id(1);
  observe.set_value(0.5);
  observe.set_study_incarnation(kMicros);
  EXPECT_THAT(engine_->Observe(observe), IsOk());
}

}  // namespace
}  // namespace metaopt::study
