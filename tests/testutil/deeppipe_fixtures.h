// Shared fixtures of the DeepPipe tests: a two-stage test space, random
// encoded data with a smooth target, a small architecture and two
// meta-features for conditioned models.
#ifndef METAOPT_TESTS_TESTUTIL_DEEPPIPE_FIXTURES_H_
#define METAOPT_TESTS_TESTUTIL_DEEPPIPE_FIXTURES_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "Eigen/Core"
#include "tests/testutil/test_artifacts.h"
#include "core/space/random.h"
#include "core/space/search_space.h"
#include "core/surrogate/deeppipe_model.h"
#include "gtest/gtest.h"

namespace metaopt::surrogate::deeppipe_testing {

// Two stages ("preprocessor": none | pca, "estimator": RF | GBT); "none" has
// no parameters, so its encoder reads the dummy column.
inline v1::SearchSpace TestSpace() {
  return registry::testing::TestSearchSpace();
}

// n random configurations of the test space, encoded, and a smooth target.
struct Data {
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
};

inline Data Sample(const DeepPipeModel& model, int n, uint64_t seed) {
  absl::StatusOr<space::SearchSpace> space =
      space::SearchSpace::Create(model.search_space());
  EXPECT_TRUE(space.ok()) << space.status();
  space::Rng rng(seed);
  std::vector<v1::Configuration> configs;
  for (int i = 0; i < n; ++i) configs.push_back(space->Sample(rng));
  Data d;
  d.X = model.encoder().EncodeBatch(configs);
  d.y.resize(n);
  for (int i = 0; i < n; ++i) {
    d.y[i] =
        std::sin(3.0 * d.X.row(i).sum()) + 0.1 * space::StandardNormal(rng);
  }
  return d;
}

inline DeepPipeArchitecture SmallArchitecture(int encoder_layers) {
  DeepPipeArchitecture arch;
  arch.encoder_layers = encoder_layers;
  arch.width_factor = 2;
  arch.hidden = 6;
  arch.embedding = 3;
  return arch;
}

// Two meta-features with training statistics, for conditioned models.
inline FeatureScaler TwoFeatures() {
  absl::StatusOr<FeatureScaler> scaler = FeatureScaler::Create(
      {"log_rows", "n_classes"}, Eigen::Vector2d(8.0, 3.0),
      Eigen::Vector2d(2.0, 1.5));
  EXPECT_TRUE(scaler.ok()) << scaler.status();
  return *scaler;
}

}  // namespace metaopt::surrogate::deeppipe_testing

#endif  // METAOPT_TESTS_TESTUTIL_DEEPPIPE_FIXTURES_H_
