#include "core/meta_training/dida_train.h"

#include <cmath>
#include <functional>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/sample_families.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::train {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;
using surrogate::RawSample;

RawSample Family(int family, int n, int m, uint64_t seed) {
  return testing::SampleFamily(family, n, m, seed);
}

DidaTrainOptions SmallOptions() {
  DidaTrainOptions o;
  o.architecture.pair_width = 8;
  o.architecture.interaction = 16;
  o.architecture.second_layer = 16;
  o.architecture.hidden = 32;
  o.architecture.output = 8;
  o.epochs = 12;
  o.steps_per_epoch = 15;
  o.min_rows = 16;
  o.max_rows = 32;
  o.min_features = 2;
  o.max_features = 4;
  o.eval_pairs = 200;
  o.seed = 3;
  return o;
}

// Trained on one large sample per family, Dida tells patches of fresh
// samples of the same generator from patches of another one: held-out
// identification accuracy well above chance and above the untrained network.
TEST(DidaTrainTest, TellsDatasetFamiliesApart) {
  std::vector<RawSample> train;
  for (int f = 0; f < 4; ++f) train.push_back(Family(f, 200, 5, 100 + f));
  const DidaTrainOptions options = SmallOptions();
  METAOPT_ASSERT_OK_AND_ASSIGN(DidaFit fit,
                               TrainDida(train, options, nullptr));
  std::vector<RawSample> fresh;
  for (int f = 0; f < 4; ++f) fresh.push_back(Family(f, 150, 4, 200 + f));
  space::Rng rng(7);
  const std::vector<PatchPair> pairs = DrawPairs(fresh, 300, options, rng);
  const double accuracy = IdentificationAccuracy(fit.dida, pairs);
  EXPECT_GT(accuracy, 0.8);
  EXPECT_GT(accuracy, fit.initial_accuracy + 0.15);
  // Patches of one family are nearer to each other than to another's.
  double same = 0, different = 0;
  int n_same = 0, n_different = 0;
  for (const PatchPair& p : pairs) {
    const double d = (fit.dida.Forward(p.first) - fit.dida.Forward(p.second))
                         .norm();
    (p.same ? same : different) += d;
    ++(p.same ? n_same : n_different);
  }
  EXPECT_LT(same / n_same, 0.5 * different / n_different);
}

TEST(DidaTrainTest, DeterministicForASeedWhateverTheThreads) {
  std::vector<RawSample> train;
  for (int f = 0; f < 3; ++f) train.push_back(Family(f, 60, 3, 10 + f));
  DidaTrainOptions options = SmallOptions();
  options.epochs = 1;
  options.steps_per_epoch = 2;
  options.eval_pairs = 10;
  METAOPT_ASSERT_OK_AND_ASSIGN(DidaFit a, TrainDida(train, options, nullptr));
  options.threads = 2;
  METAOPT_ASSERT_OK_AND_ASSIGN(DidaFit b, TrainDida(train, options, nullptr));
  const RawSample s = Family(0, 20, 3, 99);
  EXPECT_EQ(a.dida.Forward(s), b.dida.Forward(s));
}

TEST(DidaTrainTest, PatchesDrawRowsAndFeaturesInRange) {
  const RawSample s = Family(0, 50, 6, 1);
  DidaTrainOptions options = SmallOptions();
  space::Rng rng(2);
  for (int i = 0; i < 20; ++i) {
    const RawSample patch = DrawPatch(s, options, rng);
    EXPECT_GE(patch.x.rows(), options.min_rows);
    EXPECT_LE(patch.x.rows(), options.max_rows);
    EXPECT_GE(patch.x.cols(), options.min_features);
    EXPECT_LE(patch.x.cols(), options.max_features);
    EXPECT_EQ(patch.y.rows(), patch.x.rows());
  }
}

// The chapter's label rule: a positive pair's patches have as many rows, and
// every other negative pair is one dataset at two sizes.
TEST(DidaTrainTest, EqualRowsTiesTheLabelToThePatchSizes) {
  std::vector<RawSample> data;
  for (int f = 0; f < 3; ++f) data.push_back(Family(f, 40, 3, 30 + f));
  DidaTrainOptions options = SmallOptions();
  options.equal_rows = true;
  space::Rng rng(5);
  int negatives_resized = 0;
  for (const PatchPair& p : DrawPairs(data, 40, options, rng)) {
    const bool same_rows = p.first.x.rows() == p.second.x.rows();
    if (p.same) EXPECT_TRUE(same_rows);
    if (!p.same && !same_rows) ++negatives_resized;
  }
  EXPECT_GE(negatives_resized, 10);  // at least the one-dataset negatives
  // Without the rule, positive pairs mostly differ in size.
  options.equal_rows = false;
  int positives_resized = 0;
  for (const PatchPair& p : DrawPairs(data, 40, options, rng)) {
    positives_resized += p.same && p.first.x.rows() != p.second.x.rows();
  }
  EXPECT_GE(positives_resized, 10);
  options.equal_rows = true;
  options.max_rows = options.min_rows;
  EXPECT_THAT(TrainDida(data, options, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("equal_rows needs patch rows [16, 16]")));
}

TEST(DidaTrainTest, RejectsTooFewDatasetsAndBadOptions) {
  std::vector<RawSample> one = {Family(0, 30, 3, 1)};
  EXPECT_THAT(TrainDida(one, SmallOptions(), nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at least two training datasets")));
  one.push_back(Family(1, 30, 3, 2));
  DidaTrainOptions options = SmallOptions();
  options.max_rows = 4;
  EXPECT_THAT(TrainDida(one, options, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("patch rows [16, 4]")));
}

}  // namespace
}  // namespace metaopt::train
