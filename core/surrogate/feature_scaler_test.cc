#include "core/surrogate/feature_scaler.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metaopt/v1/model.pb.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(FeatureScalerTest, StandardizesImputesAndClips) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      FeatureScaler scaler,
      FeatureScaler::Create({"a", "b", "c", "d"},
                            Eigen::Vector4d(1.0, 10.0, 0.0, 5.0),
                            Eigen::Vector4d(2.0, 1.0, 0.0, 1.0)));
  const std::map<std::string, double> raw = {
      {"a", 4.0}, {"b", 1e6}, {"c", 3.0}, {"d", std::nan("")}, {"zz", 1.0}};
  std::vector<std::string> imputed;
  const Eigen::VectorXd z = scaler.Standardize(raw, &imputed);
  // a: (4 - 1) / 2; b: clipped; c: no spread; d: not finite, imputed.
  EXPECT_EQ(z, Eigen::Vector4d(1.5, FeatureScaler::kClip, 0.0, 0.0));
  EXPECT_THAT(imputed, ElementsAre("d"));
  EXPECT_EQ(scaler.Standardize(std::map<std::string, double>(), nullptr),
            Eigen::Vector4d::Zero());
}

TEST(FeatureScalerTest, RoundTripsThroughTheNormalizationMap) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      FeatureScaler scaler,
      FeatureScaler::Create({"n_rows", "ratio"}, Eigen::Vector2d(7.5, 0.25),
                            Eigen::Vector2d(1.5, 0.125)));
  v1::ModelArtifact artifact;
  (*artifact.mutable_normalization())["noise_floor"] = 1e-4;
  scaler.WriteTo(artifact.mutable_normalization());
  METAOPT_ASSERT_OK_AND_ASSIGN(
      FeatureScaler read, FeatureScaler::ReadFrom(artifact.normalization()));
  EXPECT_EQ(read.names(), scaler.names());
  EXPECT_EQ(read.means(), scaler.means());
  EXPECT_EQ(read.stds(), scaler.stds());
  // No statistics: no features.
  METAOPT_ASSERT_OK_AND_ASSIGN(
      FeatureScaler none,
      FeatureScaler::ReadFrom(v1::ModelArtifact().normalization()));
  EXPECT_TRUE(none.empty());
}

TEST(FeatureScalerTest, RejectsInconsistentStatistics) {
  EXPECT_THAT(FeatureScaler::Create({"b", "a"}, Eigen::Vector2d::Zero(),
                                    Eigen::Vector2d::Ones())
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sorted and distinct; name 1 is \"a\"")));
  EXPECT_THAT(FeatureScaler::Create({"a"}, Eigen::VectorXd::Zero(2),
                                    Eigen::VectorXd::Ones(1))
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("need 1 finite means")));
  v1::ModelArtifact artifact;
  (*artifact.mutable_normalization())["feature_std/x"] = 1.0;
  EXPECT_THAT(FeatureScaler::ReadFrom(artifact.normalization()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("feature_mean/x\"]: missing")));
}

}  // namespace
}  // namespace metaopt::surrogate
