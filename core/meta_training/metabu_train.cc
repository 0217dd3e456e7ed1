#include "core/meta_training/metabu_train.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/status_macros.h"
#include "core/meta_dataset/dataset_samples.h"
#include "core/meta_training/dataset2vec_train.h"
#include "core/meta_training/dida_train.h"
#include "core/meta_training/metabu.h"
#include "core/meta_training/portfolio.h"
#include "core/registry/artifact.h"
#include "core/registry/task_design.h"
#include "core/space/encoding.h"

namespace metaopt::train {
namespace {

// The design is judged on the validation tasks by its regret over this many
// first trials (the horizon the task-aware start is for).
constexpr int kSelectionHorizon = 10;

struct MetabuFlags {
  int top = 20;  // L, the top configurations per task
  // K, the nearest tasks of a study's design; 0: chosen on the validation
  // split among 3, 5 and 10.
  int neighbours = 0;
  std::string design = "auto";
  std::string blend = "auto";  // none, interleave or auto
  MetabuOptions fit;
  // The tasks' meta-features: "engineered" (metafeatures.csv), "dida" or
  // "d2v" (learned from the raw samples of --dataset-samples).
  std::string features = "engineered";
  std::string dataset_samples;
  int dida_layers = 2;  // invariant layers
  DidaTrainOptions dida;
  Dataset2VecTrainOptions d2v;
  int d2v_width = 32;  // f, g and h
};

// INVALID_ARGUMENT naming the flag, its value and the rule for the flags
// whose rules tie two of them.
absl::Status CheckLearnedFlags(const MetabuFlags& flags) {
  const DidaTrainOptions& d = flags.dida;
  if (d.max_rows < d.min_rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dida-max-rows: ", d.max_rows, " is below --dida-min-rows ",
        d.min_rows, " (a patch's rows are drawn in [min, max])"));
  }
  if (d.equal_rows && d.max_rows == d.min_rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dida-equal-rows: needs two patch sizes, but --dida-min-rows and "
        "--dida-max-rows are both ",
        d.min_rows));
  }
  return absl::OkStatus();
}

// `data` with every train and valid task's meta-features replaced by its
// learned ones, Dida's or Dataset2Vec's (flags.features; none for a task
// without a sample: the design leaves it out), and the extractor, trained by
// identification on the samples of the training tasks only.
struct LearnedSplits {
  TrainingSplits splits;
  // Writes the extractor to an artifact (its prefix: surrogate::kDidaPrefix
  // or surrogate::kDesignD2vPrefix).
  std::function<void(v1::ModelArtifact*)> write;
  double accuracy = 0;
};

absl::StatusOr<LearnedSplits> WithLearnedFeatures(
    const MetabuFlags& flags, const CommonTrainOptions& options,
    const TrainingSplits& data, Progress& progress) {
  if (flags.dataset_samples.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dataset-samples: required with --meta-features ", flags.features,
        " (a folder of <task>.json dataset samples, "
        "data/prep/dataset_samples/export_samples.py)"));
  }
  METAOPT_RETURN_IF_ERROR(CheckLearnedFlags(flags));
  std::vector<std::string> ids;
  for (const auto* split : {&data.train, &data.valid}) {
    for (const meta::Task* task : *split) ids.push_back(task->id);
  }
  METAOPT_ASSIGN_OR_RETURN(
      auto samples,
      meta::ReadDatasetSamples(flags.dataset_samples, ids, "--dataset-samples"));
  std::map<std::string, surrogate::RawSample> raw;
  for (const auto& [id, sample] : samples) {
    absl::StatusOr<surrogate::RawSample> r =
        surrogate::RawSampleFromProto(sample);
    if (!r.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--dataset-samples: task ", id, ": ", r.status().message()));
    }
    raw.emplace(id, *std::move(r));
  }
  std::vector<surrogate::RawSample> train_samples;
  for (const meta::Task* task : data.train) {
    if (auto it = raw.find(task->id); it != raw.end()) {
      train_samples.push_back(it->second);
    }
  }
  progress.Log(absl::StrFormat(
      "%s: %d of %d training tasks and %d of %d validation tasks have a "
      "sample in %s",
      flags.features, train_samples.size(), data.train.size(),
      raw.size() - train_samples.size(), data.valid.size(),
      flags.dataset_samples));
  LearnedSplits out{TrainingSplits{data.folder_name, data.dataset, {}, {}},
                    nullptr, 0};
  std::function<std::map<std::string, double>(const surrogate::RawSample&)>
      features;
  int outputs = 0;
  if (flags.features == surrogate::kDidaPrefix) {
    DidaTrainOptions dida_options = flags.dida;
    dida_options.seed = options.seed;
    if (flags.dida_layers == 1) dida_options.architecture.second_layer = 0;
    METAOPT_ASSIGN_OR_RETURN(DidaFit fit,
                             TrainDida(train_samples, dida_options, &progress));
    auto dida = std::make_shared<const surrogate::Dida>(std::move(fit.dida));
    out.accuracy = fit.accuracy;
    outputs = dida->output();
    out.write = [dida](v1::ModelArtifact* artifact) {
      dida->Write(surrogate::kDidaPrefix, artifact);
    };
    features = [dida](const surrogate::RawSample& sample) {
      return surrogate::DidaFeatures(*dida, sample);
    };
  } else {
    Dataset2VecTrainOptions d2v_options = flags.d2v;
    d2v_options.seed = options.seed;
    d2v_options.architecture.f_width = flags.d2v_width;
    d2v_options.architecture.g_width = flags.d2v_width;
    d2v_options.architecture.h_width = flags.d2v_width;
    METAOPT_ASSIGN_OR_RETURN(
        Dataset2VecFit fit,
        TrainDataset2Vec(train_samples, d2v_options, &progress));
    auto d2v =
        std::make_shared<const surrogate::Dataset2Vec>(std::move(fit.d2v));
    out.accuracy = fit.accuracy;
    outputs = d2v->output();
    out.write = [d2v](v1::ModelArtifact* artifact) {
      d2v->Write(surrogate::kDesignD2vPrefix, artifact);
    };
    features = [d2v](const surrogate::RawSample& sample) {
      return surrogate::Dataset2VecFeatures(*d2v, sample);
    };
  }
  meta::MetaDataset& dataset = out.splits.dataset;
  dataset.metafeature_names.clear();
  for (int k = 0; k < outputs; ++k) {
    dataset.metafeature_names.push_back(absl::StrCat(flags.features, "_", k));
  }
  for (meta::Task& task : dataset.tasks) {
    task.metafeatures.clear();
    if (auto it = raw.find(task.id); it != raw.end()) {
      task.metafeatures = features(it->second);
    }
  }
  auto remap = [&](const std::vector<const meta::Task*>& from,
                   std::vector<const meta::Task*>* to) {
    for (const meta::Task* task : from) {
      to->push_back(&dataset.tasks[task - data.dataset.tasks.data()]);
    }
  };
  remap(data.train, &out.splits.train);
  remap(data.valid, &out.splits.valid);
  return out;
}

// Drops the design extractors a base version carried (its design is
// replaced).
void ClearExtractors(v1::ModelArtifact* artifact) {
  for (const char* prefix :
       {surrogate::kDidaPrefix, surrogate::kDesignD2vPrefix}) {
    const std::string tensor_prefix = absl::StrCat(prefix, ".");
    const std::string option_prefix = absl::StrCat(prefix, "_");
    auto* tensors = artifact->mutable_tensors();
    tensors->erase(
        std::remove_if(tensors->begin(), tensors->end(),
                       [&](const v1::Tensor& t) {
                         return t.name().rfind(tensor_prefix, 0) == 0;
                       }),
        tensors->end());
    auto* ints = artifact->mutable_int_options();
    for (auto it = ints->begin(); it != ints->end();) {
      it = it->first.rfind(option_prefix, 0) == 0 ? ints->erase(it)
                                                   : std::next(it);
    }
  }
}

// Standardizes meta-features with training statistics; a missing feature
// takes the training mean (0 after standardization).
struct FeatureScaler {
  std::vector<std::string> names;
  std::vector<double> means;
  std::vector<double> stds;

  Eigen::VectorXd Standardize(const std::map<std::string, double>& row) const {
    Eigen::VectorXd x = Eigen::VectorXd::Zero(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      const auto it = row.find(names[i]);
      if (it != row.end() && std::isfinite(it->second)) {
        x(i) = (it->second - means[i]) / stds[i];
      }
    }
    return x;
  }
};

// The features known on at least half of the training tasks (and on two),
// with a positive standard deviation there, in `names` order.
FeatureScaler FitScaler(const std::vector<std::string>& names,
                        const std::vector<const meta::Task*>& train) {
  const FeatureStatistics stats = ComputeFeatureStatistics(train);
  FeatureScaler scaler;
  for (const std::string& name : names) {
    const auto it =
        std::lower_bound(stats.names.begin(), stats.names.end(), name);
    if (it == stats.names.end() || *it != name) continue;
    const size_t f = static_cast<size_t>(it - stats.names.begin());
    const double sd = stats.stds[f];
    if (stats.counts[f] < 2 ||
        2 * static_cast<size_t>(stats.counts[f]) < train.size() || !(sd > 0) ||
        !std::isfinite(sd)) {
      continue;
    }
    scaler.names.push_back(name);
    scaler.means.push_back(stats.means[f]);
    scaler.stds.push_back(sd);
  }
  return scaler;
}

// The task's `count` best configurations, best first (ties: file order).
std::vector<const v1::Configuration*> TopConfigurations(const meta::Task& task,
                                                        v1::Goal goal,
                                                        int count) {
  std::vector<int> order(task.y.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return goal == v1::GOAL_MAXIMIZE ? task.y[a] > task.y[b]
                                     : task.y[a] < task.y[b];
  });
  std::vector<const v1::Configuration*> top;
  for (int i = 0; i < count && i < static_cast<int>(order.size()); ++i) {
    top.push_back(&task.configurations[order[i]]);
  }
  return top;
}

// A task with meta-features, prepared for Metabu and for the archive.
struct ArchiveTask {
  const meta::Task* task = nullptr;
  MetabuTask metabu;
  std::vector<const v1::Configuration*> top;
};

std::vector<ArchiveTask> Prepare(const std::vector<const meta::Task*>& tasks,
                                 const FeatureScaler& scaler,
                                 const space::Encoder& encoder, v1::Goal goal,
                                 int top) {
  std::vector<ArchiveTask> out;
  for (const meta::Task* task : tasks) {
    if (task->metafeatures.empty() ||
        static_cast<int>(task->configurations.size()) < top) {
      continue;
    }
    ArchiveTask prepared;
    prepared.task = task;
    prepared.top = TopConfigurations(*task, goal, top);
    prepared.metabu.id = task->id;
    prepared.metabu.features = scaler.Standardize(task->metafeatures);
    prepared.metabu.top.resize(top, encoder.dimension());
    for (int i = 0; i < top; ++i) {
      prepared.metabu.top.row(i) = encoder.Encode(*prepared.top[i]);
    }
    out.push_back(std::move(prepared));
  }
  return out;
}

v1::TaskDesign MakeDesign(const std::string& method,
                          const FeatureScaler& scaler,
                          const Eigen::MatrixXd& projection,
                          const std::vector<ArchiveTask>& archive,
                          int neighbours) {
  v1::TaskDesign design;
  design.set_method(method);
  for (size_t i = 0; i < scaler.names.size(); ++i) {
    design.add_feature_names(scaler.names[i]);
    design.add_feature_means(scaler.means[i]);
    design.add_feature_stds(scaler.stds[i]);
  }
  if (!projection.isIdentity(0)) {  // the identity is stored as no tensor
    v1::Tensor& tensor = *design.mutable_projection();
    tensor.set_name("psi");
    tensor.add_shape(projection.rows());
    tensor.add_shape(projection.cols());
    for (Eigen::Index r = 0; r < projection.rows(); ++r) {
      for (Eigen::Index c = 0; c < projection.cols(); ++c) {
        tensor.add_values(projection(r, c));
      }
    }
  }
  for (const ArchiveTask& task : archive) {
    v1::DesignTask& entry = *design.add_tasks();
    entry.set_task_id(task.task->id);
    const Eigen::VectorXd z = projection * task.metabu.features;
    entry.mutable_embedding()->Add(z.data(), z.data() + z.size());
    for (const v1::Configuration* c : task.top) *entry.add_top() = *c;
  }
  design.set_neighbours(neighbours);
  return design;
}

// Mean over `valid` of the regret curve of each task's design (the first
// `size` distinct configurations) under `design`, whose archive holds only
// training tasks.
absl::StatusOr<std::vector<double>> ValidRegret(
    const meta::MetaDataset& data, const v1::TaskDesign& design,
    const google::protobuf::RepeatedPtrField<v1::Configuration>& portfolio,
    const std::vector<ArchiveTask>& valid, int size) {
  std::vector<double> mean(size, 0.0);
  for (const ArchiveTask& task : valid) {
    google::protobuf::Map<std::string, double> features(
        task.task->metafeatures.begin(), task.task->metafeatures.end());
    const registry::DesignQuery query =
        registry::QueryTaskDesign(design, features, portfolio);
    std::vector<v1::Configuration> picks;
    absl::flat_hash_set<std::string> seen;
    for (const v1::Configuration* c : query.configurations) {
      if (static_cast<int>(picks.size()) >= size) break;
      if (seen.insert(space::ConfigurationKey(*c)).second) picks.push_back(*c);
    }
    METAOPT_ASSIGN_OR_RETURN(std::vector<double> curve,
                             PortfolioRegretCurve(data, {task.task}, picks,
                                                  PortfolioMatch::kNearest));
    for (int k = 0; k < size; ++k) {
      mean[k] += curve[std::min<size_t>(k, curve.size() - 1)] /
                 static_cast<double>(valid.size());
    }
  }
  return mean;
}

double Mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

absl::StatusOr<v1::ModelArtifact> TrainMetabu(
    const MetabuFlags& flags, const CommonTrainOptions& options,
    const TrainingSplits& given, Progress& progress) {
  if (options.name.empty()) {
    return absl::InvalidArgumentError(
        "--name: --kind metabu adds a task-aware design to an existing model "
        "of the registry; name it (e.g. --name oboe-deeppipe)");
  }
  if (flags.features == "engineered" &&
      given.dataset.metafeature_names.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(options.data_dir,
                     " has no metafeatures.csv: Metabu maps meta-features"));
  }
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<const registry::LoadedModel> base,
                           NewestModelVersion(options.registry_dir, options.name,
                                              "metabu"));
  std::optional<LearnedSplits> learned;
  if (flags.features != "engineered" && flags.design != "portfolio") {
    METAOPT_ASSIGN_OR_RETURN(
        learned, WithLearnedFeatures(flags, options, given, progress));
  }
  const TrainingSplits& data = learned.has_value() ? learned->splits : given;
  if (auto mismatch = space::SearchSpace::Create(data.dataset.space);
      !mismatch.ok()) {
    return mismatch.status();
  }
  if (base->artifact.search_space().SerializeAsString() !=
      data.dataset.space.SerializeAsString()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--name: model ", base->reference(),
                     " was trained on another search "
                     "space than ",
                     options.data_dir, "'s"));
  }
  if (flags.design == "portfolio") {
    // The choice to keep the fixed portfolio, published as a version so that
    // a study binding the newest version gets it: the base without a design.
    v1::ModelArtifact artifact = base->artifact;
    artifact.clear_task_design();
    ClearExtractors(&artifact);
    (*artifact.mutable_provenance()
          ->mutable_validation_metrics())["metabu/portfolio_only"] = 1;
    progress.Log(absl::StrCat("metabu: ", base->reference(),
                              " without a task design (the fixed portfolio)"));
    return artifact;
  }
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(data.dataset.space));
  const space::Encoder encoder(space);
  const v1::Goal goal = data.dataset.objective.goal();

  const FeatureScaler scaler =
      FitScaler(data.dataset.metafeature_names, data.train);
  if (scaler.names.empty()) {
    return absl::FailedPreconditionError(
        "no meta-feature varies across the training tasks");
  }
  int top = flags.top;
  for (const meta::Task* task : data.train) {
    if (!task->metafeatures.empty()) {
      top = std::min(top, static_cast<int>(task->configurations.size()));
    }
  }
  const std::vector<ArchiveTask> train =
      Prepare(data.train, scaler, encoder, goal, top);
  const std::vector<ArchiveTask> valid =
      Prepare(data.valid, scaler, encoder, goal, top);
  progress.Log(absl::StrFormat(
      "metabu: %d training and %d validation tasks with meta-features, %d "
      "features, top %d configurations each",
      train.size(), valid.size(), scaler.names.size(), top));

  std::vector<MetabuTask> train_tasks, valid_tasks;
  for (const ArchiveTask& t : train) train_tasks.push_back(t.metabu);
  for (const ArchiveTask& t : valid) valid_tasks.push_back(t.metabu);
  MetabuOptions fit_options = flags.fit;
  fit_options.seed = options.seed;
  METAOPT_ASSIGN_OR_RETURN(MetabuFit fit, FitMetabu(train_tasks, valid_tasks,
                                                    fit_options, &progress));
  progress.Log(absl::StrFormat(
      "metabu: d = %d, best NDCG@%d %.3f (%s) at step %d of %d", fit.dimension,
      fit_options.ndcg_k, fit.ndcg, fit.criterion_on_valid ? "valid" : "train",
      fit.best_step, fit.steps));

  v1::ModelArtifact artifact = base->artifact;
  ClearExtractors(&artifact);
  auto& metrics = *artifact.mutable_provenance()->mutable_validation_metrics();
  if (learned.has_value()) {
    learned->write(&artifact);
    metrics[absl::StrCat(flags.features, "/identification_accuracy")] =
        learned->accuracy;
  }
  metrics["metabu/dimension"] = fit.dimension;
  metrics[absl::StrCat("metabu/ndcg@", fit_options.ndcg_k)] = fit.ndcg;
  const Eigen::MatrixXd identity =
      Eigen::MatrixXd::Identity(scaler.names.size(), scaler.names.size());
  // The candidates: the map(s) --design allows, K from --neighbours (0: 3, 5
  // and 10), alone or interleaved with the model's portfolio (--blend); with
  // validation tasks the one with the lowest mean regret over the first
  // kSelectionHorizon trials wins, otherwise the first.
  std::vector<std::string> methods;
  if (flags.design != "nearest") methods.push_back("metabu");
  if (flags.design != "metabu") methods.push_back("nearest");
  const std::vector<int> ks = flags.neighbours > 0
                                  ? std::vector<int>{flags.neighbours}
                                  : std::vector<int>{3, 5, 10};
  std::vector<std::string> blends;
  if (flags.blend != "interleave") blends.push_back("");
  if (flags.blend != "none" && !base->artifact.portfolio().empty()) {
    blends.push_back("interleave");
  }
  if (blends.empty()) blends.push_back("");
  std::string method = methods.front();
  std::string blend = blends.front();
  int neighbours = ks.size() == 1 ? ks.front() : 5;
  const int size = kSelectionHorizon;
  if (!valid.empty()) {
    double best = std::numeric_limits<double>::infinity();
    for (const std::string& m : methods) {
      for (int k : ks) {
        for (const std::string& b : blends) {
          v1::TaskDesign design = MakeDesign(
              m, scaler, m == "metabu" ? fit.projection : identity, train, k);
          design.set_blend(b);
          METAOPT_ASSIGN_OR_RETURN(
              std::vector<double> regret,
              ValidRegret(data.dataset, design, base->artifact.portfolio(),
                          valid, size));
          const std::string name =
              absl::StrCat(m, "-k", k, b.empty() ? "" : "-", b);
          AddCurveMetrics(absl::StrCat("design/", name, "/valid_regret"),
                          regret, &metrics);
          progress.Log(absl::StrFormat(
              "design %s: mean regret over the first %d trials of %d "
              "validation tasks %.4f (@5 %.4f, @10 %.4f)",
              name, size, valid.size(), Mean(regret), regret[4], regret[9]));
          if (Mean(regret) < best) {
            best = Mean(regret);
            method = m;
            neighbours = k;
            blend = b;
          }
        }
      }
    }
    std::vector<const meta::Task*> valid_with_features;
    for (const ArchiveTask& t : valid) valid_with_features.push_back(t.task);
    std::vector<v1::Configuration> portfolio(base->artifact.portfolio().begin(),
                                             base->artifact.portfolio().end());
    if (!portfolio.empty()) {
      METAOPT_ASSIGN_OR_RETURN(
          std::vector<double> portfolio_regret,
          PortfolioRegretCurve(data.dataset, valid_with_features, portfolio,
                               PortfolioMatch::kNearest));
      portfolio_regret.resize(size, portfolio_regret.back());
      AddCurveMetrics("design/portfolio/valid_regret", portfolio_regret,
                      &metrics);
      progress.Log(absl::StrFormat(
          "fixed portfolio: mean regret %.4f (@5 %.4f, @10 %.4f)",
          Mean(portfolio_regret), portfolio_regret[4], portfolio_regret[9]));
    }
    progress.Log(absl::StrFormat("using %s with K = %d%s", method, neighbours,
                                 blend.empty() ? "" : ", " + blend));
  }
  // The archive: every task with meta-features of both splits.
  std::vector<ArchiveTask> archive = train;
  archive.insert(archive.end(), valid.begin(), valid.end());
  *artifact.mutable_task_design() =
      MakeDesign(method, scaler, method == "metabu" ? fit.projection : identity,
                 archive, neighbours);
  artifact.mutable_task_design()->set_base_model(base->reference());
  artifact.mutable_task_design()->set_blend(blend);
  if (learned.has_value()) {
    artifact.mutable_task_design()->set_feature_source(flags.features);
  }
  return artifact;
}

}  // namespace

TrainerKind MetabuTrainerKind() {
  TrainerKind kind;
  kind.name = "metabu";
  kind.description =
      "task-aware initial design from meta-features (Metabu, ICLR 2022), "
      "added to the model --name as a new version";
  kind.add_flags = [](CLI::App& flags) -> Trainer {
    auto state = std::make_shared<MetabuFlags>();
    flags
        .add_option("--top", state->top,
                    "L: top configurations per task (the target "
                    "representation and the design's entries)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    flags
        .add_option("--neighbours", state->neighbours,
                    "K: nearest archived tasks whose best configurations "
                    "form a study's design (0: 3, 5 or 10, the best on the "
                    "validation tasks)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1000));
    flags
        .add_option("--design", state->design,
                    "metabu, nearest (standardized meta-features, no map), "
                    "auto (the lower validation regret) or portfolio (no "
                    "design: the next version keeps the fixed portfolio)")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "metabu", "nearest", "portfolio"}));
    flags
        .add_option("--blend", state->blend,
                    "none (the neighbours' configurations only), interleave "
                    "(alternately with the model's portfolio) or auto (the "
                    "lower validation regret)")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "none", "interleave"}));
    flags
        .add_option("--alpha", state->fit.alpha,
                    "fused Gromov-Wasserstein trade-off")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
    flags.add_option("--l1", state->fit.l1, "L1 penalty on the map")
        ->capture_default_str()
        ->check(CLI::NonNegativeNumber);
    flags.add_option("--learning-rate", state->fit.learning_rate, "Adam")
        ->capture_default_str()
        ->check(CLI::PositiveNumber);
    flags.add_option("--max-steps", state->fit.max_steps, "Adam steps at most")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000000));
    flags
        .add_option("--patience", state->fit.patience,
                    "steps without a better NDCG before stopping")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000000));
    flags
        .add_option("--dimension", state->fit.dimension,
                    "d of the map (0: the intrinsic dimension, TwoNN)")
        ->capture_default_str()
        ->check(CLI::Range(0, 1000));
    flags
        .add_option("--meta-features", state->features,
                    "the tasks' meta-features: engineered (metafeatures.csv), "
                    "dida or d2v (Dida or Dataset2Vec, learned from the raw "
                    "samples of --dataset-samples by identification of their "
                    "sub-samples; a study then gives spec.dataset_sample)")
        ->capture_default_str()
        ->check(CLI::IsMember({"engineered", "dida", "d2v"}));
    flags.add_option("--dataset-samples", state->dataset_samples,
                     "with --meta-features dida or d2v: the folder of "
                     "<task>.json dataset samples "
                     "(data/prep/dataset_samples/export_samples.py)");
    flags.add_option("--dida-layers", state->dida_layers,
                     "Dida's invariant layers")
        ->capture_default_str()
        ->check(CLI::Range(1, 2));
    flags.add_option("--dida-output", state->dida.architecture.output,
                     "Dida's meta-features")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    flags.add_option("--dida-epochs", state->dida.epochs, "Dida's epochs")
        ->capture_default_str()
        ->check(CLI::Range(0, 100000));
    flags
        .add_option("--dida-steps", state->dida.steps_per_epoch,
                    "Adam steps (batches of 32 patch pairs) per Dida epoch")
        ->capture_default_str()
        ->check(CLI::Range(1, 100000));
    flags
        .add_option("--dida-threads", state->dida.threads,
                    "threads of Dida's training (the same result for any)")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    flags
        .add_option("--dida-min-rows", state->dida.min_rows,
                    "the fewest rows of a Dida training patch")
        ->capture_default_str()
        ->check(CLI::Range(2, 4096));
    flags
        .add_option("--dida-max-rows", state->dida.max_rows,
                    "the most rows of a Dida training patch (at least "
                    "--dida-min-rows)")
        ->capture_default_str()
        ->check(CLI::Range(2, 4096));
    flags.add_flag("--dida-equal-rows", state->dida.equal_rows,
                   "the chapter's label rule: a pair of patches is positive "
                   "iff from the same dataset and with as many rows");
    flags.add_option("--d2v-epochs", state->d2v.epochs, "Dataset2Vec's epochs")
        ->capture_default_str()
        ->check(CLI::Range(0, 100000));
    flags
        .add_option("--d2v-steps", state->d2v.steps_per_epoch,
                    "Adam steps (batches of 32 pairs of dataset batches) per "
                    "Dataset2Vec epoch")
        ->capture_default_str()
        ->check(CLI::Range(1, 100000));
    flags
        .add_option("--d2v-width", state->d2v_width,
                    "the width of Dataset2Vec's f, g and h")
        ->capture_default_str()
        ->check(CLI::Range(1, 1024));
    flags
        .add_option("--d2v-threads", state->d2v.threads,
                    "threads of Dataset2Vec's training (the same result for "
                    "any)")
        ->capture_default_str()
        ->check(CLI::Range(1, 256));
    return [state](const CommonTrainOptions& options,
                   const TrainingSplits& data, Progress& progress) {
      return TrainMetabu(*state, options, data, progress);
    };
  };
  return kind;
}

}  // namespace metaopt::train
