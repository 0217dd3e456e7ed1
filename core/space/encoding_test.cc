#include "core/space/encoding.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "core/space/search_space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metaopt/v1/study.pb.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::space {
namespace {

using ::metaopt::testing::ParseTextProto;

// Layout (offsets): preprocess: none [] pca [0: n_components, 1-2: whiten]
// one-hot [3-4]; model: svm [5: C, 6-8: kernel] mlp [9: lr, 10: layers, 11:
// dropout] one-hot [12-13].
SearchSpace PipelineSpace() {
  auto space = SearchSpace::Create(::metaopt::testing::MixedPipelineSpace());
  EXPECT_THAT(space, ::metaopt::testing::IsOk());
  return *std::move(space);
}

// One stage with one algorithm; "momentum" is a single-point domain.
SearchSpace HpoSpace() {
  auto space = SearchSpace::Create(ParseTextProto<v1::SearchSpace>(R"pb(
    stages {
      name: "train"
      algorithms {
        name: "sgd"
        parameters {
          name: "lr"
          float_domain { low: -2 high: 3 }
        }
        parameters {
          name: "momentum"
          float_domain { low: 0.9 high: 0.9 }
        }
      }
    }
  )pb"));
  EXPECT_THAT(space, ::metaopt::testing::IsOk());
  return *std::move(space);
}

// The configuration of the layout comment: pca(2, "no") + mlp(1e-3, 3, 0.1).
v1::Configuration PcaMlp() {
  return ParseTextProto<v1::Configuration>(R"pb(
    assignments {
      stage: "preprocess"
      algorithm: "pca"
      parameters {
        key: "n_components"
        value { number: 2 }
      }
      parameters {
        key: "whiten"
        value { category: "no" }
      }
    }
    assignments {
      stage: "model"
      algorithm: "mlp"
      parameters {
        key: "lr"
        value { number: 1e-3 }
      }
      parameters {
        key: "layers"
        value { number: 3 }
      }
      parameters {
        key: "dropout"
        value { number: 0.1 }
      }
    }
  )pb");
}

// Checks that `actual` is `expected` with non-integer numbers equal up to 1e-9
// relative.
void ExpectSameConfiguration(const v1::Configuration& expected,
                             const v1::Configuration& actual) {
  ASSERT_EQ(actual.assignments_size(), expected.assignments_size());
  for (int s = 0; s < expected.assignments_size(); ++s) {
    const v1::Assignment& e = expected.assignments(s);
    const v1::Assignment& a = actual.assignments(s);
    EXPECT_EQ(a.stage(), e.stage());
    ASSERT_EQ(a.algorithm(), e.algorithm());
    ASSERT_EQ(a.parameters().size(), e.parameters().size());
    for (const auto& [name, value] : e.parameters()) {
      const v1::ParameterValue& got = a.parameters().at(name);
      ASSERT_EQ(got.kind_case(), value.kind_case()) << name;
      if (value.kind_case() == v1::ParameterValue::kCategory) {
        EXPECT_EQ(got.category(), value.category()) << name;
      } else if (value.number() == std::floor(value.number())) {
        EXPECT_EQ(got.number(), value.number()) << name;
      } else {
        EXPECT_NEAR(got.number(), value.number(),
                    1e-9 * std::abs(value.number()))
            << name;
      }
    }
  }
}

TEST(EncoderTest, LayoutOfPipelineSpace) {
  const Encoder encoder(PipelineSpace());
  const EncodingLayout& layout = encoder.layout();
  EXPECT_EQ(encoder.dimension(), 14);
  EXPECT_EQ(layout.dimension, 14);
  ASSERT_EQ(layout.blocks.size(), 4u);
  const int expected_blocks[4][4] = {
      {0, 0, 0, 0}, {0, 1, 0, 3}, {1, 0, 5, 4}, {1, 1, 9, 3}};
  for (int b = 0; b < 4; ++b) {
    EXPECT_EQ(layout.blocks[b].stage, expected_blocks[b][0]) << b;
    EXPECT_EQ(layout.blocks[b].algorithm, expected_blocks[b][1]) << b;
    EXPECT_EQ(layout.blocks[b].offset, expected_blocks[b][2]) << b;
    EXPECT_EQ(layout.blocks[b].size, expected_blocks[b][3]) << b;
  }
  EXPECT_EQ(layout.block(1, 1).offset, 9);
  ASSERT_EQ(layout.stages.size(), 2u);
  EXPECT_EQ(layout.stages[0].offset, 3);
  EXPECT_EQ(layout.stages[0].size, 2);
  EXPECT_EQ(layout.stages[1].offset, 12);
  EXPECT_EQ(layout.stages[1].size, 2);
  ASSERT_EQ(layout.parameters.size(), 7u);
  EXPECT_EQ(layout.parameters[1].offset, 1);  // whiten
  EXPECT_EQ(layout.parameters[1].size, 2);
  EXPECT_EQ(layout.parameters[3].offset, 6);  // kernel
  EXPECT_EQ(layout.parameters[3].size, 3);
  EXPECT_EQ(layout.parameters[6].stage, 1);  // dropout
  EXPECT_EQ(layout.parameters[6].algorithm, 1);
  EXPECT_EQ(layout.parameters[6].parameter, 2);
  EXPECT_EQ(layout.parameters[6].offset, 11);
}

TEST(EncoderTest, SingleAlgorithmStageKeepsItsOneHot) {
  const Encoder encoder(HpoSpace());
  EXPECT_EQ(encoder.dimension(), 3);
  ASSERT_EQ(encoder.layout().stages.size(), 1u);
  EXPECT_EQ(encoder.layout().stages[0].offset, 2);
  EXPECT_EQ(encoder.layout().stages[0].size, 1);
}

TEST(EncoderTest, EncodesKnownConfiguration) {
  const Encoder encoder(PipelineSpace());
  Eigen::VectorXd expected = Eigen::VectorXd::Zero(14);
  expected[0] = 1.0 / 3.0;  // log10(2) / log10(8).
  expected[2] = 1.0;        // whiten = "no".
  expected[4] = 1.0;        // preprocess = pca.
  expected[9] = 0.4;        // lr: (-3 - -5) / 5.
  expected[10] = 0.5;       // layers: (3 - 1) / 4.
  expected[11] = 0.2;       // dropout: 0.1 / 0.5.
  expected[13] = 1.0;       // model = mlp.
  const Eigen::VectorXd x = encoder.Encode(PcaMlp());
  ASSERT_EQ(x.size(), 14);
  for (int i = 0; i < 14; ++i)
    EXPECT_NEAR(x[i], expected[i], 1e-12) << "dimension " << i;
}

TEST(EncoderTest, SinglePointDomainEncodesAsHalf) {
  const SearchSpace space = HpoSpace();
  const Encoder encoder(space);
  Rng rng(1);
  const v1::Configuration config = space.Sample(rng);
  const Eigen::VectorXd x = encoder.Encode(config);
  EXPECT_EQ(x[1], 0.5);
  EXPECT_EQ(x[2], 1.0);
  EXPECT_EQ(
      encoder.Decode(x).assignments(0).parameters().at("momentum").number(),
      0.9);
}

// Found by the study_spec_text fuzzer: a single-point domain written as low
// -0 decoded to -0, whose key differs from the canonical +0.
TEST(EncoderTest, DecodeOfANegativeZeroPointDomainIsCanonical) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      const SearchSpace space,
      SearchSpace::Create(ParseTextProto<v1::SearchSpace>(R"pb(
        stages {
          name: "s"
          algorithms {
            name: "a"
            parameters {
              name: "x"
              float_domain { low: -0.0 high: 0 }
            }
          }
        }
      )pb")));
  const Encoder encoder(space);
  Rng rng(1);
  const v1::Configuration sample = space.Sample(rng);
  const v1::Configuration decoded = encoder.Decode(encoder.Encode(sample));
  const double x = decoded.assignments(0).parameters().at("x").number();
  EXPECT_EQ(x, 0.0);
  EXPECT_FALSE(std::signbit(x));
  EXPECT_EQ(ConfigurationKey(decoded), ConfigurationKey(sample));
  METAOPT_ASSERT_OK_AND_ASSIGN(const v1::Configuration canonical,
                               space.Canonicalize(decoded, "configuration"));
  EXPECT_EQ(ConfigurationKey(canonical), ConfigurationKey(decoded));
}

TEST(EncoderTest, RoundTripsSampledConfigurations) {
  const SearchSpace space = PipelineSpace();
  const Encoder encoder(space);
  Rng rng(2);
  for (int i = 0; i < 2000; ++i) {
    const v1::Configuration config = space.Sample(rng);
    ExpectSameConfiguration(config, encoder.Decode(encoder.Encode(config)));
    if (HasFatalFailure()) return;
  }
}

TEST(EncoderTest, RoundTripsNegativeAndBoundaryValues) {
  const SearchSpace space = HpoSpace();
  const Encoder encoder(space);
  for (double lr : {-2.0, -1.25, 0.0, 1e-7, 3.0}) {
    v1::Configuration config;
    v1::Assignment* a = config.add_assignments();
    a->set_stage("train");
    a->set_algorithm("sgd");
    (*a->mutable_parameters())["lr"].set_number(lr);
    (*a->mutable_parameters())["momentum"].set_number(0.9);
    const v1::Configuration decoded = encoder.Decode(encoder.Encode(config));
    EXPECT_NEAR(decoded.assignments(0).parameters().at("lr").number(), lr,
                1e-12);
  }
}

TEST(EncoderTest, InactiveBlocksAreZeroAndOneHotsSumToOne) {
  const SearchSpace space = PipelineSpace();
  const Encoder encoder(space);
  const EncodingLayout& layout = encoder.layout();
  Rng rng(3);
  for (int i = 0; i < 500; ++i) {
    const Eigen::VectorXd x = encoder.Encode(space.Sample(rng));
    EXPECT_GE(x.minCoeff(), 0.0);
    EXPECT_LE(x.maxCoeff(), 1.0);
    for (const StageLayout& stage : layout.stages) {
      const auto one_hot = x.segment(stage.offset, stage.size);
      ASSERT_EQ(one_hot.sum(), 1.0);
      Eigen::Index chosen;
      one_hot.maxCoeff(&chosen);
      for (int a = 0; a < stage.size; ++a) {
        const BlockLayout& block = layout.block(stage.stage, a);
        if (a == chosen) continue;
        EXPECT_TRUE(x.segment(block.offset, block.size).isZero(0.0))
            << "stage " << stage.stage << " inactive algorithm " << a;
      }
    }
    // The categoricals of active algorithms are one-hot too.
    for (const ParameterLayout& p : layout.parameters) {
      if (p.size < 2) continue;
      const double active = x[layout.stages[p.stage].offset + p.algorithm];
      EXPECT_EQ(x.segment(p.offset, p.size).sum(), active);
    }
  }
}

TEST(EncoderTest, EncodeBatchRowsMatchEncode) {
  const SearchSpace space = PipelineSpace();
  const Encoder encoder(space);
  Rng rng(4);
  std::vector<v1::Configuration> configs;
  for (int i = 0; i < 20; ++i) configs.push_back(space.Sample(rng));
  const Eigen::MatrixXd batch = encoder.EncodeBatch(configs);
  ASSERT_EQ(batch.rows(), 20);
  ASSERT_EQ(batch.cols(), encoder.dimension());
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(
        batch.row(i).transpose().isApprox(encoder.Encode(configs[i]), 0.0))
        << i;
  }
  EXPECT_EQ(encoder.EncodeBatch({}).rows(), 0);
}

TEST(EncoderTest, DecodeMapsAnyPointToAValidConfiguration) {
  const SearchSpace space = PipelineSpace();
  const Encoder encoder(space);
  Eigen::VectorXd x = Eigen::VectorXd::Constant(14, 0.3);
  x[4] = 0.31;  // preprocess: pca by a hair.
  x[12] = 0.9;  // model: svm.
  x[0] = -4.0;  // n_components below the cube.
  x[5] = 7.0;   // C above the cube.
  x[6] = std::numeric_limits<double>::quiet_NaN();  // kernel: NaN never wins...
  x[7] = 0.2;                                       // ...so "poly" (0.3) does.
  const v1::Configuration decoded = encoder.Decode(x);
  EXPECT_THAT(space.Canonicalize(decoded, "decoded"),
              ::metaopt::testing::IsOk());
  ASSERT_EQ(decoded.assignments(0).algorithm(), "pca");
  EXPECT_EQ(decoded.assignments(0).parameters().at("n_components").number(), 1);
  EXPECT_EQ(decoded.assignments(0).parameters().at("whiten").category(),
            "yes");  // Tie: first.
  ASSERT_EQ(decoded.assignments(1).algorithm(), "svm");
  EXPECT_EQ(decoded.assignments(1).parameters().at("C").number(), 1e3);
  EXPECT_EQ(decoded.assignments(1).parameters().at("kernel").category(),
            "poly");

  // Random points of the cube decode to valid configurations.
  Rng rng(5);
  for (int i = 0; i < 1000; ++i) {
    for (int d = 0; d < x.size(); ++d) x[d] = Uniform01(rng);
    EXPECT_THAT(space.Canonicalize(encoder.Decode(x), "decoded"),
                ::metaopt::testing::IsOk());
  }
}

TEST(EncoderNeighborTest, StaysValid) {
  const SearchSpace space = PipelineSpace();
  const Encoder encoder(space);
  Rng rng(6);
  v1::Configuration config = space.Sample(rng);
  for (int i = 0; i < 5000; ++i) {
    config = encoder.Neighbor(config, 0.3, rng);
    auto canonical = space.Canonicalize(config, "neighbor");
    ASSERT_THAT(canonical, ::metaopt::testing::IsOk());
    ASSERT_EQ(ConfigurationKey(*canonical), ConfigurationKey(config));
  }
}

TEST(EncoderNeighborTest, SwitchesAndFlipsWithTheDocumentedProbabilities) {
  const SearchSpace space = PipelineSpace();
  const Encoder encoder(space);
  const v1::Configuration start = PcaMlp();
  Rng rng(7);
  constexpr int kTrials = 20000;
  int model_switches = 0;
  int whiten_flips = 0;
  int pca_kept = 0;
  for (int i = 0; i < kTrials; ++i) {
    const v1::Configuration next = encoder.Neighbor(start, 0.0, rng);
    if (next.assignments(1).algorithm() != "mlp") {
      ++model_switches;
    } else {
      // Without a step, numbers stay exactly as they were.
      EXPECT_EQ(next.assignments(1).parameters().at("lr").number(), 1e-3);
      EXPECT_EQ(next.assignments(1).parameters().at("layers").number(), 3);
      EXPECT_EQ(next.assignments(1).parameters().at("dropout").number(), 0.1);
    }
    if (next.assignments(0).algorithm() == "pca") {
      ++pca_kept;
      whiten_flips +=
          next.assignments(0).parameters().at("whiten").category() != "no";
    }
  }
  EXPECT_NEAR(static_cast<double>(model_switches) / kTrials,
              Encoder::kSwitchAlgorithmProbability, 0.01);
  EXPECT_NEAR(static_cast<double>(pca_kept) / kTrials,
              1 - Encoder::kSwitchAlgorithmProbability, 0.01);
  EXPECT_NEAR(static_cast<double>(whiten_flips) / pca_kept,
              Encoder::kFlipCategoryProbability, 0.015);
}

TEST(EncoderNeighborTest, StepsAreLocalInTheCube) {
  const SearchSpace space = PipelineSpace();
  const Encoder encoder(space);
  const v1::Configuration start = PcaMlp();
  const Eigen::VectorXd x0 = encoder.Encode(start);
  Rng rng(8);
  double sum_abs_step = 0;
  int count = 0;
  for (int i = 0; i < 5000; ++i) {
    const v1::Configuration next = encoder.Neighbor(start, 0.01, rng);
    if (next.assignments(1).algorithm() != "mlp") continue;
    const Eigen::VectorXd x = encoder.Encode(next);
    EXPECT_LT(std::abs(x[9] - x0[9]), 0.06);    // lr, 6 sd.
    EXPECT_LT(std::abs(x[11] - x0[11]), 0.06);  // dropout.
    sum_abs_step += std::abs(x[11] - x0[11]);
    ++count;
  }
  // E|N(0, sd^2)| = sd * sqrt(2 / pi).
  EXPECT_NEAR(sum_abs_step / count, 0.01 * std::sqrt(2 / 3.141592653589793),
              0.001);
}

TEST(EncoderNeighborTest, EqualSeedsGiveEqualNeighbors) {
  const SearchSpace space = PipelineSpace();
  const Encoder encoder(space);
  Rng a(9);
  Rng b(9);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(ConfigurationKey(encoder.Neighbor(PcaMlp(), 0.1, a)),
              ConfigurationKey(encoder.Neighbor(PcaMlp(), 0.1, b)));
  }
}

}  // namespace
}  // namespace metaopt::space
