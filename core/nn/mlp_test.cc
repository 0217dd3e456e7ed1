#include "core/nn/mlp.h"

#include <cmath>
#include <limits>
#include <vector>

#include "Eigen/Core"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::nn {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

Eigen::MatrixXd RandomMatrix(int rows, int cols, space::Rng& rng) {
  Eigen::MatrixXd m(rows, cols);
  for (int j = 0; j < cols; ++j) {
    for (int i = 0; i < rows; ++i) m(i, j) = space::StandardNormal(rng);
  }
  return m;
}

// A squared-error loss through the network: 0.5 ||f(X) - T||^2.
double Loss(const Mlp& mlp, const Eigen::MatrixXd& X,
            const Eigen::MatrixXd& T) {
  return 0.5 * (mlp.Forward(X) - T).squaredNorm();
}

// The double network's gradients, and those of its float copy (Cast, the
// meta-training path), against central differences of the double network,
// the float one with tolerances for float rounding (~1e-7 relative per
// operation).
TEST(MlpTest, GradientMatchesFiniteDifferences) {
  space::Rng rng(11);
  for (bool relu_on_output : {false, true}) {
    METAOPT_ASSERT_OK_AND_ASSIGN(Mlp mlp,
                                 Mlp::Create(3, {5, 4, 2}, relu_on_output));
    mlp.Initialize(InitScheme::kTorchDefault, rng);
    const Eigen::MatrixXd X = RandomMatrix(7, 3, rng);
    const Eigen::MatrixXd T = RandomMatrix(7, 2, rng);
    Mlp::Trace trace;
    const Eigen::MatrixXd Y = mlp.Forward(X, &trace);
    ASSERT_EQ(trace.outputs.size(), 4u);
    Eigen::VectorXd grad = Eigen::VectorXd::Zero(mlp.num_parameters());
    Eigen::MatrixXd dX;
    mlp.Backward(trace, Y - T, grad, &dX);

    const MlpF single = mlp.Cast<float>();
    ASSERT_EQ(single.num_parameters(), mlp.num_parameters());
    MlpF::Trace trace_f;
    const Eigen::MatrixXf Y_f = single.Forward(X.cast<float>(), &trace_f);
    EXPECT_LT((Y_f.cast<double>() - Y).cwiseAbs().maxCoeff(), 1e-5);
    Eigen::VectorXf grad_f = Eigen::VectorXf::Zero(mlp.num_parameters());
    Eigen::MatrixXf dX_f;
    single.Backward(trace_f, Y_f - T.cast<float>(), grad_f, &dX_f);

    Eigen::VectorXd params(mlp.num_parameters());
    mlp.GetParameters(params);
    const double h = 1e-6;
    for (int i = 0; i < params.size(); ++i) {
      Mlp probe = mlp;
      Eigen::VectorXd p = params;
      p[i] += h;
      probe.SetParameters(p);
      const double up = Loss(probe, X, T);
      p[i] -= 2 * h;
      probe.SetParameters(p);
      const double down = Loss(probe, X, T);
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(grad[i], numeric, 1e-5) << "parameter " << i;
      EXPECT_NEAR(grad_f[i], numeric, 2e-5 + 1e-5 * std::abs(numeric))
          << "float, parameter " << i;
    }
    for (int r = 0; r < X.rows(); ++r) {
      for (int c = 0; c < X.cols(); ++c) {
        Eigen::MatrixXd Xp = X;
        Xp(r, c) += h;
        const double up = Loss(mlp, Xp, T);
        Xp(r, c) -= 2 * h;
        const double down = Loss(mlp, Xp, T);
        const double numeric = (up - down) / (2 * h);
        EXPECT_NEAR(dX(r, c), numeric, 1e-5);
        EXPECT_NEAR(dX_f(r, c), numeric, 2e-5 + 1e-5 * std::abs(numeric));
      }
    }
  }
}

TEST(MlpTest, CastRoundsParametersAndKeepsTheShape) {
  space::Rng rng(4);
  METAOPT_ASSERT_OK_AND_ASSIGN(Mlp mlp, Mlp::Create(3, {4, 2}));
  mlp.Initialize(InitScheme::kAuto, rng);
  const MlpF single = mlp.Cast<float>();
  ASSERT_EQ(single.num_layers(), 2);
  EXPECT_EQ(single.input_dim(), 3);
  EXPECT_EQ(single.output_dim(), 2);
  EXPECT_EQ(single.layers()[0].activation(), Activation::kRelu);
  EXPECT_EQ(single.layers()[1].activation(), Activation::kLinear);
  Eigen::VectorXd params(mlp.num_parameters());
  mlp.GetParameters(params);
  Eigen::VectorXf params_f(single.num_parameters());
  single.GetParameters(params_f);
  EXPECT_EQ(params_f, params.cast<float>());
  // Widening back is exact; the values are the rounded ones.
  const Mlp wide = single.Cast<double>();
  Eigen::VectorXd params_wide(wide.num_parameters());
  wide.GetParameters(params_wide);
  EXPECT_EQ(params_wide, params_f.cast<double>());
  EXPECT_LT((params_wide - params).cwiseAbs().maxCoeff(), 1e-7);
  EXPECT_GT((params_wide - params).cwiseAbs().maxCoeff(), 0.0);
  // Serialization writes double values of the float network.
  std::vector<v1::Tensor> tensors, tensors_wide;
  single.AppendTensors("net", &tensors);
  wide.AppendTensors("net", &tensors_wide);
  ASSERT_EQ(tensors.size(), tensors_wide.size());
  for (size_t t = 0; t < tensors.size(); ++t) {
    EXPECT_EQ(tensors[t].SerializeAsString(),
              tensors_wide[t].SerializeAsString());
  }
}

TEST(MlpTest, BackwardAccumulatesIntoGradient) {
  space::Rng rng(2);
  METAOPT_ASSERT_OK_AND_ASSIGN(Mlp mlp, Mlp::Create(2, {3, 1}));
  mlp.Initialize(InitScheme::kAuto, rng);
  const Eigen::MatrixXd X = RandomMatrix(4, 2, rng);
  Mlp::Trace trace;
  const Eigen::MatrixXd Y = mlp.Forward(X, &trace);
  Eigen::VectorXd once = Eigen::VectorXd::Zero(mlp.num_parameters());
  mlp.Backward(trace, Y, once, nullptr);
  Eigen::VectorXd twice = Eigen::VectorXd::Zero(mlp.num_parameters());
  mlp.Backward(trace, Y, twice, nullptr);
  mlp.Backward(trace, Y, twice, nullptr);
  EXPECT_TRUE(twice.isApprox(2.0 * once));
}

// InputGradient is Backward's dX, bit for bit, in both scalars and for
// shapes large enough for Eigen's blocked products.
TEST(MlpTest, InputGradientIsBackwardsInputGradient) {
  space::Rng rng(5);
  for (bool relu_on_output : {false, true}) {
    METAOPT_ASSERT_OK_AND_ASSIGN(Mlp mlp,
                                 Mlp::Create(40, {64, 64, 20}, relu_on_output));
    mlp.Initialize(InitScheme::kTorchDefault, rng);
    const Eigen::MatrixXd X = RandomMatrix(27, 40, rng);
    const Eigen::MatrixXd dY = RandomMatrix(27, 20, rng);
    Mlp::Trace trace;
    mlp.Forward(X, &trace);
    Eigen::VectorXd grad = Eigen::VectorXd::Zero(mlp.num_parameters());
    Eigen::MatrixXd dX;
    mlp.Backward(trace, dY, grad, &dX);
    EXPECT_EQ(mlp.InputGradient(trace, dY), dX);
    EXPECT_GT(dX.norm(), 0.0);

    const MlpF single = mlp.Cast<float>();
    MlpF::Trace trace_f;
    single.Forward(X.cast<float>(), &trace_f);
    Eigen::VectorXf grad_f = Eigen::VectorXf::Zero(mlp.num_parameters());
    Eigen::MatrixXf dX_f;
    single.Backward(trace_f, dY.cast<float>(), grad_f, &dX_f);
    EXPECT_EQ(single.InputGradient(trace_f, dY.cast<float>()), dX_f);
  }
}

TEST(MlpTest, NoLayersIsTheIdentity) {
  METAOPT_ASSERT_OK_AND_ASSIGN(Mlp mlp, Mlp::Create(3, {}));
  EXPECT_EQ(mlp.output_dim(), 3);
  EXPECT_EQ(mlp.num_parameters(), 0);
  const Eigen::MatrixXd X = Eigen::MatrixXd::Random(2, 3);
  EXPECT_EQ(mlp.Forward(X), X);
}

TEST(MlpTest, CreateRejectsBadShapes) {
  EXPECT_THAT(Mlp::Create(-1, {2}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("< 0")));
  EXPECT_THAT(
      Mlp::Create(3, {4, 0}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("layer 1 is 0")));
}

TEST(MlpTest, TensorsRoundTrip) {
  space::Rng rng(5);
  METAOPT_ASSERT_OK_AND_ASSIGN(Mlp mlp, Mlp::Create(3, {4, 2}));
  mlp.Initialize(InitScheme::kTorchDefault, rng);
  std::vector<v1::Tensor> tensors;
  mlp.AppendTensors("agg", &tensors);
  ASSERT_EQ(tensors.size(), 4u);
  EXPECT_EQ(tensors[0].name(), "agg.layer0.weight");
  EXPECT_THAT(tensors[0].shape(), ::testing::ElementsAre(4, 3));
  // Row-major [out, in]: element (o, i) is W(i, o).
  EXPECT_DOUBLE_EQ(tensors[0].values(1 * 3 + 2),
                   mlp.layers()[0].weight()(2, 1));
  EXPECT_EQ(tensors[3].name(), "agg.layer1.bias");

  v1::ModelArtifact artifact;
  for (const v1::Tensor& t : tensors) *artifact.add_tensors() = t;
  METAOPT_ASSERT_OK_AND_ASSIGN(TensorMap map, IndexTensors(artifact.tensors()));
  METAOPT_ASSERT_OK_AND_ASSIGN(Mlp copy, Mlp::Create(3, {4, 2}));
  METAOPT_ASSERT_OK(copy.ReadTensors("agg", map));
  const Eigen::MatrixXd X = RandomMatrix(5, 3, rng);
  EXPECT_EQ(copy.Forward(X), mlp.Forward(X));
}

TEST(MlpTest, ReadTensorsRejectsBadTensorsAndLeavesNetworkUnchanged) {
  space::Rng rng(5);
  METAOPT_ASSERT_OK_AND_ASSIGN(Mlp mlp, Mlp::Create(3, {4, 2}));
  mlp.Initialize(InitScheme::kTorchDefault, rng);
  std::vector<v1::Tensor> tensors;
  mlp.AppendTensors("agg", &tensors);
  METAOPT_ASSERT_OK_AND_ASSIGN(Mlp target, Mlp::Create(3, {4, 2}));
  const Eigen::MatrixXd before = target.layers()[0].weight();

  {  // Missing tensor.
    v1::ModelArtifact a;
    for (size_t i = 0; i + 1 < tensors.size(); ++i)
      *a.add_tensors() = tensors[i];
    METAOPT_ASSERT_OK_AND_ASSIGN(TensorMap map, IndexTensors(a.tensors()));
    EXPECT_THAT(target.ReadTensors("agg", map),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("\"agg.layer1.bias\": missing")));
  }
  {  // Wrong shape.
    v1::ModelArtifact a;
    for (const v1::Tensor& t : tensors) *a.add_tensors() = t;
    a.mutable_tensors(2)->set_shape(0, 3);
    METAOPT_ASSERT_OK_AND_ASSIGN(TensorMap map, IndexTensors(a.tensors()));
    EXPECT_THAT(target.ReadTensors("agg", map),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("shape [3, 4], expected [2, 4]")));
  }
  {  // Non-finite value.
    v1::ModelArtifact a;
    for (const v1::Tensor& t : tensors) *a.add_tensors() = t;
    a.mutable_tensors(1)->set_values(0,
                                     std::numeric_limits<double>::quiet_NaN());
    METAOPT_ASSERT_OK_AND_ASSIGN(TensorMap map, IndexTensors(a.tensors()));
    EXPECT_THAT(
        target.ReadTensors("agg", map),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not finite")));
  }
  {  // Too few values.
    v1::ModelArtifact a;
    for (const v1::Tensor& t : tensors) *a.add_tensors() = t;
    a.mutable_tensors(0)->mutable_values()->RemoveLast();
    METAOPT_ASSERT_OK_AND_ASSIGN(TensorMap map, IndexTensors(a.tensors()));
    EXPECT_THAT(target.ReadTensors("agg", map),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("12 elements but 11 values")));
  }
  EXPECT_EQ(target.layers()[0].weight(), before);
}

TEST(TensorIoTest, IndexTensorsRejectsDuplicatesAndEmptyNames) {
  v1::ModelArtifact a;
  a.add_tensors()->set_name("w");
  a.add_tensors()->set_name("w");
  EXPECT_THAT(IndexTensors(a.tensors()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensors[1]: duplicate name \"w\"")));
  a.mutable_tensors(1)->set_name("");
  EXPECT_THAT(IndexTensors(a.tensors()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensors[1]: empty name")));
}

}  // namespace
}  // namespace metaopt::nn
