#include "core/space/search_space.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "metaopt/v1/study.pb.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::space {
namespace {

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

// Plain HPO: one stage, one algorithm.
v1::SearchSpace HpoSpace() {
  return ParseTextProto<v1::SearchSpace>(R"pb(
    stages {
      name: "train"
      algorithms {
        name: "xgb"
        parameters {
          name: "lr"
          float_domain { low: 1e-5 high: 1 log: true }
        }
        parameters {
          name: "depth"
          int_domain { low: 2 high: 10 }
        }
        parameters {
          name: "booster"
          categorical_domain { values: "gbtree" values: "dart" }
        }
      }
    }
  )pb");
}

v1::Parameter* FirstParameter(v1::SearchSpace& space) {
  return space.mutable_stages(0)->mutable_algorithms(0)->mutable_parameters(0);
}

// A valid HPO configuration (algorithm omitted, as the single-algorithm stage
// allows).
v1::Configuration HpoConfig() {
  return ParseTextProto<v1::Configuration>(R"pb(
    assignments {
      stage: "train"
      parameters {
        key: "lr"
        value { number: 0.01 }
      }
      parameters {
        key: "depth"
        value { number: 4 }
      }
      parameters {
        key: "booster"
        value { category: "dart" }
      }
    }
  )pb");
}

v1::ParameterValue& HpoValue(v1::Configuration& config,
                             const std::string& name) {
  return (*config.mutable_assignments(0)->mutable_parameters())[name];
}

absl::StatusOr<v1::Configuration> CanonicalizeHpo(
    const v1::Configuration& config) {
  auto space = SearchSpace::Create(HpoSpace());
  EXPECT_THAT(space, IsOk());
  return space->Canonicalize(config, "configuration");
}

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
// Configurations.

TEST(SearchSpaceCanonicalizeTest, FillsInSingleAlgorithm) {
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Configuration canonical,
                               CanonicalizeHpo(HpoConfig()));
  ASSERT_EQ(canonical.assignments_size(), 1);
  EXPECT_EQ(canonical.assignments(0).stage(), "train");
  EXPECT_EQ(canonical.assignments(0).algorithm(), "xgb");
  EXPECT_EQ(canonical.assignments(0).parameters().at("depth").number(), 4);
  EXPECT_EQ(canonical.assignments(0).parameters().at("booster").category(),
            "dart");
}

TEST(SearchSpaceCanonicalizeTest, OrdersAssignmentsByStage) {
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space,
                               SearchSpace::Create(PipelineSpace()));
  const auto config = ParseTextProto<v1::Configuration>(R"pb(
    assignments {
      stage: "model"
      algorithm: "svm"
      parameters {
        key: "kernel"
        value { category: "rbf" }
      }
      parameters {
        key: "C"
        value { number: 1 }
      }
    }
    assignments { stage: "preprocess" algorithm: "none" }
  )pb");
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Configuration canonical,
                               space.Canonicalize(config, "configuration"));
  ASSERT_EQ(canonical.assignments_size(), 2);
  EXPECT_EQ(canonical.assignments(0).stage(), "preprocess");
  EXPECT_EQ(canonical.assignments(1).stage(), "model");
  // Canonicalizing a canonical configuration changes nothing.
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Configuration again,
                               space.Canonicalize(canonical, "configuration"));
  EXPECT_EQ(ConfigurationKey(again), ConfigurationKey(canonical));
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(again, canonical));
}

TEST(SearchSpaceCanonicalizeTest, NormalizesNegativeZero) {
  v1::SearchSpace proto = HpoSpace();
  FirstParameter(proto)->mutable_float_domain()->set_log(false);
  FirstParameter(proto)->mutable_float_domain()->set_low(-1);
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space, SearchSpace::Create(proto));
  v1::Configuration a = HpoConfig();
  v1::Configuration b = HpoConfig();
  HpoValue(a, "lr").set_number(0.0);
  HpoValue(b, "lr").set_number(-0.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Configuration ca,
                               space.Canonicalize(a, "c"));
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Configuration cb,
                               space.Canonicalize(b, "c"));
  EXPECT_EQ(ConfigurationKey(ca), ConfigurationKey(cb));
}

TEST(SearchSpaceCanonicalizeTest, RejectsUnknownStage) {
  v1::Configuration config = HpoConfig();
  config.mutable_assignments(0)->set_stage("tran");
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid,
               HasSubstr("configuration.assignments[0].stage: unknown stage "
                         "\"tran\" (stages are [\"train\"])")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsDuplicateStage) {
  v1::Configuration config = HpoConfig();
  *config.add_assignments() = config.assignments(0);
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid,
               HasSubstr("configuration.assignments[1].stage: duplicate stage "
                         "\"train\" (also assignments[0])")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsMissingStage) {
  EXPECT_THAT(
      CanonicalizeHpo(v1::Configuration()),
      StatusIs(
          kInvalid,
          HasSubstr("configuration.assignments: missing stage \"train\"")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsUnknownAlgorithm) {
  v1::Configuration config = HpoConfig();
  config.mutable_assignments(0)->set_algorithm("lgbm");
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid,
               HasSubstr("configuration.assignments[0].algorithm: unknown "
                         "algorithm \"lgbm\" in stage \"train\"")));
}

TEST(SearchSpaceCanonicalizeTest,
     RejectsOmittedAlgorithmInMultiAlgorithmStage) {
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space,
                               SearchSpace::Create(PipelineSpace()));
  const auto config = ParseTextProto<v1::Configuration>(R"pb(
    assignments { stage: "preprocess" }
    assignments {
      stage: "model"
      algorithm: "svm"
      parameters {
        key: "kernel"
        value { category: "rbf" }
      }
      parameters {
        key: "C"
        value { number: 1 }
      }
    }
  )pb");
  EXPECT_THAT(
      space.Canonicalize(config, "configuration"),
      StatusIs(kInvalid,
               HasSubstr("configuration.assignments[0].algorithm: must be set: "
                         "stage \"preprocess\" has 2 algorithms")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsUnknownParameter) {
  v1::Configuration config = HpoConfig();
  config.mutable_assignments(0)->mutable_parameters()->erase("lr");
  HpoValue(config, "lrr").set_number(0.1);
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid,
               HasSubstr("configuration.assignments[0].parameters[\"lrr\"]: "
                         "unknown parameter of algorithm \"xgb\"")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsMissingParameter) {
  v1::Configuration config = HpoConfig();
  config.mutable_assignments(0)->mutable_parameters()->erase("depth");
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid,
               HasSubstr("configuration.assignments[0].parameters[\"depth\"]: "
                         "missing")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsValueOutsideFloatDomain) {
  v1::Configuration config = HpoConfig();
  HpoValue(config, "lr").set_number(3.5);
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid,
               HasSubstr("configuration.assignments[0].parameters[\"lr\"]: 3.5 "
                         "is outside [1e-05, 1]")));
}

TEST(SearchSpaceCanonicalizeTest,
     RejectsValueJustOutsideDomainWithFullPrecision) {
  v1::Configuration config = HpoConfig();
  HpoValue(config, "lr").set_number(std::nextafter(1.0, 2.0));
  EXPECT_THAT(CanonicalizeHpo(config),
              StatusIs(kInvalid,
                       HasSubstr("1.0000000000000002 is outside [1e-05, 1]")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsValueOutsideIntDomain) {
  v1::Configuration config = HpoConfig();
  HpoValue(config, "depth").set_number(11);
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid,
               HasSubstr("parameters[\"depth\"]: 11 is outside [2, 10]")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsNonIntegralInt) {
  v1::Configuration config = HpoConfig();
  HpoValue(config, "depth").set_number(4.5);
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid,
               HasSubstr("parameters[\"depth\"]: 4.5 is not an integer")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsNumberForCategorical) {
  v1::Configuration config = HpoConfig();
  HpoValue(config, "booster").set_number(1);
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid,
               HasSubstr("parameters[\"booster\"]: expected a category, got "
                         "number 1")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsCategoryForNumber) {
  v1::Configuration config = HpoConfig();
  HpoValue(config, "lr").set_category("0.1");
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid,
               HasSubstr("parameters[\"lr\"]: expected a number, got category "
                         "\"0.1\"")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsUnsetValue) {
  v1::Configuration config = HpoConfig();
  HpoValue(config, "lr").Clear();
  EXPECT_THAT(CanonicalizeHpo(config),
              StatusIs(kInvalid,
                       HasSubstr("parameters[\"lr\"]: no value set (expected a "
                                 "number)")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsNanValue) {
  v1::Configuration config = HpoConfig();
  HpoValue(config, "lr").set_number(kNaN);
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid, HasSubstr("parameters[\"lr\"]: nan is not finite")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsInfiniteValue) {
  v1::Configuration config = HpoConfig();
  HpoValue(config, "depth").set_number(-kInf);
  EXPECT_THAT(CanonicalizeHpo(config),
              StatusIs(kInvalid,
                       HasSubstr("parameters[\"depth\"]: -inf is not finite")));
}

TEST(SearchSpaceCanonicalizeTest, RejectsCategoryNotAmongValues) {
  v1::Configuration config = HpoConfig();
  HpoValue(config, "booster").set_category("linear");
  EXPECT_THAT(
      CanonicalizeHpo(config),
      StatusIs(kInvalid,
               HasSubstr("parameters[\"booster\"]: \"linear\" is not one of "
                         "[\"gbtree\", \"dart\"]")));
}

TEST(SearchSpaceKeyTest, EqualForEquivalentInputs) {
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Configuration a,
                               CanonicalizeHpo(HpoConfig()));
  v1::Configuration explicit_algorithm = HpoConfig();
  explicit_algorithm.mutable_assignments(0)->set_algorithm("xgb");
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Configuration b,
                               CanonicalizeHpo(explicit_algorithm));
  EXPECT_EQ(ConfigurationKey(a), ConfigurationKey(b));
}

TEST(SearchSpaceKeyTest, DiffersForDifferentValues) {
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Configuration a,
                               CanonicalizeHpo(HpoConfig()));
  v1::Configuration other = HpoConfig();
  HpoValue(other, "lr").set_number(std::nextafter(0.01, 1.0));
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Configuration b, CanonicalizeHpo(other));
  EXPECT_NE(ConfigurationKey(a), ConfigurationKey(b));
}

TEST(SearchSpaceKeyTest, NamesCannotImitatePunctuation) {
  v1::Configuration a;
  v1::Assignment* x = a.add_assignments();
  x->set_stage("s");
  x->set_algorithm("a");
  (*x->mutable_parameters())["p"].set_category("v\",\"q\"=\"w");
  v1::Configuration b;
  v1::Assignment* y = b.add_assignments();
  y->set_stage("s");
  y->set_algorithm("a");
  (*y->mutable_parameters())["p"].set_category("v");
  (*y->mutable_parameters())["q"].set_category("w");
  EXPECT_NE(ConfigurationKey(a), ConfigurationKey(b));
}

// ---------------------------------------------------------------------------------------------
// Sampling.

constexpr int kSamples = 10000;

TEST(SearchSpaceSampleTest, SamplesAreCanonicalAndInBounds) {
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space,
                               SearchSpace::Create(PipelineSpace()));
  Rng rng(1);
  for (int i = 0; i < kSamples; ++i) {
    const v1::Configuration sample = space.Sample(rng);
    METAOPT_ASSERT_OK_AND_ASSIGN(v1::Configuration canonical,
                                 space.Canonicalize(sample, "sample"));
    ASSERT_EQ(ConfigurationKey(canonical), ConfigurationKey(sample));
  }
}

TEST(SearchSpaceSampleTest, FloatsStayInBoundsAndSpreadUniformly) {
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space,
                               SearchSpace::Create(HpoSpace()));
  Rng rng(2);
  std::vector<double> log_lr;
  for (int i = 0; i < kSamples; ++i) {
    const double lr =
        space.Sample(rng).assignments(0).parameters().at("lr").number();
    ASSERT_GE(lr, 1e-5);
    ASSERT_LE(lr, 1.0);
    log_lr.push_back(std::log10(lr));
  }
  // Log-uniform on [1e-5, 1]: log10 uniform on [-5, 0], so the median is the
  // geometric mean.
  std::nth_element(log_lr.begin(), log_lr.begin() + kSamples / 2, log_lr.end());
  EXPECT_NEAR(log_lr[kSamples / 2], -2.5, 0.1);
  const double below_1e_4 = std::count_if(log_lr.begin(), log_lr.end(),
                                          [](double x) { return x < -4; });
  EXPECT_NEAR(below_1e_4 / kSamples, 0.2, 0.02);
}

TEST(SearchSpaceSampleTest, LinearFloatMedianIsMidpoint) {
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space,
                               SearchSpace::Create(PipelineSpace()));
  Rng rng(3);
  std::vector<double> dropout;
  while (static_cast<int>(dropout.size()) < kSamples) {
    const v1::Configuration sample = space.Sample(rng);
    const v1::Assignment& model = sample.assignments(1);
    if (model.algorithm() != "mlp") continue;
    const double x = model.parameters().at("dropout").number();
    ASSERT_GE(x, 0.0);
    ASSERT_LE(x, 0.5);
    dropout.push_back(x);
  }
  std::nth_element(dropout.begin(), dropout.begin() + kSamples / 2,
                   dropout.end());
  EXPECT_NEAR(dropout[kSamples / 2], 0.25, 0.015);
}

TEST(SearchSpaceSampleTest, IntsAreIntegralUniformAndReachBothEnds) {
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space,
                               SearchSpace::Create(HpoSpace()));
  Rng rng(4);
  std::map<int, int> counts;
  for (int i = 0; i < kSamples; ++i) {
    const double depth =
        space.Sample(rng).assignments(0).parameters().at("depth").number();
    ASSERT_EQ(depth, std::floor(depth));
    ASSERT_GE(depth, 2);
    ASSERT_LE(depth, 10);
    ++counts[static_cast<int>(depth)];
  }
  ASSERT_EQ(counts.size(), 9u);
  EXPECT_EQ(counts.begin()->first, 2);
  EXPECT_EQ(counts.rbegin()->first, 10);
  for (const auto& [value, count] : counts) {
    EXPECT_NEAR(count, kSamples / 9.0, 150) << "depth " << value;
  }
}

TEST(SearchSpaceSampleTest, LogIntsFollowLogUniformCells) {
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space,
                               SearchSpace::Create(PipelineSpace()));
  Rng rng(5);
  std::map<int, int> counts;
  int total = 0;
  while (total < kSamples) {
    const v1::Configuration sample = space.Sample(rng);
    const v1::Assignment& pre = sample.assignments(0);
    if (pre.algorithm() != "pca") continue;
    const double n = pre.parameters().at("n_components").number();
    ASSERT_EQ(n, std::floor(n));
    ++counts[static_cast<int>(n)];
    ++total;
  }
  ASSERT_EQ(counts.size(), 8u);
  EXPECT_EQ(counts.begin()->first, 1);
  EXPECT_EQ(counts.rbegin()->first, 8);
  // P(k) = log((k + 1) / k) / log(9).
  for (const auto& [k, count] : counts) {
    const double p = std::log((k + 1.0) / k) / std::log(9.0);
    EXPECT_NEAR(static_cast<double>(count) / kSamples, p, 0.015) << "k " << k;
  }
}

TEST(SearchSpaceSampleTest, CategoriesAndAlgorithmsAreUniform) {
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space,
                               SearchSpace::Create(PipelineSpace()));
  Rng rng(6);
  std::map<std::string, int> kernels;
  std::map<std::string, int> models;
  for (int i = 0; i < kSamples; ++i) {
    const v1::Configuration sample = space.Sample(rng);
    const v1::Assignment& model = sample.assignments(1);
    ++models[model.algorithm()];
    if (model.algorithm() == "svm")
      ++kernels[model.parameters().at("kernel").category()];
  }
  EXPECT_NEAR(models["svm"], kSamples / 2.0, 200);
  EXPECT_NEAR(models["mlp"], kSamples / 2.0, 200);
  const int svm = models["svm"];
  ASSERT_EQ(kernels.size(), 3u);
  for (const auto& [kernel, count] : kernels) {
    EXPECT_NEAR(count, svm / 3.0, 150) << kernel;
  }
}

TEST(SearchSpaceSampleTest, SinglePointDomainsSampleThePoint) {
  v1::SearchSpace proto = HpoSpace();
  FirstParameter(proto)->mutable_float_domain()->set_low(1);
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space, SearchSpace::Create(proto));
  Rng rng(7);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(space.Sample(rng).assignments(0).parameters().at("lr").number(),
              1.0);
  }
}

TEST(SearchSpaceSampleTest, EqualSeedsGiveEqualSamples) {
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace space,
                               SearchSpace::Create(PipelineSpace()));
  Rng a(42);
  Rng b(42);
  Rng c(43);
  int differ = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string key = ConfigurationKey(space.Sample(a));
    EXPECT_EQ(key, ConfigurationKey(space.Sample(b)));
    differ += key != ConfigurationKey(space.Sample(c));
  }
  EXPECT_GT(differ, 90);
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
