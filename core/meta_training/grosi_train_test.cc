#include "core/meta_training/grosi_train.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/meta_dataset/meta_dataset.h"
#include "tests/testutil/meta_dataset_folders.h"
#include "tests/testutil/synthetic_grosi.h"
#include "core/meta_training/train_main.h"
#include "core/registry/artifact.h"
#include "core/surrogate/grosi_model.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::train {
namespace {

using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using surrogate::GrosiModel;
using ::testing::HasSubstr;
using testing::SmallGrosiOptions;
using testing::TwoFamilyDataset;

class GrosiTrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = TwoFamilyDataset(16, 4, 4);
    for (const meta::Task& task : data_.tasks) {
      if (task.split == "train") train_.push_back(&task);
      if (task.split == "valid") valid_.push_back(&task);
      if (task.split == "test") test_.push_back(&task);
    }
  }

  // The x of the configuration with the lowest prediction for `task`.
  static double PredictedBestX(const GrosiModel& model,
                               const meta::Task& task) {
    const Eigen::VectorXd predicted = model.Predict(
        model.Embed(model.Standardize(task.metafeatures, nullptr)),
        model.encoder().EncodeBatch(task.configurations));
    Eigen::Index best = 0;
    predicted.minCoeff(&best);
    return task.configurations[best]
        .assignments(0)
        .parameters()
        .at("x")
        .number();
  }

  // The "left" family's best is near 0.15, the "right" family's near 0.85:
  // `model` must place each held-out task's predicted best by f alone.
  void ExpectFamiliesToldApart(const GrosiModel& model) const {
    for (const meta::Task* task : test_) {
      const bool right = task->metafeatures.at("f") > 0;
      const double x = PredictedBestX(model, *task);
      if (right) {
        EXPECT_GT(x, 0.6) << task->id;
      } else {
        EXPECT_LT(x, 0.4) << task->id;
      }
    }
  }

  meta::MetaDataset data_;
  std::vector<const meta::Task*> train_, valid_, test_;
};

TEST_F(GrosiTrainTest, ZeroShotTopDependsOnTheMetaFeatures) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      GrosiTrainResult trained,
      TrainGrosi(data_, train_, valid_, SmallGrosiOptions()));
  EXPECT_EQ(trained.train_tasks.size(), 16u);
  EXPECT_EQ(trained.valid_tasks, 4);
  EXPECT_GT(trained.best_epoch, 0);
  ExpectFamiliesToldApart(trained.best);
  for (const meta::Task* task : test_) {
    const std::vector<double> regret =
        GrosiZeroShotRegret(trained.best, *task, data_.objective.goal(), 3);
    ASSERT_EQ(regret.size(), 3u);
    EXPECT_LT(regret[2], 0.05) << task->id;
  }
  const GrosiEpochStats& initial = trained.history[0];
  const GrosiEpochStats& best = trained.history[trained.best_epoch];
  EXPECT_LT(best.valid_score, initial.valid_score);
  EXPECT_LT(best.valid_mse, initial.valid_mse);
}

// The paper's joint psi1 over [x; phi] learns the same two families given
// wider layers and more epochs (at 4 units and 60 epochs it does not).
TEST_F(GrosiTrainTest, JointPsi1TellsTheFamiliesApart) {
  GrosiTrainOptions options = SmallGrosiOptions();
  options.architecture.joint_psi1 = true;
  options.architecture.tower_width = 8;
  options.epochs = 300;
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiTrainResult trained,
                               TrainGrosi(data_, train_, valid_, options));
  EXPECT_TRUE(trained.best.architecture().joint_psi1);
  ExpectFamiliesToldApart(trained.best);
}

TEST_F(GrosiTrainTest, DeterministicGivenTheSeed) {
  GrosiTrainOptions options = SmallGrosiOptions();
  options.epochs = 3;
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiTrainResult a,
                               TrainGrosi(data_, train_, valid_, options));
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiTrainResult b,
                               TrainGrosi(data_, train_, valid_, options));
  EXPECT_EQ(a.best.parameters(), b.best.parameters());
  options.seed += 1;
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiTrainResult c,
                               TrainGrosi(data_, train_, valid_, options));
  EXPECT_NE(a.best.parameters(), c.best.parameters());
}

TEST_F(GrosiTrainTest, FeatureStatisticsComeFromTheTrainingTasks) {
  GrosiTrainOptions options = SmallGrosiOptions();
  options.epochs = 0;
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiTrainResult trained,
                               TrainGrosi(data_, train_, valid_, options));
  const GrosiModel& model = trained.best;
  EXPECT_THAT(model.feature_names(), ::testing::ElementsAre("f", "g", "h"));
  double sum = 0.0;
  int count = 0;
  for (const meta::Task* task : train_) {
    if (task->metafeatures.count("h") == 0) continue;
    sum += task->metafeatures.at("h");
    ++count;
  }
  EXPECT_EQ(count, 8);  // h is missing on half of the tasks
  EXPECT_NEAR(model.feature_means()[2], sum / count, 1e-12);
}

TEST_F(GrosiTrainTest, RejectsDataWithoutMetaFeaturesAndBadOptions) {
  meta::MetaDataset bare = data_;
  for (meta::Task& task : bare.tasks) task.metafeatures.clear();
  std::vector<const meta::Task*> train;
  for (const meta::Task& task : bare.tasks) train.push_back(&task);
  EXPECT_THAT(
      TrainGrosi(bare, train, {}, SmallGrosiOptions()).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("meta-features")));
  GrosiTrainOptions bad = SmallGrosiOptions();
  bad.feature_dropout = 1.5;
  EXPECT_THAT(TrainGrosi(data_, train_, valid_, bad).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("feature_dropout")));
}

TEST_F(GrosiTrainTest, MetaoptTrainPublishesAGrosiArtifact) {
  ScopedTempDir temp;
  const std::string data_dir = temp.File("two-family");
  const std::string registry = temp.File("registry");
  METAOPT_ASSERT_OK(meta::WriteMetaDataset(data_, data_dir));
  const std::vector<std::string> args = {"metaopt-train",
                                         "--kind",
                                         "grosi",
                                         "--data",
                                         data_dir,
                                         "--registry",
                                         registry,
                                         "--epochs",
                                         "4",
                                         "--meta-batch",
                                         "4",
                                         "--embedding",
                                         "6",
                                         "--tower-layers",
                                         "2",
                                         "--size",
                                         "3",
                                         "--seed",
                                         "2",
                                         "--quiet"};
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  ASSERT_EQ(
      MetaoptTrainMain(static_cast<int>(argv.size()), argv.data(), out, err), 0)
      << err.str();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const registry::LoadedModel> loaded,
      registry::ReadModelVersion(registry, "two-family-grosi", 1));
  const v1::ModelArtifact& artifact = loaded->artifact;
  EXPECT_EQ(artifact.kind(), v1::MODEL_KIND_GROSI);
  EXPECT_EQ(artifact.portfolio_size(), 3);
  EXPECT_EQ(artifact.training_features_size(), 16);
  EXPECT_EQ(artifact.int_options().at("embedding"), 6);
  EXPECT_TRUE(artifact.normalization().contains("feature_mean/h"));
  EXPECT_TRUE(artifact.normalization().contains("feature_std/f"));
  const auto& metrics = artifact.provenance().validation_metrics();
  EXPECT_TRUE(metrics.contains("valid_regret@1"));
  EXPECT_TRUE(metrics.contains("valid_regret@20"));
  EXPECT_TRUE(metrics.contains("initial_valid_regret@5"));
  EXPECT_EQ(metrics.at("epochs_run"), 4);
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiModel model,
                               GrosiModel::FromArtifact(artifact));
  EXPECT_EQ(model.num_features(), 3);
}

TEST_F(GrosiTrainTest, Dataset2VecTellsTheFamiliesApartFromRawSamples) {
  const auto samples = testing::TwoFamilySamples(data_);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      GrosiTrainResult trained,
      TrainGrosi(data_, train_, valid_, testing::SmallD2vOptions(samples)));
  const GrosiModel& model = trained.best;
  EXPECT_EQ(model.num_features(), 0);
  ASSERT_NE(model.dataset2vec(), nullptr);
  EXPECT_EQ(trained.train_tasks.size(), 16u);
  EXPECT_GT(model.dataset2vec_mean().norm(), 0.0);
  // Held-out tasks: no meta-features reach the model, only the samples.
  for (const meta::Task* task : test_) {
    const std::vector<double> regret = GrosiZeroShotRegret(
        model, *task, data_.objective.goal(), 3, &samples.at(task->id));
    ASSERT_EQ(regret.size(), 3u);
    EXPECT_LT(regret[2], 0.05) << task->id;
  }
  const GrosiEpochStats& initial = trained.history[0];
  const GrosiEpochStats& best = trained.history[trained.best_epoch];
  EXPECT_LT(best.valid_score, initial.valid_score);
  EXPECT_GT(best.identification, 0.0);
}

TEST_F(GrosiTrainTest, Dataset2VecLeavesOutTasksWithoutSamples) {
  auto samples = testing::TwoFamilySamples(data_);
  samples.erase(train_[0]->id);
  samples.erase(valid_[0]->id);
  GrosiTrainOptions options = testing::SmallD2vOptions(samples);
  options.epochs = 2;
  options.d2v_pretrain_epochs = 2;
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiTrainResult a,
                               TrainGrosi(data_, train_, valid_, options));
  EXPECT_EQ(a.train_tasks.size(), 15u);
  EXPECT_EQ(a.skipped_train_tasks, 1);
  EXPECT_EQ(a.valid_tasks, 3);
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiTrainResult b,
                               TrainGrosi(data_, train_, valid_, options));
  EXPECT_EQ(a.best.parameters(), b.best.parameters());  // deterministic
  // With engineered features too, the model reads both.
  options.engineered = true;
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiTrainResult both,
                               TrainGrosi(data_, train_, valid_, options));
  EXPECT_EQ(both.best.num_features(), 3);
  EXPECT_EQ(both.best.input_dim(), 3 + 4);
  // Samples are required.
  options.samples = nullptr;
  EXPECT_THAT(TrainGrosi(data_, train_, valid_, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("samples with dataset2vec")));
}

TEST_F(GrosiTrainTest, MetaoptTrainReadsDatasetSamples) {
  ScopedTempDir temp;
  const std::string data_dir = temp.File("two-family");
  const std::string registry = temp.File("registry");
  const std::string samples_dir = temp.File("samples");
  METAOPT_ASSERT_OK(meta::WriteMetaDataset(data_, data_dir));
  std::filesystem::create_directories(samples_dir);
  for (const auto& [id, raw] : testing::TwoFamilySamples(data_)) {
    const v1::DatasetSample sample = testing::SampleProto(raw);
    std::string json;
    ASSERT_TRUE(
        google::protobuf::util::MessageToJsonString(sample, &json).ok());
    std::ofstream(samples_dir + "/" + id + ".json") << json;
  }
  auto run = [&](const std::string& samples) {
    const std::vector<std::string> args = {"metaopt-train",
                                           "--kind",
                                           "grosi",
                                           "--data",
                                           data_dir,
                                           "--registry",
                                           registry,
                                           "--epochs",
                                           "2",
                                           "--embedding",
                                           "6",
                                           "--d2v-width",
                                           "8",
                                           "--d2v-rows",
                                           "16",
                                           "--dataset-samples",
                                           samples,
                                           "--d2v-only",
                                           "--quiet"};
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    const int code =
        MetaoptTrainMain(static_cast<int>(argv.size()), argv.data(), out, err);
    return std::make_pair(code, err.str());
  };
  const auto [code, err] = run(samples_dir);
  ASSERT_EQ(code, 0) << err;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const registry::LoadedModel> loaded,
      registry::ReadModelVersion(registry, "two-family-grosi", 1));
  const v1::ModelArtifact& artifact = loaded->artifact;
  EXPECT_EQ(artifact.int_options().at("dataset2vec"), 1);
  EXPECT_EQ(artifact.int_options().at("d2v_f_width"), 8);
  EXPECT_EQ(artifact.int_options().at("train_d2v_rows"), 16);
  EXPECT_EQ(artifact.int_options().at("train_engineered_features"), 0);
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiModel model,
                               GrosiModel::FromArtifact(artifact));
  EXPECT_EQ(model.num_features(), 0);
  ASSERT_NE(model.dataset2vec(), nullptr);
  EXPECT_EQ(model.dataset2vec()->output(), 6);

  // A malformed sample file is named.
  std::ofstream(samples_dir + "/" + data_.tasks[0].id + ".json")
      << R"({"columnKinds": ["COLUMN_KIND_NUMERIC"], "values": [1],
      "numTargets": 1, "targets": [1]})";
  const auto [bad_code, bad_err] = run(samples_dir);
  EXPECT_NE(bad_code, 0);
  EXPECT_THAT(bad_err, HasSubstr(data_.tasks[0].id + ".json"));
  EXPECT_THAT(bad_err, HasSubstr("dataset_sample.values: 1 rows"));
  const auto [absent_code, absent_err] = run(temp.File("absent"));
  EXPECT_NE(absent_code, 0);
  EXPECT_THAT(absent_err, HasSubstr("not a directory"));
}

// The bundled meta-datasets: a short run on the real data, when present.
TEST(GrosiTrainSharedDataTest, TrainsOnSklearnPipelines) {
  const char* env = std::getenv("METAOPT_SHARED_DATA");
  const std::string shared =
      env != nullptr && *env != '\0'
          ? std::string(env)
          : std::string(METAOPT_SOURCE_DIR_DEFAULT) + "/../shared/data";
  const std::string found = shared + "/sklearn-pipelines";
  if (!std::filesystem::exists(found + "/metafeatures.csv")) {
    GTEST_SKIP() << found << " is absent: skipped";
  }
  meta::ReadOptions read;
  read.splits = {"train", "valid"};
  METAOPT_ASSERT_OK_AND_ASSIGN(meta::MetaDataset data,
                               meta::ReadMetaDataset(found, read));
  METAOPT_ASSERT_OK_AND_ASSIGN(auto train, data.TasksOfSplit("train"));
  METAOPT_ASSERT_OK_AND_ASSIGN(auto valid, data.TasksOfSplit("valid"));
  GrosiTrainOptions options;
  options.epochs = 2;
  METAOPT_ASSERT_OK_AND_ASSIGN(GrosiTrainResult trained,
                               TrainGrosi(data, train, valid, options));
  EXPECT_EQ(trained.train_tasks.size(), train.size());
  EXPECT_EQ(trained.best.num_features(), 21);
  EXPECT_EQ(trained.history.size(), 3u);
}

}  // namespace
}  // namespace metaopt::train
