#include "core/meta_training/dataset2vec_train.h"

#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/sample_families.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::train {
namespace {

using ::metaopt::testing::SampleFamily;
using ::metaopt::testing::StatusIs;
using surrogate::RawSample;
using ::testing::HasSubstr;

Dataset2VecTrainOptions SmallOptions() {
  Dataset2VecTrainOptions o;
  o.architecture.f_width = 16;
  o.architecture.g_width = 16;
  o.architecture.h_width = 16;
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

// Trained by dataset identification on one large sample per family,
// Dataset2Vec tells batches of fresh samples of the same generator from
// batches of another one: held-out accuracy well above chance and above the
// untrained network, and same-family batches nearer to each other.
TEST(Dataset2VecTrainTest, TellsDatasetFamiliesApart) {
  std::vector<RawSample> train;
  for (int f = 0; f < 4; ++f) train.push_back(SampleFamily(f, 200, 5, 100 + f));
  const Dataset2VecTrainOptions options = SmallOptions();
  METAOPT_ASSERT_OK_AND_ASSIGN(Dataset2VecFit fit,
                               TrainDataset2Vec(train, options, nullptr));
  std::vector<RawSample> fresh;
  for (int f = 0; f < 4; ++f) fresh.push_back(SampleFamily(f, 150, 4, 200 + f));
  space::Rng rng(7);
  const std::vector<PatchPair> pairs = DrawBatchPairs(fresh, 300, options, rng);
  const double accuracy =
      PairAccuracy(fit.d2v, pairs, PairDistance::kEuclidean, 1);
  EXPECT_GT(accuracy, 0.8);
  EXPECT_GT(accuracy, fit.initial_accuracy + 0.15);
  double same = 0, different = 0;
  int n_same = 0, n_different = 0;
  for (const PatchPair& p : pairs) {
    const double d =
        (fit.d2v.Forward(p.first) - fit.d2v.Forward(p.second)).norm();
    (p.same ? same : different) += d;
    ++(p.same ? n_same : n_different);
  }
  EXPECT_LT(same / n_same, 0.5 * different / n_different);
}

TEST(Dataset2VecTrainTest, DeterministicForASeedWhateverTheThreads) {
  std::vector<RawSample> train;
  for (int f = 0; f < 3; ++f) train.push_back(SampleFamily(f, 60, 3, 10 + f));
  Dataset2VecTrainOptions options = SmallOptions();
  options.epochs = 1;
  options.steps_per_epoch = 2;
  options.eval_pairs = 10;
  METAOPT_ASSERT_OK_AND_ASSIGN(Dataset2VecFit a,
                               TrainDataset2Vec(train, options, nullptr));
  options.threads = 2;
  METAOPT_ASSERT_OK_AND_ASSIGN(Dataset2VecFit b,
                               TrainDataset2Vec(train, options, nullptr));
  const RawSample s = SampleFamily(0, 20, 3, 99);
  EXPECT_EQ(a.d2v.Forward(s), b.d2v.Forward(s));
}

// A batch is a subset: rows and features in range, capped at the dataset's,
// without repeats; all targets kept. Pairs alternate positive and negative.
TEST(Dataset2VecTrainTest, BatchesAreSubsetsInRange) {
  const RawSample s = SampleFamily(0, 20, 3, 1);
  Dataset2VecTrainOptions options = SmallOptions();
  space::Rng rng(2);
  for (int i = 0; i < 20; ++i) {
    const RawSample batch = DrawBatch(s, options, rng);
    const int rows = static_cast<int>(batch.x.rows());
    EXPECT_GE(rows, 16);  // min_rows 16 .. 32, capped at n = 20
    EXPECT_LE(rows, 20);
    EXPECT_GE(batch.x.cols(), 2);
    EXPECT_LE(batch.x.cols(), 3);
    EXPECT_EQ(batch.y.cols(), 3);
    // No row of s twice (its values are continuous, so distinct rows differ).
    std::set<double> first_column;
    for (int r = 0; r < rows; ++r) first_column.insert(batch.x(r, 0));
    EXPECT_EQ(static_cast<int>(first_column.size()), rows);
  }
  const std::vector<RawSample> two = {s, SampleFamily(1, 20, 3, 2)};
  const std::vector<PatchPair> pairs = DrawBatchPairs(two, 6, options, rng);
  for (int p = 0; p < 6; ++p) EXPECT_EQ(pairs[p].same, p % 2 == 0);
}

TEST(Dataset2VecTrainTest, RejectsTooFewDatasetsAndBadOptions) {
  std::vector<RawSample> one = {SampleFamily(0, 30, 3, 1)};
  EXPECT_THAT(TrainDataset2Vec(one, SmallOptions(), nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at least two training datasets")));
  one.push_back(SampleFamily(1, 30, 3, 2));
  Dataset2VecTrainOptions options = SmallOptions();
  options.max_rows = 4;
  EXPECT_THAT(TrainDataset2Vec(one, options, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("batch rows [16, 4]")));
}

}  // namespace
}  // namespace metaopt::train
