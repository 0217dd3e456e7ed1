#include "core/space/search_space.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metaopt/v1/study.pb.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::space {
namespace {

using ::metaopt::testing::FirstParameter;
using ::metaopt::testing::HpoConfig;
using ::metaopt::testing::HpoSpace;
using ::metaopt::testing::HpoValue;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::MixedPipelineSpace;
using ::metaopt::testing::ParseTextProto;
using ::metaopt::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

v1::SearchSpace PipelineSpace() { return MixedPipelineSpace(); }

// ---------------------------------------------------------------------------------------------
// Search-space validation.

TEST(SearchSpaceTest, AcceptsValidSpaces) {
  EXPECT_THAT(ValidateSearchSpace(PipelineSpace()), IsOk());
  EXPECT_THAT(ValidateSearchSpace(HpoSpace()), IsOk());
}

TEST(SearchSpaceTest, RejectsNoStages) {
  EXPECT_THAT(
      ValidateSearchSpace(v1::SearchSpace()),
      StatusIs(kInvalid,
               HasSubstr("spec.search_space.stages: at least one stage")));
}

TEST(SearchSpaceTest, UsesGivenPathPrefix) {
  EXPECT_THAT(
      SearchSpace::Create(v1::SearchSpace(), "model.search_space"),
      StatusIs(kInvalid,
               HasSubstr("model.search_space.stages: at least one stage")));
}

TEST(SearchSpaceTest, RejectsEmptyStageName) {
  v1::SearchSpace space = PipelineSpace();
  space.mutable_stages(1)->clear_name();
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("spec.search_space.stages[1].name: name must not be "
                         "empty")));
}

TEST(SearchSpaceTest, RejectsDuplicateStageName) {
  v1::SearchSpace space = PipelineSpace();
  space.mutable_stages(1)->set_name("preprocess");
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("stages[1].name: duplicate name \"preprocess\" (also "
                         "stages[0])")));
}

TEST(SearchSpaceTest, RejectsStageWithoutAlgorithms) {
  v1::SearchSpace space = PipelineSpace();
  space.mutable_stages(0)->clear_algorithms();
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("stages[0].algorithms: stage \"preprocess\" needs at "
                         "least one algorithm")));
}

TEST(SearchSpaceTest, RejectsEmptyAlgorithmName) {
  v1::SearchSpace space = PipelineSpace();
  space.mutable_stages(1)->mutable_algorithms(1)->clear_name();
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("stages[1].algorithms[1].name: name must not be "
                         "empty")));
}

TEST(SearchSpaceTest, RejectsDuplicateAlgorithmName) {
  v1::SearchSpace space = PipelineSpace();
  space.mutable_stages(1)->mutable_algorithms(1)->set_name("svm");
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("stages[1].algorithms[1].name: duplicate name \"svm\" "
                         "(also algorithms[0])")));
}

TEST(SearchSpaceTest, AllowsSameAlgorithmNameInDifferentStages) {
  v1::SearchSpace space = PipelineSpace();
  space.mutable_stages(1)->mutable_algorithms(1)->set_name("none");
  EXPECT_THAT(ValidateSearchSpace(space), IsOk());
}

TEST(SearchSpaceTest, RejectsEmptyParameterName) {
  v1::SearchSpace space = PipelineSpace();
  space.mutable_stages(1)
      ->mutable_algorithms(1)
      ->mutable_parameters(2)
      ->clear_name();
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("stages[1].algorithms[1].parameters[2].name: name "
                         "must not be empty")));
}

TEST(SearchSpaceTest, RejectsDuplicateParameterName) {
  v1::SearchSpace space = PipelineSpace();
  space.mutable_stages(1)
      ->mutable_algorithms(1)
      ->mutable_parameters(2)
      ->set_name("lr");
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(
          kInvalid,
          HasSubstr("stages[1].algorithms[1].parameters[2].name: duplicate "
                    "name \"lr\" (also parameters[0])")));
}

TEST(SearchSpaceTest, RejectsTooLongName) {
  v1::SearchSpace space = HpoSpace();
  space.mutable_stages(0)->set_name(std::string(kMaxNameLength + 1, 'x'));
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               AllOf(HasSubstr("stages[0].name: name"),
                     HasSubstr("has 129 bytes, more than the limit of 128"))));
  space.mutable_stages(0)->set_name(std::string(kMaxNameLength, 'x'));
  EXPECT_THAT(ValidateSearchSpace(space), IsOk());
}

TEST(SearchSpaceTest, RejectsControlCharacterInName) {
  v1::SearchSpace space = HpoSpace();
  FirstParameter(space)->set_name("l\nr");
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("parameters[0].name: name \"l\\nr\" contains control "
                         "character 0x0a")));
}

TEST(SearchSpaceTest, RejectsFloatLowAboveHigh) {
  v1::SearchSpace space = ParseTextProto<v1::SearchSpace>(R"pb(
    stages {
      name: "s"
      algorithms { name: "a" }
      algorithms { name: "b" }
      algorithms {
        name: "c"
        parameters {
          name: "x"
          float_domain { low: 0 high: 1 }
        }
        parameters {
          name: "y"
          float_domain { low: 5 high: 1 }
        }
      }
    }
  )pb");
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid, HasSubstr("spec.search_space.stages[0].algorithms[2]."
                                   "parameters[1]: low 5 > high 1")));
}

TEST(SearchSpaceTest, RejectsIntLowAboveHigh) {
  v1::SearchSpace space = HpoSpace();
  v1::IntDomain* domain = space.mutable_stages(0)
                              ->mutable_algorithms(0)
                              ->mutable_parameters(1)
                              ->mutable_int_domain();
  domain->set_low(11);
  EXPECT_THAT(ValidateSearchSpace(space),
              StatusIs(kInvalid, HasSubstr("parameters[1]: low 11 > high 10")));
}

TEST(SearchSpaceTest, AcceptsSinglePointDomains) {
  v1::SearchSpace space = HpoSpace();
  FirstParameter(space)->mutable_float_domain()->set_low(1);
  space.mutable_stages(0)
      ->mutable_algorithms(0)
      ->mutable_parameters(1)
      ->mutable_int_domain()
      ->set_low(10);
  EXPECT_THAT(ValidateSearchSpace(space), IsOk());
}

TEST(SearchSpaceTest, RejectsFloatLogWithNonPositiveLow) {
  v1::SearchSpace space = HpoSpace();
  FirstParameter(space)->mutable_float_domain()->set_low(0);
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("parameters[0]: log scale needs low > 0, got low 0")));
  FirstParameter(space)->mutable_float_domain()->set_low(-1);
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid, HasSubstr("log scale needs low > 0, got low -1")));
}

TEST(SearchSpaceTest, RejectsIntLogWithLowBelowOne) {
  v1::SearchSpace space = HpoSpace();
  v1::IntDomain* domain = space.mutable_stages(0)
                              ->mutable_algorithms(0)
                              ->mutable_parameters(1)
                              ->mutable_int_domain();
  domain->set_low(0);
  domain->set_log(true);
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(
          kInvalid,
          HasSubstr("parameters[1]: log scale needs low >= 1, got low 0")));
}

TEST(SearchSpaceTest, RejectsNanBound) {
  v1::SearchSpace space = HpoSpace();
  FirstParameter(space)->mutable_float_domain()->set_low(kNaN);
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid, HasSubstr("parameters[0]: low nan is not finite")));
}

TEST(SearchSpaceTest, RejectsInfiniteBound) {
  v1::SearchSpace space = HpoSpace();
  FirstParameter(space)->mutable_float_domain()->set_high(kInf);
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid, HasSubstr("parameters[0]: high inf is not finite")));
  FirstParameter(space)->mutable_float_domain()->set_high(1);
  FirstParameter(space)->mutable_float_domain()->set_low(-kInf);
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid, HasSubstr("parameters[0]: low -inf is not finite")));
}

TEST(SearchSpaceTest, RejectsIntBoundBeyondExactDoubles) {
  v1::SearchSpace space = HpoSpace();
  space.mutable_stages(0)
      ->mutable_algorithms(0)
      ->mutable_parameters(1)
      ->mutable_int_domain()
      ->set_high(kMaxIntMagnitude + 1);
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("parameters[1]: high 9007199254740993 is outside")));
}

TEST(SearchSpaceTest, RejectsMissingDomain) {
  v1::SearchSpace space = HpoSpace();
  FirstParameter(space)->clear_float_domain();
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("stages[0].algorithms[0].parameters[0]: parameter "
                         "\"lr\" has no domain")));
}

TEST(SearchSpaceTest, RejectsEmptyCategorical) {
  v1::SearchSpace space = HpoSpace();
  space.mutable_stages(0)
      ->mutable_algorithms(0)
      ->mutable_parameters(2)
      ->mutable_categorical_domain()
      ->clear_values();
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(
          kInvalid,
          HasSubstr("parameters[2].categorical_domain.values: at least one "
                    "value is required")));
}

TEST(SearchSpaceTest, RejectsEmptyCategory) {
  v1::SearchSpace space = HpoSpace();
  space.mutable_stages(0)
      ->mutable_algorithms(0)
      ->mutable_parameters(2)
      ->mutable_categorical_domain()
      ->add_values("");
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("parameters[2].categorical_domain.values[2]: category "
                         "must not be empty")));
}

TEST(SearchSpaceTest, RejectsDuplicateCategory) {
  v1::SearchSpace space = HpoSpace();
  space.mutable_stages(0)
      ->mutable_algorithms(0)
      ->mutable_parameters(2)
      ->mutable_categorical_domain()
      ->add_values("gbtree");
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("categorical_domain.values[2]: duplicate category "
                         "\"gbtree\" (also values[0])")));
}

TEST(SearchSpaceTest, RejectsTooManyStages) {
  v1::SearchSpace space;
  for (int s = 0; s <= kMaxStages; ++s) {
    v1::Stage* stage = space.add_stages();
    stage->set_name(absl::StrCat("s", s));
    stage->add_algorithms()->set_name("a");
  }
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("spec.search_space.stages: 65 stages exceed the limit "
                         "of 64")));
  space.mutable_stages()->RemoveLast();
  EXPECT_THAT(ValidateSearchSpace(space), IsOk());
}

TEST(SearchSpaceTest, RejectsTooManyAlgorithms) {
  v1::SearchSpace space;
  v1::Stage* stage = space.add_stages();
  stage->set_name("s");
  for (int a = 0; a <= kMaxAlgorithmsPerStage; ++a) {
    stage->add_algorithms()->set_name(absl::StrCat("a", a));
  }
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(
          kInvalid,
          HasSubstr("stages[0].algorithms: 257 algorithms exceed the limit "
                    "of 256")));
  stage->mutable_algorithms()->RemoveLast();
  EXPECT_THAT(ValidateSearchSpace(space), IsOk());
}

TEST(SearchSpaceTest, RejectsTooManyParameters) {
  v1::SearchSpace space;
  v1::Stage* stage = space.add_stages();
  stage->set_name("s");
  v1::Algorithm* algorithm = stage->add_algorithms();
  algorithm->set_name("a");
  for (int p = 0; p <= kMaxParametersPerAlgorithm; ++p) {
    v1::Parameter* parameter = algorithm->add_parameters();
    parameter->set_name(absl::StrCat("p", p));
    parameter->mutable_float_domain()->set_high(1);
  }
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("algorithms[0].parameters: 257 parameters exceed the "
                         "limit of 256")));
  algorithm->mutable_parameters()->RemoveLast();
  EXPECT_THAT(ValidateSearchSpace(space), IsOk());
}

TEST(SearchSpaceTest, RejectsTooManyCategoricalValues) {
  v1::SearchSpace space = HpoSpace();
  v1::CategoricalDomain* domain = space.mutable_stages(0)
                                      ->mutable_algorithms(0)
                                      ->mutable_parameters(2)
                                      ->mutable_categorical_domain();
  domain->clear_values();
  for (int v = 0; v <= kMaxCategoricalValues; ++v)
    domain->add_values(absl::StrCat("v", v));
  EXPECT_THAT(
      ValidateSearchSpace(space),
      StatusIs(kInvalid,
               HasSubstr("categorical_domain.values: 1025 values exceed the "
                         "limit of 1024")));
  domain->mutable_values()->RemoveLast();
  EXPECT_THAT(ValidateSearchSpace(space), IsOk());
}

TEST(SearchSpaceTest, SummaryCountsEverything) {
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space,
                               SearchSpace::Create(PipelineSpace()));
  EXPECT_EQ(space.Summary(), "2 stages, 4 algorithms, 7 parameters");
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace hpo,
                               SearchSpace::Create(HpoSpace()));
  EXPECT_EQ(hpo.Summary(), "1 stage, 1 algorithm, 3 parameters");
}

// ---------------------------------------------------------------------------------------------
// Study specs.

v1::StudySpec HpoSpec() {
  v1::StudySpec spec;
  *spec.mutable_search_space() = HpoSpace();
  spec.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  return spec;
}

TEST(SearchSpaceStudySpecTest, CanonicalizesCandidates) {
  v1::StudySpec spec = HpoSpec();
  *spec.add_candidates() = HpoConfig();
  (*spec.mutable_dataset_features())["n_rows"] = 1000;
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::StudySpec out,
                               ValidateAndCanonicalizeStudySpec(spec));
  ASSERT_EQ(out.candidates_size(), 1);
  EXPECT_EQ(out.candidates(0).assignments(0).algorithm(), "xgb");
  EXPECT_EQ(out.dataset_features().at("n_rows"), 1000);
}

TEST(SearchSpaceStudySpecTest, ReportsSearchSpaceErrorsUnderSpec) {
  v1::StudySpec spec = HpoSpec();
  FirstParameter(*spec.mutable_search_space())
      ->mutable_float_domain()
      ->set_low(2);
  EXPECT_THAT(
      ValidateAndCanonicalizeStudySpec(spec),
      StatusIs(kInvalid, HasSubstr("spec.search_space.stages[0].algorithms[0]."
                                   "parameters[0]: low 2 > high 1")));
}

TEST(SearchSpaceStudySpecTest, RejectsUnspecifiedGoal) {
  v1::StudySpec spec = HpoSpec();
  spec.mutable_objective()->clear_goal();
  EXPECT_THAT(ValidateAndCanonicalizeStudySpec(spec),
              StatusIs(kInvalid,
                       HasSubstr("spec.objective.goal: GOAL_UNSPECIFIED is not "
                                 "allowed")));
}

TEST(SearchSpaceStudySpecTest, RejectsUnspecifiedAlgorithmKind) {
  v1::StudySpec spec = HpoSpec();
  spec.mutable_algorithm()->clear_kind();
  EXPECT_THAT(
      ValidateAndCanonicalizeStudySpec(spec),
      StatusIs(kInvalid,
               HasSubstr("spec.algorithm.kind: ALGORITHM_KIND_UNSPECIFIED is "
                         "not allowed")));
}

TEST(SearchSpaceStudySpecTest, RejectsNegativeInitialTrials) {
  v1::StudySpec spec = HpoSpec();
  spec.mutable_algorithm()->set_initial_trials(-1);
  EXPECT_THAT(
      ValidateAndCanonicalizeStudySpec(spec),
      StatusIs(kInvalid,
               HasSubstr("spec.algorithm.initial_trials: -1 must be >= 0")));
}

TEST(SearchSpaceStudySpecTest, AcquisitionSamplesStayWithinTheirRange) {
  v1::StudySpec spec = HpoSpec();
  spec.mutable_algorithm()->set_acquisition_samples(-5);
  EXPECT_THAT(ValidateAndCanonicalizeStudySpec(spec),
              StatusIs(kInvalid,
                       HasSubstr("spec.algorithm.acquisition_samples: -5 must "
                                 "be in [0, 100000]")));
  spec.mutable_algorithm()->set_acquisition_samples(100001);
  EXPECT_THAT(ValidateAndCanonicalizeStudySpec(spec),
              StatusIs(kInvalid, HasSubstr("acquisition_samples: 100001")));
  spec.mutable_algorithm()->set_acquisition_samples(500);
  EXPECT_THAT(ValidateAndCanonicalizeStudySpec(spec), IsOk());
}

TEST(SearchSpaceStudySpecTest, RejectsInvalidCandidateWithItsPath) {
  v1::StudySpec spec = HpoSpec();
  *spec.add_candidates() = HpoConfig();
  v1::Configuration bad = HpoConfig();
  HpoValue(bad, "lr").set_number(3.5);
  *spec.add_candidates() = bad;
  EXPECT_THAT(
      ValidateAndCanonicalizeStudySpec(spec),
      StatusIs(
          kInvalid,
          HasSubstr("spec.candidates[1].assignments[0].parameters[\"lr\"]: "
                    "3.5 is outside [1e-05, 1]")));
}

TEST(SearchSpaceStudySpecTest, RejectsDuplicateCandidates) {
  v1::StudySpec spec = HpoSpec();
  for (double lr : {0.1, 0.01, 0.2}) {
    v1::Configuration config = HpoConfig();
    HpoValue(config, "lr").set_number(lr);
    *spec.add_candidates() = config;
  }
  // candidates[1] again, spelt differently (algorithm given explicitly).
  v1::Configuration same = HpoConfig();
  HpoValue(same, "lr").set_number(0.01);
  same.mutable_assignments(0)->set_algorithm("xgb");
  *spec.add_candidates() = same;
  EXPECT_THAT(
      ValidateAndCanonicalizeStudySpec(spec),
      StatusIs(
          kInvalid,
          HasSubstr("spec.candidates[3]: duplicate of spec.candidates[1]")));
}

TEST(SearchSpaceStudySpecTest, RejectsTooManyCandidates) {
  v1::StudySpec spec = HpoSpec();
  for (int i = 0; i <= kMaxCandidates; ++i) spec.add_candidates();
  EXPECT_THAT(
      ValidateAndCanonicalizeStudySpec(spec),
      StatusIs(kInvalid,
               HasSubstr("spec.candidates: 100001 candidates exceed the limit "
                         "of 100000")));
}

TEST(SearchSpaceStudySpecTest, RejectsNanDatasetFeature) {
  v1::StudySpec spec = HpoSpec();
  (*spec.mutable_dataset_features())["n_rows"] = kNaN;
  EXPECT_THAT(
      ValidateAndCanonicalizeStudySpec(spec),
      StatusIs(kInvalid,
               HasSubstr("spec.dataset_features[\"n_rows\"]: nan is not "
                         "finite")));
}

// A valid 3-row, 2-column sample with 2 one-hot targets.
v1::DatasetSample SmallSample() {
  v1::DatasetSample sample;
  sample.add_column_kinds(v1::COLUMN_KIND_NUMERIC);
  sample.add_column_kinds(v1::COLUMN_KIND_CATEGORICAL);
  for (double v : {0.5, -1.0, 1.5, 0.0, -2.0, 1.0}) sample.add_values(v);
  sample.set_num_targets(2);
  for (double v : {1.0, 0.0, 0.0, 1.0, 1.0, 0.0}) sample.add_targets(v);
  return sample;
}

TEST(SearchSpaceStudySpecTest, AcceptsDatasetSample) {
  v1::StudySpec spec = HpoSpec();
  *spec.mutable_dataset_sample() = SmallSample();
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::StudySpec out,
                               ValidateAndCanonicalizeStudySpec(spec));
  EXPECT_EQ(out.dataset_sample().values_size(), 6);
}

TEST(SearchSpaceStudySpecTest, RejectsMalformedDatasetSamples) {
  struct Case {
    std::function<void(v1::DatasetSample*)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](v1::DatasetSample* s) { s->clear_column_kinds(); },
       "spec.dataset_sample.column_kinds: 0 columns; need 1 to 16"},
      {[](v1::DatasetSample* s) {
         for (int i = 0; i < 15; ++i)
           s->add_column_kinds(v1::COLUMN_KIND_NUMERIC);
       },
       "spec.dataset_sample.column_kinds: 17 columns; need 1 to 16"},
      {[](v1::DatasetSample* s) {
         s->set_column_kinds(1, v1::COLUMN_KIND_UNSPECIFIED);
       },
       "spec.dataset_sample.column_kinds[1]: COLUMN_KIND_UNSPECIFIED is not"},
      {[](v1::DatasetSample* s) { s->set_num_targets(4); },
       "spec.dataset_sample.num_targets: 4; need 1 to 3"},
      {[](v1::DatasetSample* s) { s->add_values(1.0); },
       "spec.dataset_sample.values: 7 values are not rows of "
       "len(column_kinds) = 2"},
      {[](v1::DatasetSample* s) {
         s->mutable_values()->Truncate(2);
         s->mutable_targets()->Truncate(2);
       },
       "spec.dataset_sample.values: 1 rows of 2 columns; need 2 to 256 rows"},
      {[](v1::DatasetSample* s) {
         for (int i = 0; i < 2 * 254; ++i) s->add_values(0.0);
       },
       "spec.dataset_sample.values: 257 rows of 2 columns; need 2 to 256"},
      {[](v1::DatasetSample* s) { s->add_targets(0.0); },
       "spec.dataset_sample.targets: 7 values; need rows (3) x num_targets "
       "(2) = 6"},
      {[](v1::DatasetSample* s) { s->set_values(3, kNaN); },
       "spec.dataset_sample.values[3]: nan is not finite"},
      {[](v1::DatasetSample* s) { s->set_targets(5, kInf); },
       "spec.dataset_sample.targets[5]: inf is not finite"},
  };
  for (const Case& c : cases) {
    v1::StudySpec spec = HpoSpec();
    *spec.mutable_dataset_sample() = SmallSample();
    c.edit(spec.mutable_dataset_sample());
    EXPECT_THAT(ValidateAndCanonicalizeStudySpec(spec),
                StatusIs(kInvalid, HasSubstr(c.message)))
        << c.message;
  }
}

TEST(SearchSpaceStudySpecTest, RejectsInfiniteDatasetFeature) {
  v1::StudySpec spec = HpoSpec();
  (*spec.mutable_dataset_features())["n_rows"] = kInf;
  EXPECT_THAT(
      ValidateAndCanonicalizeStudySpec(spec),
      StatusIs(kInvalid,
               HasSubstr("spec.dataset_features[\"n_rows\"]: inf is not "
                         "finite")));
}

TEST(SearchSpaceStudySpecTest, RejectsEmptyDatasetFeatureName) {
  v1::StudySpec spec = HpoSpec();
  (*spec.mutable_dataset_features())[""] = 1;
  EXPECT_THAT(
      ValidateAndCanonicalizeStudySpec(spec),
      StatusIs(kInvalid,
               HasSubstr("spec.dataset_features[\"\"]: name must not be "
                         "empty")));
}

}  // namespace
}  // namespace metaopt::space
