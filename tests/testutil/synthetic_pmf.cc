#include "tests/testutil/synthetic_pmf.h"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/meta_training/pmf_train.h"
#include "core/registry/artifact.h"
#include "core/space/random.h"

namespace metaopt::train::testing {

meta::MetaDataset SyntheticPmfDataset(const SyntheticPmfOptions& options) {
  space::Rng rng(options.seed);
  meta::MetaDataset data;
  data.name = "synthetic-pmf";
  v1::Stage* stage = data.space.add_stages();
  stage->set_name("model");
  v1::Algorithm* algorithm = stage->add_algorithms();
  algorithm->set_name("m");
  v1::Parameter* parameter = algorithm->add_parameters();
  parameter->set_name("x");
  parameter->mutable_float_domain()->set_low(0);
  parameter->mutable_float_domain()->set_high(1);
  data.objective.set_name("error");
  data.objective.set_goal(v1::GOAL_MINIMIZE);
  for (int k = 0; k < options.rank; ++k) {
    data.metafeature_names.push_back(absl::StrCat("w", k));
  }
  data.metafeature_names.push_back("n");

  Eigen::MatrixXd z(options.entries, options.rank);
  for (int n = 0; n < options.entries; ++n) {
    for (int k = 0; k < options.rank; ++k) z(n, k) = space::StandardNormal(rng);
  }
  const int total =
      options.train_tasks + options.valid_tasks + options.test_tasks;
  for (int t = 0; t < total; ++t) {
    meta::Task task;
    task.id = absl::StrCat("t", t);
    task.split = t < options.train_tasks ? "train"
                 : t < options.train_tasks + options.valid_tasks ? "valid"
                                                                  : "test";
    Eigen::VectorXd w(options.rank);
    for (int k = 0; k < options.rank; ++k) w[k] = space::StandardNormal(rng);
    if (t + 1 < total) {
      for (int k = 0; k < options.rank; ++k) {
        task.metafeatures[absl::StrCat("w", k)] = w[k];
      }
      task.metafeatures["n"] = 1000 + 500 * w[0];
    }
    for (int n = 0; n < options.entries; ++n) {
      const double u = z.row(n).dot(w);
      const double y = 0.3 + 0.1 * std::tanh(u) + 0.05 * u * u / options.rank +
                       0.01 * space::StandardNormal(rng);
      if (task.split == "train" && space::Uniform01(rng) < options.missing) {
        continue;
      }
      v1::Configuration config;
      v1::Assignment* a = config.add_assignments();
      a->set_stage("model");
      a->set_algorithm("m");
      (*a->mutable_parameters())["x"].set_number(
          options.entries > 1 ? static_cast<double>(n) / (options.entries - 1)
                              : 0.0);
      task.configurations.push_back(std::move(config));
      task.y.push_back(y);
    }
    data.tasks.push_back(std::move(task));
  }
  return data;
}

absl::StatusOr<v1::ModelArtifact> TrainSyntheticPmfArtifact(
    const SyntheticPmfOptions& options) {
  const meta::MetaDataset data = SyntheticPmfDataset(options);
  METAOPT_ASSIGN_OR_RETURN(std::vector<const meta::Task*> train,
                           data.TasksOfSplit("train"));
  METAOPT_ASSIGN_OR_RETURN(std::vector<const meta::Task*> valid,
                           data.TasksOfSplit("valid"));
  METAOPT_ASSIGN_OR_RETURN(PmfProblem problem,
                           BuildPmfProblem(data, train, valid));
  PmfTrainOptions train_options;
  train_options.latent_dim = 3;
  train_options.epochs = 60;
  train_options.batch_datasets = 10;
  train_options.learning_rate = 0.03;
  METAOPT_ASSIGN_OR_RETURN(
      surrogate::PmfModel model,
      TrainPmfModel(problem, train_options, nullptr, nullptr));
  v1::ModelArtifact artifact;
  artifact.set_format_version(registry::kCurrentFormatVersion);
  artifact.set_kind(v1::MODEL_KIND_PMF);
  *artifact.mutable_search_space() = data.space;
  *artifact.mutable_objective() = data.objective;
  for (const v1::Configuration& c : problem.catalogue) {
    *artifact.add_catalogue() = c;
  }
  model.ToArtifact(&artifact);
  AddPmfWarmStartData(problem, train, /*depth=*/8, &artifact);
  for (int n : AverageRankOrder(problem)) {
    if (artifact.portfolio_size() >= 4) break;
    *artifact.add_portfolio() = problem.catalogue[n];
  }
  artifact.mutable_provenance()->set_data_name(data.name);
  artifact.mutable_provenance()->set_split("train");
  for (const meta::Task* task : train) {
    artifact.mutable_provenance()->add_task_ids(task->id);
  }
  return artifact;
}

}  // namespace metaopt::train::testing
