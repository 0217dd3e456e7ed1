#include "core/surrogate/dida.h"

#include <cmath>
#include <vector>

#include "Eigen/Core"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

DidaArchitecture Small(int second_layer) {
  DidaArchitecture a;
  a.pair_width = 4;
  a.interaction = 5;
  a.second_layer = second_layer;
  a.hidden = 4;
  a.output = 3;
  return a;
}

RawSample RandomSample(int n, int m, int c, uint64_t seed) {
  space::Rng rng(seed);
  RawSample s;
  s.x.resize(n, m);
  s.y = Eigen::MatrixXd::Zero(n, c);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < m; ++j) s.x(i, j) = space::StandardNormal(rng);
    s.y(i, static_cast<int>(space::UniformIndex(rng, c))) = 1.0;
  }
  return s;
}

// Moves every parameter off the ReLU kinks that zero biases create.
void Jitter(Dida& dida, uint64_t seed) {
  space::Rng rng(seed);
  Eigen::VectorXd theta(dida.num_parameters());
  dida.GetParameters(theta);
  for (Eigen::Index i = 0; i < theta.size(); ++i) {
    theta[i] += 0.1 * space::StandardNormal(rng);
  }
  dida.SetParameters(theta);
}

class DidaLayersTest : public ::testing::TestWithParam<int> {};

TEST_P(DidaLayersTest, InvariantToRowFeatureAndClassOrder) {
  space::Rng rng(1);
  METAOPT_ASSERT_OK_AND_ASSIGN(Dida dida, Dida::Create(Small(GetParam()), rng));
  Jitter(dida, 11);
  const RawSample s = RandomSample(9, 4, 3, 2);
  const Eigen::VectorXd f = dida.Forward(s);
  ASSERT_EQ(f.size(), 3);
  const std::vector<int> rows = {8, 3, 0, 5, 1, 7, 2, 6, 4};
  const std::vector<int> cols = {2, 0, 3, 1};
  const std::vector<int> classes = {1, 2, 0};
  RawSample rows_permuted{s.x(rows, Eigen::all), s.y(rows, Eigen::all)};
  RawSample features_permuted{s.x(Eigen::all, cols), s.y};
  RawSample relabelled{s.x, s.y(Eigen::all, classes)};
  EXPECT_TRUE(dida.Forward(rows_permuted).isApprox(f, 1e-12));
  EXPECT_TRUE(dida.Forward(features_permuted).isApprox(f, 1e-12));
  EXPECT_TRUE(dida.Forward(relabelled).isApprox(f, 1e-12));
  // Any number of rows and features; a different dataset maps elsewhere.
  const Eigen::VectorXd other = dida.Forward(RandomSample(5, 7, 2, 3));
  ASSERT_EQ(other.size(), 3);
  EXPECT_GT((other - f).norm(), 1e-6);
  // The labels matter: the same x with other classes maps elsewhere.
  RawSample shuffled_labels{s.x, s.y(rows, Eigen::all)};
  EXPECT_GT((dida.Forward(shuffled_labels) - f).norm(), 1e-9);
}

// Every parameter block (u, v, the second layer, the head): a central finite
// difference of L = w . F(z) against Backward.
TEST_P(DidaLayersTest, GradientMatchesFiniteDifferences) {
  space::Rng rng(4);
  METAOPT_ASSERT_OK_AND_ASSIGN(Dida dida, Dida::Create(Small(GetParam()), rng));
  Jitter(dida, 5);
  Eigen::VectorXd theta(dida.num_parameters());
  dida.GetParameters(theta);
  const RawSample s = RandomSample(6, 3, 2, 6);
  const Eigen::VectorXd weights = Eigen::VectorXd::LinSpaced(3, -1.0, 2.0);
  Dida::Trace trace;
  const double value = weights.dot(dida.Forward(s, &trace));
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(theta.size());
  dida.Backward(trace, weights, grad);
  EXPECT_TRUE(std::isfinite(value));
  // Every block is reached (u: 2 x 4 + 4, v: 5 x 5 + 5, the second layer:
  // 10 x 6 + 6), so each is checked.
  const int second = GetParam() > 0 ? 10 * 6 + 6 : 0;
  EXPECT_GT(grad.segment(0, 12).norm(), 0);
  EXPECT_GT(grad.segment(12, 30).norm(), 0);
  if (second > 0) EXPECT_GT(grad.segment(42, second).norm(), 0);
  EXPECT_GT(grad.tail(theta.size() - 42 - second).norm(), 0);
  constexpr double kStep = 1e-6;
  for (Eigen::Index i = 0; i < theta.size(); ++i) {
    Eigen::VectorXd plus = theta, minus = theta;
    plus[i] += kStep;
    minus[i] -= kStep;
    dida.SetParameters(plus);
    const double f_plus = weights.dot(dida.Forward(s));
    dida.SetParameters(minus);
    const double f_minus = weights.dot(dida.Forward(s));
    const double numeric = (f_plus - f_minus) / (2 * kStep);
    EXPECT_NEAR(grad[i], numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
        << "parameter " << i << " of " << theta.size();
  }
}

TEST_P(DidaLayersTest, WriteReadRoundTrip) {
  space::Rng rng(7);
  METAOPT_ASSERT_OK_AND_ASSIGN(Dida dida, Dida::Create(Small(GetParam()), rng));
  Jitter(dida, 8);
  v1::ModelArtifact artifact;
  dida.Write("dida", &artifact);
  METAOPT_ASSERT_OK_AND_ASSIGN(Dida read, Dida::Read("dida", artifact));
  const RawSample s = RandomSample(7, 2, 1, 9);
  EXPECT_TRUE(read.Forward(s).isApprox(dida.Forward(s), 1e-12));
  (*artifact.mutable_int_options())["dida_hidden"] = 5;
  EXPECT_THAT(Dida::Read("dida", artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dida.head.layer0.weight")));
}

INSTANTIATE_TEST_SUITE_P(OneAndTwoInvariantLayers, DidaLayersTest,
                         ::testing::Values(0, 6));

TEST(DidaTest, RejectsBadArchitecture) {
  DidaArchitecture a = Small(0);
  a.pair_width = 0;
  space::Rng rng(1);
  EXPECT_THAT(Dida::Create(a, rng),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("widths (pair 0")));
  a = Small(-1);
  EXPECT_THAT(Dida::Create(a, rng),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("second layer's (-1)")));
}

}  // namespace
}  // namespace metaopt::surrogate
