#include "core/meta_training/deeppipe_train.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/strings/str_split.h"
#include "core/gp/gaussian_process.h"
#include "core/meta_dataset/meta_dataset.h"
#include "core/meta_training/fsbo_train.h"
#include "core/meta_training/train_main.h"
#include "core/registry/artifact.h"
#include "core/space/random.h"
#include "core/surrogate/deeppipe_model.h"
#include "core/surrogate/output_head.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/meta_dataset_folders.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::train {
namespace {

using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using surrogate::DeepPipeModel;
using ::testing::HasSubstr;

// One stage "model" with two algorithms: "a" (x in [0, 1]) and "b" (u in
// [0, 1], kind in {p, q}). Every task is y = A_t g(config) + B_t + noise with
// a shared, wiggly g and task-specific scale and offset: after per-task
// standardisation the tasks look alike, so meta-learning pays off.
v1::SearchSpace ToySpace() {
  v1::SearchSpace space;
  v1::Stage* stage = space.add_stages();
  stage->set_name("model");
  v1::Algorithm* a = stage->add_algorithms();
  a->set_name("a");
  v1::Parameter* x = a->add_parameters();
  x->set_name("x");
  x->mutable_float_domain()->set_low(0.0);
  x->mutable_float_domain()->set_high(1.0);
  v1::Algorithm* b = stage->add_algorithms();
  b->set_name("b");
  v1::Parameter* u = b->add_parameters();
  u->set_name("u");
  u->mutable_float_domain()->set_low(0.0);
  u->mutable_float_domain()->set_high(1.0);
  v1::Parameter* kind = b->add_parameters();
  kind->set_name("kind");
  kind->mutable_categorical_domain()->add_values("p");
  kind->mutable_categorical_domain()->add_values("q");
  return space;
}

v1::Configuration Config(space::Rng& rng, double* g) {
  v1::Configuration c;
  v1::Assignment* as = c.add_assignments();
  as->set_stage("model");
  if (space::Uniform01(rng) < 0.5) {
    const double x = space::Uniform01(rng);
    as->set_algorithm("a");
    (*as->mutable_parameters())["x"].set_number(x);
    *g = std::sin(9.0 * x);
  } else {
    const double u = space::Uniform01(rng);
    const bool p = space::Uniform01(rng) < 0.5;
    as->set_algorithm("b");
    (*as->mutable_parameters())["u"].set_number(u);
    (*as->mutable_parameters())["kind"].set_category(p ? "p" : "q");
    *g = std::cos(7.0 * u) + (p ? 0.8 : -0.8);
  }
  return c;
}

meta::MetaDataset ToyDataset(int train, int valid, int test, int rows) {
  meta::MetaDataset data;
  data.name = "toy";
  data.space = ToySpace();
  data.objective.set_name("accuracy");
  data.objective.set_goal(v1::GOAL_MAXIMIZE);
  space::Rng rng(2024);
  const int total = train + valid + test;
  for (int t = 0; t < total; ++t) {
    meta::Task task;
    task.id = absl::StrCat("t", t);
    task.split = t < train ? "train" : t < train + valid ? "valid" : "test";
    const double scale = 0.05 + 0.1 * space::Uniform01(rng);
    const double offset = 0.5 + 0.3 * space::Uniform01(rng);
    for (int r = 0; r < rows; ++r) {
      double g = 0.0;
      task.configurations.push_back(Config(rng, &g));
      task.y.push_back(offset + scale * g +
                       0.01 * scale * space::StandardNormal(rng));
    }
    data.tasks.push_back(std::move(task));
  }
  return data;
}

class DeepPipeTrainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_dir_ = temp_.File("toy");
    METAOPT_ASSERT_OK(
        meta::WriteMetaDataset(ToyDataset(12, 3, 4, 60), data_dir_));
    METAOPT_ASSERT_OK_AND_ASSIGN(data_, meta::ReadMetaDataset(data_dir_));
    METAOPT_ASSERT_OK_AND_ASSIGN(train_, data_.TasksOfSplit("train"));
    METAOPT_ASSERT_OK_AND_ASSIGN(valid_, data_.TasksOfSplit("valid"));
    METAOPT_ASSERT_OK_AND_ASSIGN(test_, data_.TasksOfSplit("test"));
  }

  static DeepPipeTrainOptions SmallOptions() {
    DeepPipeTrainOptions options;
    options.epochs = 40;
    options.batch_size = 40;
    options.lr = 3e-3;
    options.min_lr = 1e-5;
    options.seed = 5;
    options.architecture.width_factor = 4;
    options.architecture.embedding = 6;
    return options;
  }

  // Mean predictive NLL (standardised units) of a test task's remaining
  // evaluations after conditioning on its first `support`.
  double HeldOutNll(const DeepPipeModel& model, int support) const {
    double total = 0.0;
    for (const meta::Task* task : test_) {
      const Eigen::MatrixXd X =
          model.encoder().EncodeBatch(task->configurations);
      Eigen::VectorXd y =
          -Eigen::Map<const Eigen::VectorXd>(task->y.data(), task->y.size());
      const int n = static_cast<int>(y.size());
      auto posterior = model.Posterior(X.topRows(support), y.head(support));
      EXPECT_TRUE(posterior.ok()) << posterior.status();
      auto pred = (*posterior)->Predict(X.bottomRows(n - support));
      EXPECT_TRUE(pred.ok()) << pred.status();
      const gp::Standardization s =
          gp::Standardization::FromTargets(y.head(support));
      const double noise = model.gp().noise_variance() * s.scale * s.scale;
      double nll = 0.0;
      for (int i = 0; i < n - support; ++i) {
        const double v = pred->variance[i] + noise;
        const double r = y[support + i] - pred->mean[i];
        nll += 0.5 * (std::log(2 * M_PI * v) + r * r / v);
      }
      total += nll / (n - support) - std::log(s.scale);
    }
    return total / test_.size();
  }

  ScopedTempDir temp_;
  std::string data_dir_;
  meta::MetaDataset data_;
  std::vector<const meta::Task*> train_, valid_, test_;
};

TEST_F(DeepPipeTrainTest, ValidationNllDecreasesAndTransfersToHeldOutTasks) {
  std::vector<DeepPipeEpochStats> seen;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeTrainResult result,
      TrainDeepPipe(data_, train_, valid_, SmallOptions(),
                    [&](const DeepPipeEpochStats& s) { seen.push_back(s); }));
  ASSERT_EQ(result.history.size(), 41u);
  ASSERT_EQ(seen.size(), 41u);
  EXPECT_EQ(seen.back().epoch, 40);
  const double initial = result.history[0].valid_nll;
  const double best = result.history[result.best_epoch].valid_nll;
  EXPECT_GT(result.best_epoch, 0);
  EXPECT_LT(best, initial - 0.2) << "initial " << initial << " best " << best;
  for (const DeepPipeEpochStats& s : result.history) {
    EXPECT_EQ(s.failed_steps, 0) << s.epoch;
  }
  EXPECT_LT(result.history.back().train_nll, result.history[1].train_nll);

  // The meta-learned model predicts unseen tasks from 8 points better than the
  // same network untrained.
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel untrained,
      DeepPipeModel::Create(data_.space, SmallOptions().architecture, 5));
  const double before = HeldOutNll(untrained, 8);
  const double after = HeldOutNll(result.best, 8);
  EXPECT_LT(after, before - 0.2)
      << "untrained " << before << " meta-learned " << after;
}

TEST_F(DeepPipeTrainTest, DeterministicForAFixedSeedAndThreadCount) {
  DeepPipeTrainOptions options = SmallOptions();
  options.epochs = 3;
  options.threads = 2;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeTrainResult a,
                               TrainDeepPipe(data_, train_, valid_, options));
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeTrainResult b,
                               TrainDeepPipe(data_, train_, valid_, options));
  EXPECT_EQ(a.best.parameters(), b.best.parameters());
  EXPECT_EQ(a.history.back().valid_nll, b.history.back().valid_nll);
  options.threads = 1;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeTrainResult c,
                               TrainDeepPipe(data_, train_, valid_, options));
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeTrainResult d,
                               TrainDeepPipe(data_, train_, valid_, options));
  EXPECT_EQ(c.best.parameters(), d.best.parameters());
}

// The float32 network path (the meta-training speed option) learns the toy
// problem as the float64 one does, and its checkpoint is an ordinary double
// model: the same tensors, loadable, serving as any other.
TEST_F(DeepPipeTrainTest, Float32NetworkTrainsLikeFloat64) {
  DeepPipeTrainOptions options = SmallOptions();
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeTrainResult wide,
                               TrainDeepPipe(data_, train_, valid_, options));
  options.precision = surrogate::NetworkPrecision::kFloat32;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeTrainResult single,
                               TrainDeepPipe(data_, train_, valid_, options));
  for (const DeepPipeEpochStats& s : single.history) {
    EXPECT_EQ(s.failed_steps, 0) << s.epoch;
  }
  EXPECT_LT(single.history.back().train_nll, single.history[1].train_nll);
  const double initial = single.history[0].valid_nll;
  const double best = single.history[single.best_epoch].valid_nll;
  const double best_wide = wide.history[wide.best_epoch].valid_nll;
  EXPECT_EQ(initial, wide.history[0].valid_nll);  // The same start.
  EXPECT_LT(best, initial - 0.2) << "initial " << initial << " best " << best;
  EXPECT_NEAR(best, best_wide, 0.05);
  // Another arithmetic, so not the same parameters bit for bit.
  EXPECT_NE(single.best.parameters(), wide.best.parameters());

  v1::ModelArtifact a, b;
  single.best.ToArtifact(&a);
  wide.best.ToArtifact(&b);
  ASSERT_EQ(a.tensors_size(), b.tensors_size());
  for (int t = 0; t < a.tensors_size(); ++t) {
    EXPECT_EQ(a.tensors(t).name(), b.tensors(t).name());
    EXPECT_THAT(a.tensors(t).shape(),
                ::testing::ElementsAreArray(b.tensors(t).shape()))
        << a.tensors(t).name();
  }
  ASSERT_EQ(a.int_options().size(), b.int_options().size());
  for (const auto& [key, value] : b.int_options()) {
    EXPECT_EQ(a.int_options().at(key), value) << key;
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel loaded,
                               DeepPipeModel::FromArtifact(a));
  EXPECT_EQ(loaded.parameters(), single.best.parameters());
  const double held_out = HeldOutNll(loaded, 8);
  const double held_out_wide = HeldOutNll(wide.best, 8);
  EXPECT_NEAR(held_out, held_out_wide, 0.1);
}

TEST_F(DeepPipeTrainTest, AugmentationAndNoValidationTasks) {
  DeepPipeTrainOptions options = SmallOptions();
  options.epochs = 2;
  options.augmentation = true;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeTrainResult result,
                               TrainDeepPipe(data_, train_, {}, options));
  EXPECT_EQ(result.best_epoch, 2);  // The last epoch without validation.
  EXPECT_TRUE(std::isnan(result.history[2].valid_nll));
  EXPECT_TRUE(std::isfinite(result.history[2].train_nll));
}

TEST_F(DeepPipeTrainTest, RejectsBadOptionsAndTasks) {
  DeepPipeTrainOptions options = SmallOptions();
  options.batch_size = 1;
  EXPECT_THAT(TrainDeepPipe(data_, train_, valid_, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("batch_size >= 2")));
  options = SmallOptions();
  options.threads = 0;
  EXPECT_THAT(
      TrainDeepPipe(data_, train_, valid_, options).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("threads")));
  EXPECT_THAT(TrainDeepPipe(data_, {}, valid_, SmallOptions()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no training tasks")));
  meta::Task tiny = *train_[0];
  tiny.configurations.resize(1);
  tiny.y.resize(1);
  EXPECT_THAT(TrainDeepPipe(data_, {&tiny}, valid_, SmallOptions()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("has 1 evaluations")));
}

// Tasks whose best configuration moves with a meta-feature: algorithm "a"
// only, y = cos(6 (x - phase_t)) (to maximise, best at x = phase_t) with
// phase_t in [0.2, 0.8]
// the task's meta-feature "phase" (plus a constant "arity"). Per-task
// standardisation leaves nothing but the phase to tell tasks apart.
meta::MetaDataset PhaseDataset(int train, int test, int rows) {
  meta::MetaDataset data;
  data.name = "phase";
  data.space = ToySpace();
  data.objective.set_name("accuracy");
  data.objective.set_goal(v1::GOAL_MAXIMIZE);
  space::Rng rng(77);
  for (int t = 0; t < train + test; ++t) {
    meta::Task task;
    task.id = absl::StrCat("p", t);
    task.split = t < train ? "train" : "test";
    const double phase = 0.2 + 0.6 * space::Uniform01(rng);
    task.metafeatures["phase"] = phase;
    task.metafeatures["arity"] = 2.0;
    for (int r = 0; r < rows; ++r) {
      const double x = (r + 0.5) / rows;
      v1::Configuration c;
      v1::Assignment* as = c.add_assignments();
      as->set_stage("model");
      as->set_algorithm("a");
      (*as->mutable_parameters())["x"].set_number(x);
      task.configurations.push_back(c);
      task.y.push_back(std::cos(6.0 * (x - phase)) +
                       0.01 * space::StandardNormal(rng));
    }
    data.tasks.push_back(std::move(task));
  }
  return data;
}

TEST(DeepPipeConditionedTrainTest, RanksAnUnseenTasksConfigurationsZeroShot) {
  const meta::MetaDataset data = PhaseDataset(16, 6, 30);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<const meta::Task*> train,
                               data.TasksOfSplit("train"));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<const meta::Task*> test,
                               data.TasksOfSplit("test"));
  DeepPipeTrainOptions options;
  options.epochs = 150;
  options.batch_size = 30;
  options.lr = 3e-3;
  options.seed = 2;
  options.architecture.width_factor = 4;
  options.architecture.embedding = 4;
  options.condition_on_features = true;
  options.feature_dropout = 0.1;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeTrainResult result,
                               TrainDeepPipe(data, train, {}, options));
  DeepPipeModel model = result.best;
  ASSERT_TRUE(model.conditioned());
  // Only the feature that varies is read.
  EXPECT_THAT(model.task_features().names(), ::testing::ElementsAre("phase"));

  // Before any observation, the best-predicted configuration of an unseen
  // task is near its optimum (x = phase): far better than any one
  // configuration for all tasks (the best a prior that ignores the task
  // can do; all tasks share the grid of x).
  const auto normalised_regret = [](const meta::Task& task, Eigen::Index i) {
    const Eigen::Map<const Eigen::VectorXd> y(task.y.data(), task.y.size());
    return (y.maxCoeff() - y[i]) / (y.maxCoeff() - y.minCoeff());
  };
  double regret = 0.0;
  for (const meta::Task* task : test) {
    model.SetTaskFeatures(task->metafeatures);
    const Eigen::MatrixXd X = model.encoder().EncodeBatch(task->configurations);
    METAOPT_ASSERT_OK_AND_ASSIGN(
        auto prior, model.Posterior(Eigen::MatrixXd(0, model.input_dim()),
                                    Eigen::VectorXd(0)));
    METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction p, prior->Predict(X));
    Eigen::Index pick = 0;
    p.mean.minCoeff(&pick);  // The GP sees losses (negated accuracy).
    regret += normalised_regret(*task, pick) / test.size();
  }
  double blind = std::numeric_limits<double>::infinity();
  for (Eigen::Index i = 0; i < 30; ++i) {
    double r = 0.0;
    for (const meta::Task* task : test) r += normalised_regret(*task, i);
    blind = std::min(blind, r / test.size());
  }
  EXPECT_LT(regret, 0.6 * blind)
      << "mean zero-shot regret " << regret << ", best blind pick " << blind;
}

TEST_F(DeepPipeTrainTest, ConditioningNeedsVaryingFeatures) {
  DeepPipeTrainOptions options = SmallOptions();
  options.epochs = 1;
  options.condition_on_features = true;
  EXPECT_THAT(TrainDeepPipe(data_, train_, valid_, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no meta-feature varies")));
  options.feature_dropout = 1.0;
  EXPECT_THAT(TrainDeepPipe(data_, train_, valid_, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("feature_dropout in [0, 1) (1)")));
}

// Runs metaopt-train with `args` (argv[0] added); its exit code, stderr in
// *err.
int RunTrain(const std::vector<std::string>& args, std::string* err) {
  std::vector<const char*> argv = {"metaopt-train"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, errors;
  const int code =
      MetaoptTrainMain(static_cast<int>(argv.size()), argv.data(), out, errors);
  *err = errors.str();
  return code;
}

// Cost-aware transfer: --kind output-head adds a head for a further column to
// the newest DeepPipe version, as the next version, and says how well it
// fits within tasks.
TEST_F(DeepPipeTrainTest, MetaoptTrainOutputHeadAddsAHeadAsTheNextVersion) {
  // A "seconds" column after y that grows with y (so the embedding, learned
  // for y, carries it).
  {
    const std::string path = data_dir_ + "/evaluations.csv";
    std::ifstream in(path);
    std::string line, text;
    std::getline(in, line);
    text = line + ",seconds\n";
    const size_t y_column = std::count(line.begin(), line.end(), ',');
    while (std::getline(in, line)) {
      std::vector<std::string> cells = absl::StrSplit(line, ',');
      const double y = std::stod(cells[y_column]);
      text += line + "," + std::to_string(std::exp(4 * y)) + "\n";
    }
    std::ofstream(path) << text;
  }
  const std::string registry = temp_.File("registry");
  std::string err;
  ASSERT_EQ(RunTrain({"--kind", "deeppipe", "--data", data_dir_, "--registry",
                      registry, "--name", "toy-dp", "--epochs", "5",
                      "--batch-size", "30", "--embedding", "5", "--quiet"},
                     &err),
            0)
      << err;
  ASSERT_EQ(RunTrain({"--kind", "output-head", "--data", data_dir_,
                      "--registry", registry, "--name", "toy-dp", "--metric",
                      "seconds", "--quiet"},
                     &err),
            0)
      << err;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const registry::LoadedModel> base,
      registry::ReadModelVersion(registry, "toy-dp", 1));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const registry::LoadedModel> headed,
      registry::ReadModelVersion(registry, "toy-dp", 2));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::vector<surrogate::OutputHead> heads,
      surrogate::ReadOutputHeads(headed->artifact, 5));
  ASSERT_EQ(heads.size(), 1u);
  EXPECT_EQ(heads[0].metric, "seconds");
  // The network is the base's.
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel a,
                               DeepPipeModel::FromArtifact(base->artifact));
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel b,
                               DeepPipeModel::FromArtifact(headed->artifact));
  EXPECT_EQ(a.parameters(), b.parameters());
  const auto& metrics = headed->artifact.provenance().validation_metrics();
  EXPECT_LT(metrics.at("output_head/seconds/train_log_rmse"),
            metrics.at("output_head/seconds/train_log_rmse_constant"));
  EXPECT_TRUE(metrics.contains("output_head/seconds/valid_log_rmse"));

  EXPECT_NE(RunTrain({"--kind", "output-head", "--data", data_dir_,
                      "--registry", registry, "--name", "toy-dp", "--quiet"},
                     &err),
            0);
  EXPECT_THAT(err, HasSubstr("--metric: missing"));
  EXPECT_NE(RunTrain({"--kind", "output-head", "--data", data_dir_,
                      "--registry", registry, "--name", "toy-dp", "--metric",
                      "watts", "--quiet"},
                     &err),
            0);
  EXPECT_THAT(err, HasSubstr("--metric watts"));
  EXPECT_NE(RunTrain({"--kind", "output-head", "--data", data_dir_,
                      "--registry", registry, "--name", "nothing", "--metric",
                      "seconds", "--quiet"},
                     &err),
            0);
  EXPECT_THAT(err, HasSubstr("--kind output-head adds to an existing model"));
}

TEST_F(DeepPipeTrainTest, MetaoptTrainPublishesALoadableVersion) {
  const std::string registry = temp_.File("registry");
  const std::vector<std::string> args = {"metaopt-train",
                                         "--kind",
                                         "deeppipe",
                                         "--data",
                                         data_dir_,
                                         "--registry",
                                         registry,
                                         "--name",
                                         "toy-dp",
                                         "--epochs",
                                         "3",
                                         "--batch-size",
                                         "30",
                                         "--threads",
                                         "2",
                                         "--size",
                                         "3",
                                         "--seed",
                                         "1",
                                         "--embedding",
                                         "5",
                                         "--quiet"};
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  ASSERT_EQ(
      MetaoptTrainMain(static_cast<int>(argv.size()), argv.data(), out, err), 0)
      << err.str();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const registry::LoadedModel> loaded,
      registry::ReadModelVersion(registry, "toy-dp", 1));
  const v1::ModelArtifact& artifact = loaded->artifact;
  EXPECT_EQ(artifact.kind(), v1::MODEL_KIND_DEEPPIPE);
  EXPECT_EQ(artifact.portfolio_size(), 3);
  EXPECT_EQ(artifact.int_options().at("embedding"), 5);
  EXPECT_EQ(artifact.objective().goal(), v1::GOAL_MAXIMIZE);
  const auto& metrics = artifact.provenance().validation_metrics();
  EXPECT_TRUE(metrics.contains("valid_nll"));
  EXPECT_TRUE(metrics.contains("initial_valid_nll"));
  EXPECT_EQ(metrics.at("epochs_run"), 3);
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel model,
                               DeepPipeModel::FromArtifact(artifact));
  EXPECT_EQ(model.embedding_dim(), 5);

  // --precision float32 trains the network in float and records it.
  std::vector<std::string> single = args;
  single.insert(single.end(), {"--precision", "float32"});
  std::vector<const char*> single_argv;
  for (const std::string& a : single) single_argv.push_back(a.c_str());
  ASSERT_EQ(MetaoptTrainMain(static_cast<int>(single_argv.size()),
                             single_argv.data(), out, err),
            0)
      << err.str();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const registry::LoadedModel> loaded_single,
      registry::ReadModelVersion(registry, "toy-dp", 2));
  EXPECT_EQ(loaded_single->artifact.int_options().at("train_float32"), 1);
  EXPECT_FALSE(artifact.int_options().contains("train_float32"));
  METAOPT_EXPECT_OK(DeepPipeModel::FromArtifact(loaded_single->artifact));
  single.back() = "float16";
  single_argv.clear();
  for (const std::string& a : single) single_argv.push_back(a.c_str());
  EXPECT_NE(MetaoptTrainMain(static_cast<int>(single_argv.size()),
                             single_argv.data(), out, err),
            0);

  // A flag of this kind with another kind is refused.
  const std::vector<std::string> wrong = {
      "metaopt-train", "--kind", "portfolio", "--data", data_dir_,
      "--registry",    registry, "--epochs",  "3",      "--quiet"};
  std::vector<const char*> wrong_argv;
  for (const std::string& a : wrong) wrong_argv.push_back(a.c_str());
  EXPECT_NE(MetaoptTrainMain(static_cast<int>(wrong_argv.size()),
                             wrong_argv.data(), out, err),
            0);
}

// FSBO's recipe (fsbo_train.h) on the toy tasks: the paper's network and GP,
// task augmentation, batches of 50; meta-training lowers the validation NLL
// below the untrained network's.
TEST_F(DeepPipeTrainTest, FsboRecipeMetaLearns) {
  DeepPipeTrainOptions options = FsboTrainOptions();
  EXPECT_EQ(options.batch_size, 50);
  EXPECT_EQ(options.lr, 1e-3);
  EXPECT_EQ(options.min_lr, options.lr);  // a constant learning rate
  EXPECT_TRUE(options.augmentation);
  EXPECT_EQ(options.architecture.gp, surrogate::DeepKernelGp::kFsbo);
  options.epochs = 30;
  options.seed = 5;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeTrainResult result,
                               TrainDeepPipe(data_, train_, valid_, options));
  const double initial = result.history[0].valid_nll;
  const double best = result.history[result.best_epoch].valid_nll;
  EXPECT_GT(result.best_epoch, 0);
  EXPECT_LT(best, initial - 0.1) << "initial " << initial;
  EXPECT_EQ(result.best.gp().kernel().name(), "rbf");
  EXPECT_EQ(result.best.gp().hyperparameters()[result.best.gp().mean_index()],
            0.0);
}

// MetaoptTrainMain on `args` (argv[0] first): its exit status; stderr to
// *err.
int RunMetaoptTrain(const std::vector<std::string>& args, std::string* err) {
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, errors;
  const int status =
      MetaoptTrainMain(static_cast<int>(argv.size()), argv.data(), out, errors);
  *err = errors.str();
  return status;
}

TEST_F(DeepPipeTrainTest, MetaoptTrainFsboPublishesAnFsboModel) {
  const std::string registry = temp_.File("registry");
  const std::vector<std::string> args = {
      "metaopt-train", "--kind", "fsbo",     "--data", data_dir_,
      "--registry",    registry, "--epochs", "3",      "--steps",
      "500",           "--seed", "1",        "--quiet"};
  std::string err;
  ASSERT_EQ(RunMetaoptTrain(args, &err), 0) << err;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const registry::LoadedModel> loaded,
      registry::ReadModelVersion(registry, "toy-fsbo", 1));
  const v1::ModelArtifact& artifact = loaded->artifact;
  EXPECT_EQ(artifact.kind(), v1::MODEL_KIND_FSBO);
  EXPECT_EQ(artifact.portfolio_size(), 5);  // the paper's I, --size's default
  EXPECT_EQ(artifact.int_options().at("evolutionary_search"), 1);
  EXPECT_EQ(artifact.int_options().at("evolutionary_steps"), 500);
  EXPECT_EQ(artifact.int_options().at("hidden"), 128);
  EXPECT_EQ(artifact.int_options().at("embedding"), 128);
  EXPECT_EQ(artifact.int_options().at("encoder_layers"), 0);
  EXPECT_EQ(artifact.int_options().at("train_batch_size"), 50);
  EXPECT_EQ(artifact.int_options().at("train_augmentation"), 1);
  EXPECT_EQ(artifact.normalization().at("target_standardization"), 0.0);
  const auto& metrics = artifact.provenance().validation_metrics();
  EXPECT_LE(metrics.at("train_objective"),
            metrics.at("greedy_train_objective"));
  ASSERT_NE(loaded->servable.deeppipe, nullptr);
  EXPECT_EQ(loaded->servable.deeppipe->architecture().gp,
            surrogate::DeepKernelGp::kFsbo);
  EXPECT_FALSE(loaded->servable.deeppipe->standardizes_fsbo_targets());
  // --size still sets the portfolio's size; --standardize-targets records
  // the option, which the served model reads back.
  std::vector<std::string> sized = args;
  sized.insert(sized.end(), {"--size", "3", "--standardize-targets", "true"});
  ASSERT_EQ(RunMetaoptTrain(sized, &err), 0) << err;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      loaded, registry::ReadModelVersion(registry, "toy-fsbo", 2));
  EXPECT_EQ(loaded->artifact.portfolio_size(), 3);
  EXPECT_EQ(loaded->artifact.normalization().at("target_standardization"), 1.0);
  ASSERT_NE(loaded->servable.deeppipe, nullptr);
  EXPECT_TRUE(loaded->servable.deeppipe->standardizes_fsbo_targets());
  // DeepPipe's network flags are not FSBO's.
  std::vector<std::string> wrong = args;
  wrong.insert(wrong.end(), {"--encoder-layers", "1"});
  EXPECT_NE(RunMetaoptTrain(wrong, &err), 0);
  EXPECT_THAT(err, HasSubstr("--encoder-layers"));
}

}  // namespace
}  // namespace metaopt::train
