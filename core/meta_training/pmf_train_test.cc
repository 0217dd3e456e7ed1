#include "core/meta_training/pmf_train.h"

#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testutil/meta_dataset_folders.h"
#include "tests/testutil/synthetic_pmf.h"
#include "core/meta_training/train_main.h"
#include "core/registry/artifact.h"
#include "core/surrogate/pmf_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::train {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;
using testing::SyntheticPmfDataset;
using testing::SyntheticPmfOptions;

struct Split {
  meta::MetaDataset data;
  std::vector<const meta::Task*> train, valid, test;
};

std::unique_ptr<Split> MakeSplit(const SyntheticPmfOptions& options = {}) {
  auto split = std::make_unique<Split>();
  split->data = SyntheticPmfDataset(options);
  split->train = *split->data.TasksOfSplit("train");
  split->valid = *split->data.TasksOfSplit("valid");
  split->test = *split->data.TasksOfSplit("test");
  return split;
}

TEST(BuildPmfProblemTest, CatalogueColumnsAndStandardisation) {
  std::unique_ptr<Split> s = MakeSplit();
  METAOPT_ASSERT_OK_AND_ASSIGN(PmfProblem problem,
                               BuildPmfProblem(s->data, s->train, s->valid));
  EXPECT_EQ(problem.catalogue.size(), 40u);  // every entry seen somewhere
  ASSERT_EQ(problem.train.size(), 30u);
  ASSERT_EQ(problem.valid.size(), 6u);
  double sum = 0, sum_sq = 0;
  int count = 0;
  for (size_t t = 0; t < problem.train.size(); ++t) {
    const PmfColumn& column = problem.train[t];
    EXPECT_EQ(column.task_id, s->train[t]->id);
    ASSERT_EQ(column.entries.size(), s->train[t]->y.size());
    // Targets are the standardised y (goal minimize).
    EXPECT_NEAR(column.targets[0] * problem.y_std + problem.y_mean,
                s->train[t]->y[0], 1e-12);
    sum += column.targets.sum();
    sum_sq += column.targets.squaredNorm();
    count += column.targets.size();
  }
  EXPECT_NEAR(sum / count, 0.0, 1e-9);
  EXPECT_NEAR(sum_sq / (count - 1), 1.0, 1e-9);
  EXPECT_EQ(problem.valid[0].entries.size(), 40u);  // valid tasks are full
}

TEST(TrainPmfModelTest, ReducesNllAndThePosteriorBeatsThePriorOnHeldOutTasks) {
  std::unique_ptr<Split> s = MakeSplit();
  METAOPT_ASSERT_OK_AND_ASSIGN(PmfProblem problem,
                               BuildPmfProblem(s->data, s->train, s->valid));
  PmfTrainOptions options;
  options.latent_dim = 3;
  options.epochs = 60;
  options.batch_datasets = 10;
  options.learning_rate = 0.03;
  PmfTrainReport report;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      surrogate::PmfModel model,
      TrainPmfModel(problem, options, nullptr, &report));
  EXPECT_EQ(report.epochs_run, 60);
  EXPECT_EQ(report.steps, 60 * 3);
  EXPECT_GT(report.best_epoch, 0);
  EXPECT_LT(report.train_nll, report.initial_train_nll - 0.5);
  EXPECT_LT(report.valid_nll, report.initial_valid_nll - 0.5);
  ASSERT_EQ(report.criterion_curve.size(), 61u);
  EXPECT_EQ(report.criterion_curve[report.best_epoch], report.valid_nll);

  // Held-out (test) tasks: condition on 8 entries, predict the other 32.
  auto shared = std::make_shared<const surrogate::PmfModel>(model);
  METAOPT_ASSERT_OK_AND_ASSIGN(PmfProblem held_out,
                               BuildPmfProblem(s->data, s->train, s->test));
  double posterior_se = 0, prior_se = 0;
  for (const PmfColumn& column : held_out.valid) {
    std::vector<int> observed, rest;
    Eigen::VectorXd losses(8);
    for (size_t i = 0; i < column.entries.size(); ++i) {
      const double loss = column.targets[i] * problem.y_std + problem.y_mean;
      if (i % 5 == 0 && observed.size() < 8) {
        losses[observed.size()] = loss;
        observed.push_back(column.entries[i]);
      } else {
        rest.push_back(static_cast<int>(i));
      }
    }
    METAOPT_ASSERT_OK_AND_ASSIGN(
        surrogate::PmfSurrogate posterior,
        surrogate::PmfSurrogate::Create(shared, observed, losses));
    for (int i : rest) {
      const double loss = column.targets[i] * problem.y_std + problem.y_mean;
      METAOPT_ASSERT_OK_AND_ASSIGN(
          gp::Prediction p, posterior.PredictEntries({column.entries[i]}));
      posterior_se += (p.mean[0] - loss) * (p.mean[0] - loss);

      prior_se += (problem.y_mean - loss) * (problem.y_mean - loss);
    }
  }
  // The training mean is the prior's; 8 observations roughly halve the error.
  EXPECT_LT(posterior_se, 0.7 * prior_se);
}

TEST(TrainPmfModelTest, IsDeterministicForASeedAndRejectsBadOptions) {
  std::unique_ptr<Split> s = MakeSplit();
  METAOPT_ASSERT_OK_AND_ASSIGN(PmfProblem problem,
                               BuildPmfProblem(s->data, s->train, s->valid));
  PmfTrainOptions options;
  options.latent_dim = 2;
  options.epochs = 3;
  options.batch_datasets = 7;
  options.max_pipelines = 10;  // subsampling
  METAOPT_ASSERT_OK_AND_ASSIGN(surrogate::PmfModel a,
                               TrainPmfModel(problem, options, nullptr, nullptr));
  METAOPT_ASSERT_OK_AND_ASSIGN(surrogate::PmfModel b,
                               TrainPmfModel(problem, options, nullptr, nullptr));
  EXPECT_EQ((a.latents() - b.latents()).norm(), 0.0);
  options.latent_dim = 0;
  EXPECT_THAT(TrainPmfModel(problem, options, nullptr, nullptr).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--latent-dim")));
}

TEST(AddPmfWarmStartDataTest, StoresFeaturesStatisticsAndBestEntries) {
  std::unique_ptr<Split> s = MakeSplit();
  METAOPT_ASSERT_OK_AND_ASSIGN(PmfProblem problem,
                               BuildPmfProblem(s->data, s->train, s->valid));
  v1::ModelArtifact artifact;
  AddPmfWarmStartData(problem, s->train, /*depth=*/50, &artifact);
  ASSERT_EQ(artifact.training_features_size(), 30);
  EXPECT_EQ(artifact.training_features(3).task_id(), "t3");
  EXPECT_EQ(artifact.training_features(3).features().at("w1"),
            s->train[3]->metafeatures.at("w1"));
  double mean = 0;
  for (const meta::Task* task : s->train) mean += task->metafeatures.at("n");
  EXPECT_NEAR(artifact.normalization().at("feature_mean/n"), mean / 30, 1e-9);
  EXPECT_GT(artifact.normalization().at("feature_std/n"), 100);
  ASSERT_EQ(artifact.tensors_size(), 2);
  const v1::Tensor& top = artifact.tensors(0);
  EXPECT_EQ(top.name(), "training_top_entries");
  ASSERT_EQ(top.shape_size(), 2);
  EXPECT_EQ(top.shape(0), 30);
  EXPECT_EQ(top.shape(1), 50);
  // Task 0: its entries best first, then -1 padding.
  const PmfColumn& column = problem.train[0];
  const int n0 = static_cast<int>(column.entries.size());
  ASSERT_LT(n0, 50);
  Eigen::Index best, worst;
  column.targets.minCoeff(&best);
  column.targets.maxCoeff(&worst);
  EXPECT_EQ(top.values(0), column.entries[best]);
  EXPECT_EQ(top.values(n0 - 1), column.entries[worst]);
  EXPECT_EQ(top.values(n0), -1.0);
  EXPECT_EQ(top.values(49), -1.0);
  const v1::Tensor& mean_ranks = artifact.tensors(1);
  EXPECT_EQ(mean_ranks.name(), "mean_ranks");
  ASSERT_EQ(mean_ranks.values_size(), 40);
  for (double r : mean_ranks.values()) {
    EXPECT_GE(r, 0.0);
    EXPECT_LE(r, 1.0);
  }
}

TEST(PmfTrainerKindTest, MetaoptTrainWritesAPmfVersion) {
  metaopt::testing::ScopedTempDir dir;
  ASSERT_THAT(meta::WriteMetaDataset(SyntheticPmfDataset(), dir.File("data")),
              metaopt::testing::IsOk());
  const std::string data = dir.File("data");
  const std::string models = dir.File("models");
  const char* argv[] = {"metaopt-train",  "--kind",       "pmf",
                        "--data",         data.c_str(),   "--registry",
                        models.c_str(),   "--latent-dim", "3",
                        "--epochs",       "5",            "--size",
                        "4",              "--quiet"};
  std::ostringstream out, err;
  ASSERT_EQ(MetaoptTrainMain(static_cast<int>(std::size(argv)), argv, out, err),
            0)
      << err.str();
  EXPECT_THAT(out.str(), HasSubstr("data-pmf"));
  EXPECT_THAT(out.str(), HasSubstr("valid_nll"));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const registry::LoadedModel> loaded,
      registry::ReadModelVersion(models, "data-pmf", 1));
  EXPECT_EQ(loaded->artifact.kind(), v1::MODEL_KIND_PMF);
  EXPECT_EQ(loaded->artifact.catalogue_size(), 40);
  EXPECT_EQ(loaded->artifact.portfolio_size(), 4);
  EXPECT_EQ(loaded->artifact.training_features_size(), 30);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      surrogate::PmfModel model,
      surrogate::PmfModel::FromArtifact(loaded->artifact));
  EXPECT_EQ(model.latent_dim(), 3);
  EXPECT_EQ(model.num_entries(), 40);
}

}  // namespace
}  // namespace metaopt::train
