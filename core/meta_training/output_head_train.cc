#include "core/meta_training/output_head_train.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/status_macros.h"
#include "core/surrogate/deeppipe_model.h"
#include "core/surrogate/output_head.h"

namespace metaopt::train {
namespace {

struct OutputHeadFlags {
  std::string metric;
  double lambda = 1.0;
  // Values below it count as it (times measured to the millisecond).
  double floor = 1e-3;
};

// The embeddings and metric values of every row of `tasks`.
struct Rows {
  Eigen::MatrixXd Z;
  Eigen::VectorXd values;
  std::vector<int> tasks;  // each row's task, 0, 1, ...
};

absl::StatusOr<Rows> EmbeddedRows(const surrogate::DeepPipeModel& model,
                                  const std::vector<const meta::Task*>& tasks,
                                  const OutputHeadFlags& flags) {
  std::vector<Eigen::MatrixXd> blocks;
  std::vector<double> values;
  Eigen::Index rows = 0;
  for (const meta::Task* task : tasks) {
    const auto it = task->values.find(flags.metric);
    if (it == task->values.end() || task->configurations.empty()) continue;
    METAOPT_ASSIGN_OR_RETURN(
        Eigen::MatrixXd Z,
        model.Embed(model.encoder().EncodeBatch(task->configurations)));
    rows += Z.rows();
    blocks.push_back(std::move(Z));
    for (double v : it->second) values.push_back(std::max(v, flags.floor));
  }
  Rows out;
  for (size_t b = 0; b < blocks.size(); ++b) {
    out.tasks.insert(out.tasks.end(), blocks[b].rows(), static_cast<int>(b));
  }
  out.Z.resize(rows, model.embedding_dim());
  Eigen::Index at = 0;
  for (const Eigen::MatrixXd& block : blocks) {
    out.Z.middleRows(at, block.rows()) = block;
    at += block.rows();
  }
  out.values = Eigen::Map<const Eigen::VectorXd>(values.data(), values.size());
  return out;
}

// The head's within-task log RMSE and a constant's (the spread within
// tasks), as "<split>_log_rmse" and "<split>_log_rmse_constant" metrics.
absl::Status AddErrors(const surrogate::OutputHead& head, const Rows& rows,
                       const std::string& prefix, const std::string& split,
                       google::protobuf::Map<std::string, double>* metrics,
                       Progress& progress) {
  METAOPT_ASSIGN_OR_RETURN(
      double error,
      surrogate::WithinGroupLogRmse(&head, rows.Z, rows.values, rows.tasks));
  METAOPT_ASSIGN_OR_RETURN(
      double spread,
      surrogate::WithinGroupLogRmse(nullptr, rows.Z, rows.values, rows.tasks));
  (*metrics)[absl::StrCat(prefix, split, "_log_rmse")] = error;
  (*metrics)[absl::StrCat(prefix, split, "_log_rmse_constant")] = spread;
  progress.Log(absl::StrFormat(
      "%s (%d rows): log RMSE within tasks %.3f (a constant per task: %.3f)",
      split, rows.Z.rows(), error, spread));
  return absl::OkStatus();
}

absl::StatusOr<v1::ModelArtifact> TrainOutputHead(
    const OutputHeadFlags& flags, const CommonTrainOptions& options,
    const TrainingSplits& given, Progress& progress) {
  // Checked here, not by the command line: --kind selects which kind's
  // flags apply, and a required flag would bind every kind.
  if (flags.metric.empty()) {
    return absl::InvalidArgumentError(
        "--metric: missing; --kind output-head needs the column to model "
        "(e.g. --metric runtime_s)");
  }
  METAOPT_ASSIGN_OR_RETURN(
      std::shared_ptr<const registry::LoadedModel> base,
      NewestModelVersion(options.registry_dir, options.name, "output-head"));
  if (base->artifact.kind() != v1::MODEL_KIND_DEEPPIPE) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--name: model ", base->reference(), " is ",
        v1::ModelKind_Name(base->artifact.kind()),
        "; --kind output-head adds to a MODEL_KIND_DEEPPIPE model"));
  }
  if (base->artifact.search_space().SerializeAsString() !=
      given.dataset.space.SerializeAsString()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--name: model ", base->reference(),
                     " was trained on another search space than ",
                     options.data_dir, "'s"));
  }
  METAOPT_ASSIGN_OR_RETURN(surrogate::DeepPipeModel model,
                           surrogate::DeepPipeModel::FromArtifact(
                               base->artifact));
  // The training data again, with the metric's column.
  meta::ReadOptions read;
  read.splits = {options.split_train};
  if (options.split_valid != "none") read.splits.push_back(options.split_valid);
  read.value_columns = {flags.metric};
  absl::StatusOr<meta::MetaDataset> data =
      meta::ReadMetaDataset(options.data_dir, read);
  if (!data.ok()) {
    return absl::Status(data.status().code(),
                        absl::StrCat("--metric ", flags.metric, ": ",
                                     data.status().message()));
  }
  std::vector<const meta::Task*> train;
  std::vector<const meta::Task*> valid;
  for (const meta::Task& task : data->tasks) {
    if (task.split == options.split_train) train.push_back(&task);
    if (task.split == options.split_valid) valid.push_back(&task);
  }
  METAOPT_ASSIGN_OR_RETURN(Rows train_rows,
                           EmbeddedRows(model, train, flags));
  progress.Log(absl::StrFormat(
      "output head %s: %d rows of %d training tasks embedded by %s",
      flags.metric, train_rows.Z.rows(), train.size(), base->reference()));
  METAOPT_ASSIGN_OR_RETURN(
      surrogate::OutputHead head,
      surrogate::FitOutputHead(flags.metric, train_rows.Z, train_rows.values,
                               flags.lambda, train_rows.tasks));
  v1::ModelArtifact artifact = base->artifact;
  auto* metrics =
      artifact.mutable_provenance()->mutable_validation_metrics();
  const std::string prefix = absl::StrCat("output_head/", flags.metric, "/");
  METAOPT_RETURN_IF_ERROR(
      AddErrors(head, train_rows, prefix, "train", metrics, progress));
  if (!valid.empty()) {
    METAOPT_ASSIGN_OR_RETURN(Rows valid_rows,
                             EmbeddedRows(model, valid, flags));
    if (valid_rows.Z.rows() >= 2) {
      METAOPT_RETURN_IF_ERROR(
          AddErrors(head, valid_rows, prefix, "valid", metrics, progress));
    }
  }
  // The head replaces one of the same metric.
  auto* tensors = artifact.mutable_tensors();
  const std::string own = absl::StrCat(surrogate::kOutputHeadPrefix,
                                       flags.metric, "/");
  tensors->erase(std::remove_if(tensors->begin(), tensors->end(),
                                [&](const v1::Tensor& t) {
                                  return absl::StartsWith(t.name(), own);
                                }),
                 tensors->end());
  for (v1::Tensor& t : surrogate::OutputHeadTensors(head)) {
    *tensors->Add() = std::move(t);
  }
  return artifact;
}

}  // namespace

TrainerKind OutputHeadTrainerKind() {
  TrainerKind kind;
  kind.name = "output-head";
  kind.description =
      "cost-aware transfer: a linear model of log(--metric) on the pipeline "
      "embedding of the DeepPipe model --name, added as its next version";
  kind.add_flags = [](CLI::App& flags) -> Trainer {
    auto state = std::make_shared<OutputHeadFlags>();
    flags
        .add_option("--metric", state->metric,
                    "a column of evaluations.csv after y (e.g. runtime_s); "
                    "required");
    flags
        .add_option("--lambda", state->lambda,
                    "ridge penalty on the head's weights")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1e12));
    flags
        .add_option("--floor", state->floor,
                    "values below it count as it (log of a zero time)")
        ->capture_default_str()
        ->check(CLI::Range(1e-12, 1e12));
    return [state](const CommonTrainOptions& options,
                   const TrainingSplits& data,
                   Progress& progress) -> absl::StatusOr<v1::ModelArtifact> {
      return TrainOutputHead(*state, options, data, progress);
    };
  };
  return kind;
}

}  // namespace metaopt::train
