// Configurations of a search space: canonicalization, keys and sampling.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/strings.h"
#include "core/space/search_space.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
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
using ::testing::HasSubstr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

v1::SearchSpace PipelineSpace() { return MixedPipelineSpace(); }

absl::StatusOr<v1::Configuration> CanonicalizeHpo(
    const v1::Configuration& config) {
  auto space = SearchSpace::Create(HpoSpace());
  EXPECT_THAT(space, IsOk());
  return space->Canonicalize(config, "configuration");
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

// The key's text as Quote and %.17g spell it (what keys were before the
// search built thousands per Suggest).
std::string ReferenceKey(const v1::Configuration& canonical) {
  std::string key;
  for (const v1::Assignment& assignment : canonical.assignments()) {
    absl::StrAppend(&key, Quote(assignment.stage()), "/",
                    Quote(assignment.algorithm()), "{");
    std::map<std::string, v1::ParameterValue> sorted(
        assignment.parameters().begin(), assignment.parameters().end());
    bool first = true;
    for (const auto& [name, value] : sorted) {
      absl::StrAppend(&key, first ? "" : ",", Quote(name), "=");
      first = false;
      if (value.has_number()) {
        absl::StrAppend(&key, absl::StrFormat("%.17g", value.number()));
      } else if (value.has_category()) {
        absl::StrAppend(&key, Quote(value.category()));
      } else {
        absl::StrAppend(&key, "?");
      }
    }
    absl::StrAppend(&key, "};");
  }
  return key;
}

TEST(SearchSpaceKeyTest, SpellsQuotedNamesAndRoundTrippingNumbers) {
  v1::Configuration config;
  v1::Assignment* a = config.add_assignments();
  a->set_stage("model");
  a->set_algorithm("xgb");
  (*a->mutable_parameters())["lr"].set_number(0.1);
  (*a->mutable_parameters())["depth"].set_number(6);
  (*a->mutable_parameters())["booster"].set_category("gbtree");
  EXPECT_EQ(ConfigurationKey(config),
            "\"model\"/\"xgb\"{\"booster\"=\"gbtree\",\"depth\"=6,"
            "\"lr\"=0.10000000000000001};");

  // Names and categories that need escaping or shortening, numbers at the
  // edges of the format, several assignments: as Quote and %.17g spell them.
  const std::vector<std::string> texts = {
      "", "a", "with space", "quote\"d", "apo'strophe", "back\\slash",
      "tab\there", "new\nline", std::string("nul\0byte", 8), "\x7f",
      "caf\xc3\xa9", std::string(80, 'x'), std::string(81, 'y'),
      std::string(79, 'z') + "\""};
  const std::vector<double> numbers = {
      0.0, -0.0, 1.0, -1.0, 1.0 / 3, 1e-300, 4.9e-324, 1e300,
      std::numeric_limits<double>::max(), 123456789012345678.0, 0.1 + 0.2,
      kInf, -kInf};
  Rng rng(5);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-70, 70);
  for (size_t t = 0; t < texts.size(); ++t) {
    v1::Configuration c;
    v1::Assignment* first = c.add_assignments();
    first->set_stage(texts[t]);
    first->set_algorithm(texts[(t + 1) % texts.size()]);
    for (size_t k = 0; k < numbers.size(); ++k) {
      (*first->mutable_parameters())[absl::StrCat(texts[(t + k) % texts.size()],
                                                  k)]
          .set_number(k % 2 == 0 ? numbers[k]
                                 : std::ldexp(unit(rng), exponent(rng)));
    }
    v1::Assignment* second = c.add_assignments();
    second->set_stage("s");
    (*second->mutable_parameters())[texts[t]].set_category(
        texts[(t + 2) % texts.size()]);
    (*second->mutable_parameters())["unset"];
    EXPECT_EQ(ConfigurationKey(c), ReferenceKey(c)) << "text " << t;
  }
  for (int i = 0; i < 2000; ++i) {
    v1::Configuration c;
    v1::Assignment* only = c.add_assignments();
    (*only->mutable_parameters())["x"].set_number(
        std::ldexp(unit(rng), exponent(rng)));
    ASSERT_EQ(ConfigurationKey(c), ReferenceKey(c));
  }
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

}  // namespace
}  // namespace metaopt::space
