#include "core/meta_training/train_common.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testutil/meta_dataset_folders.h"
#include "core/meta_training/train_main.h"
#include "core/registry/artifact.h"
#include "core/space/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::train {
namespace {

using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

// A meta-dataset "toy": one stage "model", algorithm "m" with an int "n" in
// [1, 10] and a categorical "c" in {a, b} (a 20-configuration grid); 12 tasks:
// t0..t7 train, t8..t9 valid, t10..t11 test; maximize.
meta::MetaDataset ToyDataset() {
  meta::MetaDataset data;
  data.name = "toy";
  data.objective.set_name("accuracy");
  data.objective.set_goal(v1::GOAL_MAXIMIZE);
  v1::Stage* stage = data.space.add_stages();
  stage->set_name("model");
  v1::Algorithm* algorithm = stage->add_algorithms();
  algorithm->set_name("m");
  v1::Parameter* n = algorithm->add_parameters();
  n->set_name("n");
  n->mutable_int_domain()->set_low(1);
  n->mutable_int_domain()->set_high(10);
  v1::Parameter* c = algorithm->add_parameters();
  c->set_name("c");
  c->mutable_categorical_domain()->add_values("a");
  c->mutable_categorical_domain()->add_values("b");
  space::Rng rng(11);
  for (int t = 0; t < 12; ++t) {
    meta::Task task;
    task.id = "t" + std::to_string(t);
    task.split = t < 8 ? "train" : t < 10 ? "valid" : "test";
    for (int i = 1; i <= 10; ++i) {
      for (const char* category : {"a", "b"}) {
        v1::Configuration config;
        v1::Assignment* a = config.add_assignments();
        a->set_stage("model");
        a->set_algorithm("m");
        (*a->mutable_parameters())["n"].set_number(i);
        (*a->mutable_parameters())["c"].set_category(category);
        task.configurations.push_back(config);
        task.y.push_back(0.1 * i * (category[0] == 'a' ? 1 : 0.5) +
                         0.3 * space::Uniform01(rng));
      }
    }
    data.tasks.push_back(task);
  }
  return data;
}

class TrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ = temp_.File("toy");
    registry_dir_ = temp_.File("registry");
    METAOPT_ASSERT_OK(meta::WriteMetaDataset(ToyDataset(), data_dir_));
  }

  // Runs metaopt-train in-process with `args` after the program name.
  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), "metaopt-train");
    std::vector<const char*> argv;
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    out_.str("");
    err_.str("");
    return MetaoptTrainMain(static_cast<int>(argv.size()), argv.data(), out_,
                            err_);
  }

  std::vector<std::string> PortfolioArgs() {
    return {"--kind",      "portfolio", "--data", data_dir_, "--registry",
            registry_dir_, "--size",    "4",      "--seed",  "3"};
  }

  ScopedTempDir temp_;
  std::string data_dir_;
  std::string registry_dir_;
  std::ostringstream out_;
  std::ostringstream err_;
};

TEST(TrainCommonTest, DefaultModelNameUsesTheDataFolder) {
  EXPECT_EQ(DefaultModelName("../shared/data/oboe", "portfolio"),
            "oboe-portfolio");
  EXPECT_EQ(DefaultModelName("/data/fcnet/", "pmf"), "fcnet-pmf");
  EXPECT_EQ(DefaultModelName("./x/nasbench201/.", "deeppipe"),
            "nasbench201-deeppipe");
  EXPECT_EQ(DataFolderName("a/b//"), "b");
}

TEST(TrainCommonTest, JoinCommandLineQuotesWhatTheShellWouldSplit) {
  const char* argv[] = {"metaopt-train", "--data",    "../d/oboe",
                        "--name",        "it's here", ""};
  EXPECT_EQ(JoinCommandLine(6, argv),
            "metaopt-train --data ../d/oboe --name 'it'\\''s here' ''");
}

TEST(TrainCommonTest, AddCurveMetricsNumbersFromOne) {
  v1::TrainingProvenance provenance;
  AddCurveMetrics("valid_regret", {0.5, 0.25},
                  provenance.mutable_validation_metrics());
  EXPECT_EQ(provenance.validation_metrics().size(), 2u);
  EXPECT_DOUBLE_EQ(provenance.validation_metrics().at("valid_regret@1"), 0.5);
  EXPECT_DOUBLE_EQ(provenance.validation_metrics().at("valid_regret@2"), 0.25);
}

TEST(TrainCommonTest, MetaoptVersionIsSet) {
  EXPECT_THAT(MetaoptVersion(), HasSubstr("git"));
}

TEST_F(TrainTest, PortfolioEndToEndWritesALoadableVersion) {
  ASSERT_EQ(Run(PortfolioArgs()), 0) << err_.str();
  EXPECT_THAT(out_.str(),
              HasSubstr("wrote " + registry_dir_ + "/toy-portfolio/1"));
  EXPECT_THAT(out_.str(), HasSubstr("kind:      portfolio"));
  EXPECT_THAT(out_.str(), HasSubstr("portfolio of 4 configurations"));
  EXPECT_THAT(out_.str(), HasSubstr("valid_regret: @1 "));
  EXPECT_THAT(err_.str(), HasSubstr("read toy: 8 train tasks, 2 valid tasks"));

  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto model,
      registry::ReadModelVersion(registry_dir_, "toy-portfolio", 1));
  const v1::ModelArtifact& artifact = model->artifact;
  EXPECT_EQ(artifact.kind(), v1::MODEL_KIND_PORTFOLIO);
  EXPECT_EQ(artifact.portfolio_size(), 4);
  EXPECT_EQ(artifact.objective().goal(), v1::GOAL_MAXIMIZE);
  EXPECT_EQ(artifact.search_space().stages(0).name(), "model");
  const v1::TrainingProvenance& provenance = artifact.provenance();
  EXPECT_EQ(provenance.data_name(), "toy");
  EXPECT_EQ(provenance.split(), "train");
  EXPECT_THAT(provenance.task_ids(),
              ElementsAre("t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"));
  EXPECT_EQ(provenance.seed(), 3u);
  EXPECT_THAT(provenance.command_line(),
              HasSubstr("metaopt-train --kind portfolio --data " + data_dir_));
  EXPECT_GT(provenance.create_time().seconds(), 1700000000);
  EXPECT_GE(provenance.wall_time_seconds(), 0);
  EXPECT_EQ(provenance.metaopt_version(), MetaoptVersion());
  for (const char* key : {"train_regret@1", "train_regret@4", "valid_regret@1",
                          "valid_regret@4"}) {
    ASSERT_EQ(provenance.validation_metrics().count(key), 1u) << key;
  }
  EXPECT_LE(provenance.validation_metrics().at("valid_regret@4"),
            provenance.validation_metrics().at("valid_regret@1"));
  EXPECT_EQ(artifact.int_options().at("nearest_match"), 0);
  EXPECT_EQ(artifact.int_options().at("candidates"), 20);

  // The same run again publishes version 2 with the same portfolio.
  ASSERT_EQ(Run(PortfolioArgs()), 0) << err_.str();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto second,
      registry::ReadModelVersion(registry_dir_, "toy-portfolio", 2));
  ASSERT_EQ(second->artifact.portfolio_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(second->artifact.portfolio(i).DebugString(),
              artifact.portfolio(i).DebugString());
  }
}

TEST_F(TrainTest, EvolutionaryPortfolioSearch) {
  std::vector<std::string> args = PortfolioArgs();
  for (const char* extra : {"--portfolio-search", "evolutionary", "--steps",
                            "300", "--population", "20"}) {
    args.push_back(extra);
  }
  ASSERT_EQ(Run(args), 0) << err_.str();
  EXPECT_THAT(err_.str(), HasSubstr("evolutionary search step 300/300"));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto model,
      registry::ReadModelVersion(registry_dir_, "toy-portfolio", 1));
  const v1::ModelArtifact& artifact = model->artifact;
  EXPECT_EQ(artifact.portfolio_size(), 4);
  EXPECT_EQ(artifact.int_options().at("evolutionary_search"), 1);
  EXPECT_EQ(artifact.int_options().at("evolutionary_steps"), 300);
  EXPECT_EQ(artifact.int_options().at("evolutionary_population"), 20);
  EXPECT_EQ(artifact.int_options().at("evolutionary_from_greedy"), 1);
  const auto& metrics = artifact.provenance().validation_metrics();
  // Started from the greedy set, the search is never worse than it.
  EXPECT_LE(metrics.at("train_objective"),
            metrics.at("greedy_train_objective"));

  args.push_back("--mutation-probability");
  args.push_back("2");
  EXPECT_NE(Run(args), 0);
  EXPECT_THAT(err_.str(), HasSubstr("--mutation-probability"));
}

TEST_F(TrainTest, NameQuietAndNoValidation) {
  std::vector<std::string> args = PortfolioArgs();
  for (const char* extra : {"--name", "custom.model_1", "--quiet",
                            "--split-valid", "none", "--match", "nearest"}) {
    args.push_back(extra);
  }
  ASSERT_EQ(Run(args), 0) << err_.str();
  EXPECT_EQ(err_.str(), "");
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto model,
      registry::ReadModelVersion(registry_dir_, "custom.model_1", 1));
  const auto& metrics = model->artifact.provenance().validation_metrics();
  EXPECT_EQ(metrics.count("valid_regret@1"), 0u);
  EXPECT_EQ(metrics.count("train_regret@1"), 1u);
  EXPECT_EQ(model->artifact.int_options().at("nearest_match"), 1);
}

#ifdef METAOPT_TRAIN_BINARY
TEST_F(TrainTest, BinaryWritesAVersion) {
  const std::string command =
      std::string(METAOPT_TRAIN_BINARY) + " --kind portfolio --data '" +
      data_dir_ + "' --registry '" + registry_dir_ + "' --size 3 --quiet > '" +
      temp_.File("out.txt") + "' 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto model,
      registry::ReadModelVersion(registry_dir_, "toy-portfolio", 1));
  EXPECT_EQ(model->artifact.portfolio_size(), 3);
  EXPECT_THAT(model->artifact.provenance().command_line(),
              HasSubstr("--size 3 --quiet"));
}
#endif

TEST_F(TrainTest, BadFlagsGiveClearErrors) {
  EXPECT_NE(Run({"--kind", "portfolio", "--registry", registry_dir_}), 0);
  EXPECT_THAT(err_.str(), HasSubstr("--data is required"));

  EXPECT_NE(Run({"--kind", "magic", "--data", data_dir_, "--registry",
                 registry_dir_}),
            0);
  EXPECT_THAT(err_.str(), HasSubstr("--kind"));
  EXPECT_THAT(err_.str(), HasSubstr("magic"));

  std::vector<std::string> other_kind = PortfolioArgs();
  other_kind.push_back("--encoder-layers");
  other_kind.push_back("1");
  EXPECT_EQ(Run(other_kind), 2);
  EXPECT_THAT(err_.str(), HasSubstr("--encoder-layers is a flag of --kind "
                                    "deeppipe, not of --kind portfolio"));

  std::vector<std::string> args = PortfolioArgs();
  args.push_back("--size");
  args.push_back("0");
  EXPECT_NE(Run(args), 0);
  EXPECT_THAT(err_.str(), HasSubstr("--size"));

  args = PortfolioArgs();
  args.push_back("--match");
  args.push_back("closest");
  EXPECT_NE(Run(args), 0);
  EXPECT_THAT(err_.str(), HasSubstr("--match"));

  args = PortfolioArgs();
  args[3] = temp_.File("missing");
  EXPECT_EQ(Run(args), 1);
  EXPECT_THAT(err_.str(), HasSubstr("metaopt-train: error: reading the data"));
  EXPECT_THAT(err_.str(), HasSubstr(temp_.File("missing")));

  args = PortfolioArgs();
  args.push_back("--split-valid");
  args.push_back("train");
  EXPECT_EQ(Run(args), 1);
  EXPECT_THAT(err_.str(), HasSubstr("--split-valid train overlaps"));

  args = PortfolioArgs();
  args.push_back("--split-train");
  args.push_back("holdout");
  EXPECT_EQ(Run(args), 1);
  EXPECT_THAT(err_.str(), HasSubstr("split \"holdout\" has no tasks"));

  args = PortfolioArgs();
  args.push_back("--name");
  args.push_back("a/b");
  EXPECT_EQ(Run(args), 1);
  EXPECT_THAT(err_.str(), HasSubstr("--name"));

  EXPECT_FALSE(std::filesystem::exists(registry_dir_));

  EXPECT_EQ(Run({"--help"}), 0);
  EXPECT_THAT(out_.str(), HasSubstr("deeppipe: DeepPipe deep-kernel GP"));
  EXPECT_THAT(out_.str(), HasSubstr("--candidates-per-task"));
}

TEST_F(TrainTest, RunTrainingReportsTrainerErrorsAndWritesNothing) {
  CommonTrainOptions options;
  options.kind = "fake";
  options.data_dir = data_dir_;
  options.registry_dir = registry_dir_;
  Progress progress(nullptr);

  Trainer failing = [](const CommonTrainOptions&, const TrainingSplits&,
                       Progress&) -> absl::StatusOr<v1::ModelArtifact> {
    return absl::InternalError("diverged");
  };
  EXPECT_THAT(RunTraining(options, failing, progress),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("training fake: diverged")));

  Trainer invalid = [](const CommonTrainOptions&, const TrainingSplits& data,
                       Progress&) -> absl::StatusOr<v1::ModelArtifact> {
    EXPECT_EQ(data.folder_name, "toy");
    EXPECT_EQ(data.train.size(), 8u);
    EXPECT_EQ(data.valid.size(), 2u);
    v1::ModelArtifact artifact;
    artifact.set_kind(v1::MODEL_KIND_PORTFOLIO);
    v1::Tensor* tensor = artifact.add_tensors();
    tensor->set_name("w");
    tensor->add_shape(2);
    tensor->add_values(1.0);
    return artifact;
  };
  EXPECT_THAT(RunTraining(options, invalid, progress),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the trained artifact is invalid")));
  EXPECT_FALSE(std::filesystem::exists(registry_dir_));

  Trainer minimal = [](const CommonTrainOptions&, const TrainingSplits&,
                       Progress&) -> absl::StatusOr<v1::ModelArtifact> {
    v1::ModelArtifact artifact;
    artifact.set_kind(v1::MODEL_KIND_PORTFOLIO);
    return artifact;
  };
  METAOPT_ASSERT_OK_AND_ASSIGN(TrainResult result,
                               RunTraining(options, minimal, progress));
  EXPECT_EQ(result.name, "toy-fake");
  EXPECT_EQ(result.version, 1);
  EXPECT_EQ(result.version_dir, registry_dir_ + "/toy-fake/1");
  EXPECT_EQ(result.artifact.format_version(), registry::kCurrentFormatVersion);
  METAOPT_EXPECT_OK(registry::ReadModelVersion(result.version_dir));
  EXPECT_THAT(DescribeTrainResult(result),
              HasSubstr("toy-fake version 1 (toy-fake@1)"));
}

}  // namespace
}  // namespace metaopt::train

namespace metaopt::train {
namespace {

TEST(FeatureNamesTest, TrainsOnTheNamedMetafeaturesOnly) {
  meta::MetaDataset data = ToyDataset();
  data.metafeature_names = {"a", "b", "c"};
  for (size_t t = 0; t < data.tasks.size(); ++t) {
    data.tasks[t].metafeatures = {{"a", 1.0 * t}, {"b", 2.0 * t}, {"c", 1.0}};
  }
  data.tasks[0].metafeatures.erase("b");  // an empty cell stays empty
  ScopedTempDir temp;
  const std::string dir = temp.File("toy");
  METAOPT_ASSERT_OK(meta::WriteMetaDataset(data, dir));
  const std::string names = temp.File("names.txt");
  // Names the meta-dataset does not have ("z") are ignored.
  std::ofstream(names) << "# computed by the client\n b \n\nz\na\n";
  CommonTrainOptions options;
  options.data_dir = dir;
  options.feature_names_file = names;
  METAOPT_ASSERT_OK_AND_ASSIGN(TrainingSplits splits,
                               ReadTrainingSplits(options));
  EXPECT_THAT(splits.dataset.metafeature_names, ElementsAre("a", "b"));
  ASSERT_EQ(splits.train.size(), 8u);
  EXPECT_THAT(splits.train[0]->metafeatures, ElementsAre(Pair("a", 0.0)));
  EXPECT_THAT(splits.train[3]->metafeatures,
              ElementsAre(Pair("a", 3.0), Pair("b", 6.0)));
  for (const meta::Task* task : splits.valid) {
    EXPECT_EQ(task->metafeatures.count("c"), 0u) << task->id;
  }

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"z\ny\n",
       "none of its 2 names is a column of the meta-dataset's "
       "metafeatures.csv (3 columns)"},
      {"a\nb\na\n", "names.txt:3: \"a\" is given twice (first at line 1)"},
      {"# nothing\n\n", "names.txt: no meta-feature name"},
  };
  for (const auto& [text, message] : bad) {
    std::ofstream(names, std::ios::trunc) << text;
    EXPECT_THAT(ReadTrainingSplits(options),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << text;
  }
  options.feature_names_file = temp.File("missing.txt");
  EXPECT_THAT(ReadTrainingSplits(options),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.txt")));
}

TEST(ExcludeAlgorithmTest, RemovesTheAlgorithmAndItsRows) {
  meta::MetaDataset data = ToyDataset();
  data.space.mutable_stages(0)->add_algorithms()->set_name("m2");
  for (meta::Task& task : data.tasks) {
    v1::Configuration config;
    v1::Assignment* a = config.add_assignments();
    a->set_stage("model");
    a->set_algorithm("m2");
    task.configurations.push_back(config);
    task.y.push_back(0.9);
  }
  ScopedTempDir temp;
  const std::string dir = temp.File("toy2");
  METAOPT_ASSERT_OK(meta::WriteMetaDataset(data, dir));
  CommonTrainOptions options;
  options.data_dir = dir;
  options.exclude_algorithms = {"model/m2"};
  METAOPT_ASSERT_OK_AND_ASSIGN(TrainingSplits splits,
                               ReadTrainingSplits(options));
  ASSERT_EQ(splits.dataset.space.stages(0).algorithms_size(), 1);
  EXPECT_EQ(splits.dataset.space.stages(0).algorithms(0).name(), "m");
  for (const meta::Task* task : splits.train) {
    EXPECT_EQ(task->configurations.size(), 20u);
    EXPECT_EQ(task->y.size(), 20u);
    for (const v1::Configuration& c : task->configurations) {
      EXPECT_EQ(c.assignments(0).algorithm(), "m");
    }
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"m2", "--exclude-algorithm: \"m2\" is not of the form STAGE/ALGORITHM"},
      {"scaler/m2", "the space has no stage \"scaler\""},
      {"model/m3", "stage \"model\" has no algorithm \"m3\""},
  };
  for (const auto& [value, message] : bad) {
    options.exclude_algorithms = {value};
    EXPECT_THAT(
        ReadTrainingSplits(options),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << value;
  }
  options.exclude_algorithms = {"model/m2", "model/m"};
  EXPECT_THAT(
      ReadTrainingSplits(options),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("it is the only algorithm of stage \"model\"")));
}

}  // namespace
}  // namespace metaopt::train
