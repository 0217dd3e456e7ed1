#include "core/meta_training/metabu.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/testutil/meta_dataset_folders.h"
#include "core/meta_training/optimal_transport.h"
#include "tests/testutil/synthetic_pmf.h"
#include "google/protobuf/util/json_util.h"
#include "tests/testutil/sample_families.h"
#include "tests/testutil/synthetic_grosi.h"
#include "core/meta_training/portfolio.h"
#include "core/meta_training/train_main.h"
#include "core/registry/artifact.h"
#include "core/registry/task_design.h"
#include "core/surrogate/dataset2vec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::train {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::AnyOf;
using ::testing::HasSubstr;

Eigen::MatrixXd Random(int rows, int cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Eigen::MatrixXd m(rows, cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) m(i, j) = normal(rng);
  return m;
}

TEST(MinCostAssignmentTest, FindsTheOptimumOfASmallKnownCase) {
  Eigen::MatrixXd cost(3, 3);
  cost << 4, 1, 3,  //
      2, 0, 5,      //
      3, 2, 2;
  // Optimum 5: rows -> columns 1, 0, 2 (1 + 2 + 2).
  EXPECT_EQ(MinCostAssignment(cost), (std::vector<int>{1, 0, 2}));
}

TEST(MinCostAssignmentTest, MatchesBruteForceOnRandomMatrices) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Eigen::MatrixXd cost = Random(5, 5, seed).cwiseAbs();
    std::vector<int> perm = {0, 1, 2, 3, 4};
    double best = 1e300;
    do {
      double total = 0;
      for (int i = 0; i < 5; ++i) total += cost(i, perm[i]);
      best = std::min(best, total);
    } while (std::next_permutation(perm.begin(), perm.end()));
    const std::vector<int> assignment = MinCostAssignment(cost);
    double total = 0;
    for (int i = 0; i < 5; ++i) total += cost(i, assignment[i]);
    EXPECT_NEAR(total, best, 1e-12) << "seed " << seed;
  }
}

TEST(UniformWassersteinTest, ZeroForAPermutationAndKnownForAShift) {
  const Eigen::MatrixXd a = Random(6, 3, 1);
  Eigen::MatrixXd permuted = a;
  permuted.row(0).swap(permuted.row(5));
  permuted.row(2).swap(permuted.row(3));
  EXPECT_NEAR(UniformWasserstein(a, permuted), 0.0, 1e-12);
  // Shifting every point by v costs |v|^2 (squared Euclidean ground cost).
  Eigen::MatrixXd shifted = a;
  shifted.rowwise() += Eigen::RowVector3d(0.1, -0.2, 0.2);
  EXPECT_NEAR(UniformWasserstein(a, shifted), 0.09, 1e-12);
}

TEST(FusedGromovWassersteinTest, GradientMatchesFiniteDifferences) {
  const Eigen::MatrixXd source = Random(5, 2, 3);
  const Eigen::MatrixXd target = Random(5, 2, 4);
  for (const bool correspondence : {true, false}) {
    const Eigen::MatrixXd initial =
        correspondence ? Eigen::MatrixXd(Eigen::MatrixXd::Identity(5, 5) / 5)
                       : Eigen::MatrixXd(Eigen::MatrixXd::Constant(5, 5, 0.04));
    const FgwResult result =
        FusedGromovWasserstein(source, target, initial, FgwOptions());
    // The gradient holds the plan fixed: differentiate the value under it.
    auto value_at = [&](const Eigen::MatrixXd& s) {
      FgwOptions fixed;
      fixed.proximal_iterations = 0;  // keep the initial plan
      return FusedGromovWasserstein(s, target, result.coupling, fixed).value;
    };
    EXPECT_NEAR(value_at(source), result.value, 1e-12);
    const double h = 1e-6;
    for (int i = 0; i < 5; ++i) {
      for (int d = 0; d < 2; ++d) {
        Eigen::MatrixXd plus = source, minus = source;
        plus(i, d) += h;
        minus(i, d) -= h;
        const double numeric = (value_at(plus) - value_at(minus)) / (2 * h);
        EXPECT_NEAR(result.gradient(i, d), numeric, 1e-6)
            << "point " << i << " dim " << d << " correspondence "
            << correspondence;
      }
    }
  }
}

TEST(FusedGromovWassersteinTest, PlanHasUniformMarginalsAndZeroCostOnACopy) {
  const Eigen::MatrixXd points = Random(6, 2, 5);
  const FgwResult same = FusedGromovWasserstein(
      points, points, Eigen::MatrixXd::Identity(6, 6) / 6.0);
  EXPECT_NEAR(same.value, 0.0, 1e-12);
  const FgwResult other = FusedGromovWasserstein(
      points, Random(6, 2, 6), Eigen::MatrixXd::Constant(6, 6, 1.0 / 36));
  EXPECT_TRUE(other.coupling.rowwise().sum().isApproxToConstant(1.0 / 6, 1e-3));
  EXPECT_GT(other.value, 0.0);
}

TEST(IntrinsicDimensionTest, RecoversTheDimensionOfAPlaneInFiveDimensions) {
  // 400 points on a 2-D plane embedded in R^5.
  const Eigen::MatrixXd plane = Random(400, 2, 7) * Random(2, 5, 8);
  const Eigen::MatrixXd distances = SquaredDistances(plane, plane).cwiseSqrt();
  EXPECT_THAT(IntrinsicDimension(distances), AnyOf(2, 3));
  const Eigen::MatrixXd cloud = Random(400, 6, 9);
  EXPECT_GE(IntrinsicDimension(SquaredDistances(cloud, cloud).cwiseSqrt()), 5);
}

TEST(ClassicalMdsTest, ReproducesEuclideanDistances) {
  const Eigen::MatrixXd points = Random(8, 3, 10);
  const Eigen::MatrixXd distances =
      SquaredDistances(points, points).cwiseSqrt();
  const Eigen::MatrixXd embedded = ClassicalMds(distances, 3);
  EXPECT_TRUE(SquaredDistances(embedded, embedded)
                  .cwiseSqrt()
                  .isApprox(distances, 1e-8));
}

TEST(NdcgAtKTest, OneForThePerfectRankingAndKnownForOneSwap) {
  Eigen::MatrixXd truth(1, 4);
  truth << 0.1, 0.2, 0.3, 0.4;
  EXPECT_DOUBLE_EQ(NdcgAtK(truth, truth, 2), 1.0);
  Eigen::MatrixXd predicted(1, 4);
  predicted << 0.1, 0.9, 0.2, 0.3;  // ranks: 0, 2, 3, 1
  // Top 2 predicted: columns 0 (relevant) and 2 (not): 1 / (1 + 1/log2 3).
  EXPECT_NEAR(NdcgAtK(predicted, truth, 2), 1.0 / (1.0 + 1.0 / std::log2(3.0)),
              1e-12);
}

// Tasks whose top configurations are a function of a hidden 1-D variable,
// observed through one informative and three noise meta-features.
std::vector<MetabuTask> LineTasks(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::normal_distribution<double> noise(0, 1);
  std::vector<MetabuTask> tasks;
  for (int t = 0; t < count; ++t) {
    const double hidden = uniform(rng);
    MetabuTask task;
    task.id = "t" + std::to_string(t);
    task.features = Eigen::VectorXd(4);
    task.features << 3 * (hidden - 0.5), noise(rng), noise(rng), noise(rng);
    task.top = Eigen::MatrixXd(5, 2);
    for (int i = 0; i < 5; ++i) {
      task.top(i, 0) = hidden + 0.02 * noise(rng);
      task.top(i, 1) = 0.5 + 0.02 * noise(rng);
    }
    tasks.push_back(std::move(task));
  }
  return tasks;
}

TEST(FitMetabuTest, LearnsToWeighTheInformativeFeature) {
  const std::vector<MetabuTask> train = LineTasks(40, 11);
  const std::vector<MetabuTask> valid = LineTasks(15, 12);
  MetabuOptions options;
  options.dimension = 1;
  options.patience = 200;
  options.max_steps = 1500;
  METAOPT_ASSERT_OK_AND_ASSIGN(MetabuFit fit, FitMetabu(train, valid, options));
  EXPECT_TRUE(fit.criterion_on_valid);
  EXPECT_EQ(fit.projection.rows(), 1);
  EXPECT_EQ(fit.projection.cols(), 4);
  // The informative feature dominates the map.
  const double informative = std::abs(fit.projection(0, 0));
  EXPECT_GT(informative, 2 * fit.projection.rightCols(3).cwiseAbs().maxCoeff());
  EXPECT_GT(fit.ndcg, 0.7);
  // Same inputs and seed, same map.
  METAOPT_ASSERT_OK_AND_ASSIGN(MetabuFit again,
                               FitMetabu(train, valid, options));
  EXPECT_EQ(again.projection, fit.projection);
}

TEST(FitMetabuTest, RejectsTooFewOrInconsistentTasks) {
  std::vector<MetabuTask> tasks = LineTasks(2, 1);
  EXPECT_THAT(FitMetabu(tasks, {}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at least 3 training tasks")));
  tasks = LineTasks(5, 1);
  tasks[3].features = Eigen::VectorXd::Zero(2);
  EXPECT_THAT(FitMetabu(tasks, {}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("training task \"t3\"")));
}

TEST(MetabuTrainerKindTest, AddsADesignToAnExistingModel) {
  metaopt::testing::ScopedTempDir dir;
  ASSERT_THAT(
      meta::WriteMetaDataset(testing::SyntheticPmfDataset(), dir.File("data")),
      metaopt::testing::IsOk());
  const std::string data = dir.File("data");
  const std::string models = dir.File("models");
  {
    const char* argv[] = {
        "metaopt-train", "--kind",       "portfolio", "--data", data.c_str(),
        "--registry",    models.c_str(), "--size",    "4",      "--quiet"};
    std::ostringstream out, err;
    ASSERT_EQ(
        MetaoptTrainMain(static_cast<int>(std::size(argv)), argv, out, err), 0)
        << err.str();
  }
  const char* argv[] = {"metaopt-train",
                        "--kind",
                        "metabu",
                        "--data",
                        data.c_str(),
                        "--registry",
                        models.c_str(),
                        "--name",
                        "data-portfolio",
                        "--top",
                        "5",
                        "--neighbours",
                        "3",
                        "--quiet"};
  std::ostringstream out, err;
  ASSERT_EQ(MetaoptTrainMain(static_cast<int>(std::size(argv)), argv, out, err),
            0)
      << err.str();
  EXPECT_THAT(out.str(), HasSubstr("design/metabu-k3/valid_regret"));
  EXPECT_THAT(out.str(), HasSubstr("design/nearest-k3/valid_regret"));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const registry::LoadedModel> loaded,
      registry::ReadModelVersion(models, "data-portfolio", 2));
  EXPECT_EQ(loaded->artifact.kind(), v1::MODEL_KIND_PORTFOLIO);
  EXPECT_EQ(loaded->artifact.portfolio_size(), 4);
  const v1::TaskDesign& design = loaded->artifact.task_design();
  EXPECT_THAT(design.method(), AnyOf("metabu", "nearest"));
  EXPECT_EQ(design.base_model(), "data-portfolio@1");
  EXPECT_EQ(design.neighbours(), 3);
  EXPECT_EQ(design.tasks_size(), 36);  // 30 train + 6 valid, all with features
  for (const v1::DesignTask& task : design.tasks()) {
    EXPECT_EQ(task.top_size(), 5);
  }
  // A training task's own features find it first, and its best
  // configuration leads the design.
  METAOPT_ASSERT_OK_AND_ASSIGN(meta::MetaDataset dataset,
                               meta::ReadMetaDataset(data));
  const meta::Task& task = dataset.tasks[7];
  const google::protobuf::Map<std::string, double> features(
      task.metafeatures.begin(), task.metafeatures.end());
  const registry::DesignQuery query =
      registry::QueryTaskDesign(design, features);
  ASSERT_EQ(query.neighbours.size(), 3u);
  EXPECT_EQ(query.neighbours[0], task.id);
  EXPECT_TRUE(query.imputed_features.empty());
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::vector<double> regret,
      PortfolioRegretCurve(dataset, {&task}, {*query.configurations[0]},
                           PortfolioMatch::kExact));
  EXPECT_EQ(regret[0], 0.0);

  // Without --name, or for a model that does not exist: clear errors.
  const char* unnamed[] = {"metaopt-train", "--kind",     "metabu",
                           "--data",        data.c_str(), "--registry",
                           models.c_str(),  "--quiet"};
  std::ostringstream out2, err2;
  EXPECT_EQ(MetaoptTrainMain(static_cast<int>(std::size(unnamed)), unnamed,
                             out2, err2),
            1);
  EXPECT_THAT(err2.str(), HasSubstr("--name"));

  // --design portfolio: the next version drops the design again (the fixed
  // portfolio chosen), keeping everything else of the newest version.
  const char* drop[] = {"metaopt-train", "--kind",       "metabu",
                        "--data",        data.c_str(),   "--registry",
                        models.c_str(),  "--name",       "data-portfolio",
                        "--design",      "portfolio",    "--quiet"};
  std::ostringstream out3, err3;
  ASSERT_EQ(
      MetaoptTrainMain(static_cast<int>(std::size(drop)), drop, out3, err3), 0)
      << err3.str();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const registry::LoadedModel> dropped,
      registry::ReadModelVersion(models, "data-portfolio", 3));
  EXPECT_FALSE(dropped->artifact.has_task_design());
  EXPECT_EQ(dropped->artifact.portfolio_size(), 4);
  EXPECT_EQ(
      dropped->artifact.provenance().validation_metrics().at(
          "metabu/portfolio_only"),
      1);
}

// --meta-features d2v: a Dataset2Vec extractor trained on the training
// tasks' samples rides in the artifact (feature_source "d2v"); a study's
// features computed from a task's sample at serving (DesignFeatures) are the
// ones the design archived for it, so the task finds itself first.
TEST(MetabuTrainerKindTest, Dataset2VecFeaturesFromTheSamples) {
  metaopt::testing::ScopedTempDir dir;
  const meta::MetaDataset synthetic = testing::SyntheticPmfDataset();
  ASSERT_THAT(meta::WriteMetaDataset(synthetic, dir.File("data")),
              metaopt::testing::IsOk());
  const std::string data = dir.File("data");
  const std::string models = dir.File("models");
  const std::string samples = dir.File("samples");
  std::filesystem::create_directories(samples);
  std::map<std::string, v1::DatasetSample> by_task;
  for (size_t t = 0; t < synthetic.tasks.size(); ++t) {
    const std::string& id = synthetic.tasks[t].id;
    by_task[id] = testing::SampleProto(
        metaopt::testing::SampleFamily(static_cast<int>(t % 4), 40, 3, 500 + t));
    std::string json;
    ASSERT_TRUE(
        google::protobuf::util::MessageToJsonString(by_task[id], &json).ok());
    std::ofstream(samples + "/" + id + ".json") << json;
  }
  auto run = [&](std::vector<std::string> extra, std::string* err_text) {
    std::vector<std::string> args = {
        "metaopt-train", "--kind", "metabu", "--data", data, "--registry",
        models, "--name", "data-portfolio", "--design", "nearest", "--blend",
        "none", "--neighbours", "3", "--meta-features", "d2v", "--quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    const int code =
        MetaoptTrainMain(static_cast<int>(argv.size()), argv.data(), out, err);
    *err_text = err.str();
    return code;
  };
  {
    const char* argv[] = {
        "metaopt-train", "--kind",       "portfolio", "--data", data.c_str(),
        "--registry",    models.c_str(), "--size",    "4",      "--quiet"};
    std::ostringstream out, err;
    ASSERT_EQ(
        MetaoptTrainMain(static_cast<int>(std::size(argv)), argv, out, err), 0)
        << err.str();
  }
  std::string err;
  EXPECT_EQ(run({}, &err), 1);
  EXPECT_THAT(err, HasSubstr("--dataset-samples: required with "
                             "--meta-features d2v"));
  EXPECT_EQ(run({"--dataset-samples", samples, "--dida-max-rows", "8"}, &err),
            1);
  EXPECT_THAT(err, HasSubstr("--dida-max-rows: 8 is below --dida-min-rows 32"));
  ASSERT_EQ(run({"--dataset-samples", samples, "--d2v-epochs", "2",
                 "--d2v-steps", "3", "--d2v-width", "8"},
                &err),
            0)
      << err;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const registry::LoadedModel> loaded,
      registry::ReadModelVersion(models, "data-portfolio", 2));
  const v1::ModelArtifact& artifact = loaded->artifact;
  const v1::TaskDesign& design = artifact.task_design();
  EXPECT_EQ(design.feature_source(), "d2v");
  EXPECT_EQ(design.feature_names(0), "d2v_0");
  EXPECT_TRUE(artifact.provenance().validation_metrics().contains(
      "d2v/identification_accuracy"));
  METAOPT_ASSERT_OK_AND_ASSIGN(const nn::TensorMap tensors,
                               nn::IndexTensors(artifact.tensors()));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      surrogate::Dataset2Vec d2v,
      surrogate::Dataset2Vec::Read(surrogate::kDesignD2vPrefix, artifact,
                                   tensors));
  EXPECT_EQ(d2v.architecture().f_width, 8);
  const meta::Task& task = synthetic.tasks[7];
  v1::StudySpec spec;
  *spec.mutable_dataset_sample() = by_task.at(task.id);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto features,
                               registry::DesignFeatures(artifact, spec));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      const surrogate::RawSample raw,
      surrogate::RawSampleFromProto(spec.dataset_sample()));
  const std::map<std::string, double> offline =
      surrogate::Dataset2VecFeatures(d2v, raw);
  ASSERT_EQ(features.size(), offline.size());
  for (const auto& [name, value] : offline) EXPECT_EQ(features.at(name), value);
  const registry::DesignQuery query =
      registry::QueryTaskDesign(design, features);
  ASSERT_FALSE(query.neighbours.empty());
  EXPECT_EQ(query.neighbours[0], task.id);
  EXPECT_TRUE(query.imputed_features.empty());
  // Without a sample: INVALID_ARGUMENT naming spec.dataset_sample.
  EXPECT_THAT(registry::DesignFeatures(artifact, v1::StudySpec()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.dataset_sample: absent")));
}

}  // namespace
}  // namespace metaopt::train
