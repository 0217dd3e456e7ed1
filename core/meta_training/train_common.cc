#include "core/meta_training/train_common.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/common/file_util.h"
#include "core/common/proto_time.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/registry/artifact.h"
#include "core/space/search_space.h"

#ifndef METAOPT_TRAIN_VERSION
#define METAOPT_TRAIN_VERSION "unknown"
#endif

namespace metaopt::train {
namespace {

std::string KindName(v1::ModelKind kind) {
  switch (kind) {
    case v1::MODEL_KIND_PORTFOLIO:
      return "portfolio";
    case v1::MODEL_KIND_DEEPPIPE:
      return "deeppipe";
    case v1::MODEL_KIND_PMF:
      return "pmf";
    case v1::MODEL_KIND_GROSI:
      return "grosi";
    case v1::MODEL_KIND_FSBO:
      return "fsbo";
    default:
      return absl::StrCat("kind ", static_cast<int>(kind));
  }
}

std::string FormatBytes(int64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  if (bytes < 1024 * 1024) {
    return absl::StrFormat("%.1f KiB", static_cast<double>(bytes) / 1024);
  }
  return absl::StrFormat("%.1f MiB",
                         static_cast<double>(bytes) / (1024.0 * 1024.0));
}

absl::Status ValidateOptions(const CommonTrainOptions& options) {
  if (options.data_dir.empty()) {
    return absl::InvalidArgumentError(
        "--data: a meta-dataset folder is required");
  }
  if (options.registry_dir.empty()) {
    return absl::InvalidArgumentError(
        "--registry: a registry directory is required");
  }
  if (options.portfolio_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--size: ", options.portfolio_size, " must be at least 1"));
  }
  return absl::OkStatus();
}

// Removes the algorithms named "STAGE/ALGORITHM" in `excluded` from the
// space and every row choosing one of them from the loaded tasks.
absl::Status ExcludeAlgorithms(const std::vector<std::string>& excluded,
                               meta::MetaDataset& dataset) {
  for (const std::string& item : excluded) {
    const size_t slash = item.find('/');
    if (slash == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--exclude-algorithm: ", Quote(item),
                       " is not of the form STAGE/ALGORITHM"));
    }
    const std::string stage_name = item.substr(0, slash);
    const std::string algorithm_name = item.substr(slash + 1);
    v1::Stage* stage = nullptr;
    for (v1::Stage& candidate : *dataset.space.mutable_stages()) {
      if (candidate.name() == stage_name) stage = &candidate;
    }
    if (stage == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("--exclude-algorithm: ", Quote(item),
                       ": the space has no stage ", Quote(stage_name)));
    }
    auto& algorithms = *stage->mutable_algorithms();
    auto found = std::find_if(
        algorithms.begin(), algorithms.end(),
        [&](const v1::Algorithm& a) { return a.name() == algorithm_name; });
    if (found == algorithms.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--exclude-algorithm: ", Quote(item), ": stage ", Quote(stage_name),
          " has no algorithm ", Quote(algorithm_name)));
    }
    if (algorithms.size() == 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--exclude-algorithm: ", Quote(item),
          ": it is the only algorithm of stage ", Quote(stage_name)));
    }
    algorithms.erase(found);
    for (meta::Task& task : dataset.tasks) {
      std::vector<v1::Configuration> configurations;
      std::vector<double> y;
      for (size_t i = 0; i < task.configurations.size(); ++i) {
        bool chooses = false;
        for (const v1::Assignment& a : task.configurations[i].assignments()) {
          chooses |= a.stage() == stage_name && a.algorithm() == algorithm_name;
        }
        if (chooses) continue;
        configurations.push_back(std::move(task.configurations[i]));
        y.push_back(task.y[i]);
      }
      task.configurations = std::move(configurations);
      task.y = std::move(y);
    }
  }
  return absl::OkStatus();
}

}  // namespace

Progress::Progress(std::ostream* out) : out_(out), start_(absl::Now()) {}

void Progress::Log(std::string_view message) {
  if (out_ == nullptr) return;
  *out_ << absl::StrFormat("[%8.1fs] ", absl::ToDoubleSeconds(elapsed()))
        << message << std::endl;
}

void Progress::Step(std::string_view what, int64_t done, int64_t total) {
  if (out_ == nullptr) return;
  const absl::Time now = absl::Now();
  if (done < total && now - last_step_ < absl::Seconds(1)) return;
  last_step_ = now;
  Log(absl::StrCat(ToAbsl(what), " ", done, "/", total));
}

absl::StatusOr<std::shared_ptr<const registry::LoadedModel>>
NewestModelVersion(const std::string& registry_dir, const std::string& name,
                   std::string_view kind) {
  std::vector<int64_t> versions;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(
           std::filesystem::path(registry_dir) / name, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (auto v = registry::ParseVersionDirName(it->path().filename().string());
        v.has_value()) {
      versions.push_back(*v);
    }
  }
  std::sort(versions.rbegin(), versions.rend());
  absl::Status last = absl::NotFoundError(absl::StrCat(
      "--name: model \"", name, "\" has no version in ", registry_dir,
      "; --kind ", std::string(kind),
      " adds to an existing model (train it first)"));
  for (int64_t version : versions) {
    auto model = registry::ReadModelVersion(registry_dir, name, version);
    if (model.ok()) return model;
    last = model.status();
  }
  return last;
}

const std::vector<std::string>& KnownKinds() {
  static const auto* kinds = new std::vector<std::string>{
      "portfolio", "deeppipe", "pmf", "metabu", "grosi", "fsbo",
      "output-head"};
  return *kinds;
}

std::string DataFolderName(std::string_view data_dir) {
  std::filesystem::path path =
      std::filesystem::absolute(std::filesystem::path(std::string(data_dir)))
          .lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // "a/b/" -> "a/b".
  return path.filename().string();
}

std::string DefaultModelName(std::string_view data_dir, std::string_view kind) {
  return absl::StrCat(DataFolderName(data_dir), "-", ToAbsl(kind));
}

std::string JoinCommandLine(int argc, const char* const* argv) {
  std::vector<std::string> parts;
  for (int i = 0; i < argc; ++i) parts.push_back(ShellQuote(argv[i]));
  return absl::StrJoin(parts, " ");
}

std::string MetaoptVersion() { return METAOPT_TRAIN_VERSION; }

std::vector<Eigen::Index> SampleWithoutReplacement(Eigen::Index n,
                                                   Eigen::Index k,
                                                   space::Rng& rng) {
  std::vector<Eigen::Index> idx(n);
  std::iota(idx.begin(), idx.end(), Eigen::Index{0});
  for (Eigen::Index i = 0; i < k; ++i) {
    const Eigen::Index j =
        i + static_cast<Eigen::Index>(space::UniformIndex(rng, n - i));
    std::swap(idx[i], idx[j]);
  }
  idx.resize(k);
  return idx;
}

void AddCurveMetrics(std::string_view prefix, const std::vector<double>& curve,
                     google::protobuf::Map<std::string, double>* metrics) {
  for (size_t k = 1; k <= curve.size(); ++k) {
    (*metrics)[absl::StrCat(ToAbsl(prefix), "@", k)] = curve[k - 1];
  }
}

PortfolioOptions WarmStartOptions(const CommonTrainOptions& options,
                                  PortfolioOptions search, Progress& progress) {
  search.size = options.portfolio_size;
  search.seed = options.seed;
  if (search.search == PortfolioSearch::kEvolutionary &&
      !search.evolutionary.progress) {
    search.evolutionary.progress =
        [&progress, steps = search.evolutionary.steps](int64_t step, double) {
          progress.Step("evolutionary search step", step, steps);
        };
  }
  return search;
}

absl::StatusOr<PortfolioResult> AddWarmStartPortfolio(
    const CommonTrainOptions& options, const TrainingSplits& data,
    Progress& progress, v1::ModelArtifact* artifact,
    const PortfolioOptions& search) {
  const PortfolioOptions portfolio_options =
      WarmStartOptions(options, search, progress);
  METAOPT_ASSIGN_OR_RETURN(
      PortfolioResult portfolio,
      BuildPortfolio(data.dataset, data.train, data.valid, portfolio_options));
  progress.Log(absl::StrFormat(
      "portfolio: %d picks (match %s, %s search, summed train regret %.6f, "
      "greedy %.6f)",
      portfolio.configurations.size(),
      std::string(PortfolioMatchName(portfolio.match)),
      std::string(PortfolioSearchName(portfolio_options.search)),
      portfolio.train_objective, portfolio.greedy_train_objective));
  for (v1::Configuration& c : portfolio.configurations) {
    *artifact->add_portfolio() = std::move(c);
  }
  portfolio.configurations.clear();
  return portfolio;
}

void AddPortfolioSearchIntOptions(const PortfolioOptions& options,
                                  v1::ModelArtifact* artifact) {
  auto& int_options = *artifact->mutable_int_options();
  int_options["evolutionary_search"] =
      options.search == PortfolioSearch::kEvolutionary ? 1 : 0;
  if (options.search == PortfolioSearch::kEvolutionary) {
    int_options["evolutionary_steps"] = options.evolutionary.steps;
    int_options["evolutionary_population"] = options.evolutionary.population;
    int_options["evolutionary_parents"] = options.evolutionary.parents;
    int_options["evolutionary_from_greedy"] =
        options.evolutionary_from_greedy ? 1 : 0;
  }
}

FeatureStatistics ComputeFeatureStatistics(
    const std::vector<const meta::Task*>& tasks) {
  std::map<std::string, std::vector<double>> values;
  for (const meta::Task* task : tasks) {
    for (const auto& [name, value] : task->metafeatures) {
      if (std::isfinite(value)) values[name].push_back(value);
    }
  }
  FeatureStatistics stats;
  stats.means = Eigen::VectorXd::Zero(values.size());
  stats.stds = Eigen::VectorXd::Zero(values.size());
  for (const auto& [name, v] : values) {
    const Eigen::Index f = static_cast<Eigen::Index>(stats.names.size());
    // A copy, not a Map: Eigen's vectorized sums start at the first aligned
    // element, so over a std::vector's buffer (16-byte aligned, AVX packets
    // want 32) the rounding would depend on where the heap put it.
    const Eigen::VectorXd x = Eigen::Map<const Eigen::VectorXd>(
        v.data(), static_cast<Eigen::Index>(v.size()));
    stats.means[f] = x.mean();
    if (v.size() > 1) {
      stats.stds[f] = std::sqrt((x.array() - stats.means[f]).square().sum() /
                                static_cast<double>(v.size() - 1));
    }
    stats.names.push_back(name);
    stats.counts.push_back(static_cast<int>(v.size()));
  }
  return stats;
}

absl::StatusOr<std::vector<std::string>> ReadFeatureNames(
    const std::string& path) {
  METAOPT_ASSIGN_OR_RETURN(const std::string text,
                           ReadFileToString(path, "--feature-names"));
  std::vector<std::string> names;
  absl::flat_hash_map<std::string, int> line_of;
  int line = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line;
    const absl::string_view name = absl::StripAsciiWhitespace(raw);
    if (name.empty() || name[0] == '#') continue;
    auto [it, inserted] = line_of.emplace(std::string(name), line);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("--feature-names ", path, ":", line, ": ", Quote(name),
                       " is given twice (first at line ", it->second, ")"));
    }
    names.emplace_back(name);
  }
  if (names.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--feature-names ", path, ": no meta-feature name (one per line)"));
  }
  return names;
}

absl::Status KeepMetafeatures(const std::vector<std::string>& names,
                              meta::MetaDataset& dataset) {
  const absl::flat_hash_set<std::string> wanted(names.begin(), names.end());
  std::vector<std::string> kept;
  for (const std::string& name : dataset.metafeature_names) {
    if (wanted.contains(name)) kept.push_back(name);
  }
  if (kept.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--feature-names: none of its ", names.size(),
        " names is a column of the meta-dataset's metafeatures.csv (",
        dataset.metafeature_names.size(), " columns)"));
  }
  dataset.metafeature_names = std::move(kept);
  for (meta::Task& task : dataset.tasks) {
    for (auto it = task.metafeatures.begin(); it != task.metafeatures.end();) {
      it = wanted.contains(it->first) ? std::next(it)
                                      : task.metafeatures.erase(it);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainingSplits> ReadTrainingSplits(
    const CommonTrainOptions& options) {
  METAOPT_RETURN_IF_ERROR(
      Annotate(meta::ValidateSplitName(options.split_train), "--split-train"));
  const bool with_valid = options.split_valid != "none";
  if (with_valid) {
    METAOPT_RETURN_IF_ERROR(Annotate(
        meta::ValidateSplitName(options.split_valid), "--split-valid"));
    if (options.split_valid == options.split_train ||
        options.split_train == "all" || options.split_valid == "all") {
      return absl::InvalidArgumentError(
          absl::StrCat("--split-valid ", options.split_valid,
                       " overlaps --split-train ", options.split_train,
                       "; use two different splits or --split-valid none"));
    }
  }
  TrainingSplits data;
  data.folder_name = DataFolderName(options.data_dir);
  meta::ReadOptions read_options;
  read_options.splits = {options.split_train};
  if (with_valid) read_options.splits.push_back(options.split_valid);
  METAOPT_ASSIGN_OR_RETURN(
      data.dataset, meta::ReadMetaDataset(options.data_dir, read_options));
  METAOPT_RETURN_IF_ERROR(
      ExcludeAlgorithms(options.exclude_algorithms, data.dataset));
  if (!options.feature_names_file.empty()) {
    METAOPT_ASSIGN_OR_RETURN(std::vector<std::string> names,
                             ReadFeatureNames(options.feature_names_file));
    METAOPT_RETURN_IF_ERROR(KeepMetafeatures(names, data.dataset));
  }
  METAOPT_ASSIGN_OR_RETURN(data.train,
                           data.dataset.TasksOfSplit(options.split_train));
  if (data.train.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.data_dir, ": split \"", options.split_train,
                     "\" has no tasks to train on"));
  }
  if (with_valid) {
    METAOPT_ASSIGN_OR_RETURN(data.valid,
                             data.dataset.TasksOfSplit(options.split_valid));
  }
  return data;
}

absl::StatusOr<TrainResult> RunTraining(const CommonTrainOptions& options,
                                        const Trainer& trainer,
                                        Progress& progress) {
  const absl::Time start = absl::Now();
  METAOPT_RETURN_IF_ERROR(ValidateOptions(options));
  TrainResult result;
  result.name = options.name.empty()
                    ? DefaultModelName(options.data_dir, options.kind)
                    : options.name;
  METAOPT_RETURN_IF_ERROR(registry::ValidateModelName(result.name, "--name"));

  progress.Log(absl::StrCat("reading ", options.data_dir, " (splits ",
                            options.split_train, ", ", options.split_valid,
                            ")"));
  absl::StatusOr<TrainingSplits> data = ReadTrainingSplits(options);
  if (!data.ok()) return Annotate(data.status(), "reading the data");
  progress.Log(absl::StrCat("read ", data->dataset.name, ": ",
                            data->train.size(), " ", options.split_train,
                            " tasks, ", data->valid.size(), " ",
                            options.split_valid, " tasks"));

  progress.Log(absl::StrCat("training ", options.kind));
  absl::StatusOr<v1::ModelArtifact> trained = trainer(options, *data, progress);
  if (!trained.ok()) {
    return Annotate(trained.status(), absl::StrCat("training ", options.kind));
  }
  v1::ModelArtifact& artifact = *trained;
  if (artifact.format_version() == 0) {
    artifact.set_format_version(registry::kCurrentFormatVersion);
  }
  if (!artifact.has_search_space()) {
    *artifact.mutable_search_space() = data->dataset.space;
  }
  if (!artifact.has_objective()) {
    *artifact.mutable_objective() = data->dataset.objective;
  }
  v1::TrainingProvenance& provenance = *artifact.mutable_provenance();
  provenance.set_data_name(data->folder_name);
  provenance.set_split(options.split_train);
  provenance.clear_task_ids();
  for (const meta::Task* task : data->train) provenance.add_task_ids(task->id);
  provenance.set_command_line(options.command_line);
  provenance.set_seed(options.seed);
  const absl::Time now = absl::Now();
  *provenance.mutable_create_time() = ToProtoTimestamp(now);
  provenance.set_wall_time_seconds(absl::ToDoubleSeconds(now - start));
  provenance.set_metaopt_version(MetaoptVersion());
  METAOPT_RETURN_IF_ERROR(Annotate(registry::ValidateArtifact(artifact),
                                   "the trained artifact is invalid"));

  progress.Log(
      absl::StrCat("writing ", result.name, " into ", options.registry_dir));
  absl::StatusOr<int64_t> version =
      registry::WriteModelVersion(options.registry_dir, result.name, artifact);
  if (!version.ok()) {
    return Annotate(
        version.status(),
        absl::StrCat("writing ", result.name, " into ", options.registry_dir));
  }
  result.version = *version;
  result.version_dir = (std::filesystem::path(options.registry_dir) /
                        result.name / std::to_string(result.version))
                           .string();
  result.artifact_bytes = static_cast<int64_t>(artifact.ByteSizeLong());
  result.artifact = std::move(artifact);
  return result;
}

std::string DescribeTrainResult(const TrainResult& result) {
  const v1::ModelArtifact& artifact = result.artifact;
  const v1::TrainingProvenance& provenance = artifact.provenance();
  std::string text = absl::StrCat(
      "wrote ", result.version_dir, "\n", "  model:     ", result.name,
      " version ", result.version, " (", result.name, "@", result.version,
      ")\n", "  kind:      ", KindName(artifact.kind()), "\n",
      "  artifact:  ", FormatBytes(result.artifact_bytes), ", ",
      artifact.tensors_size(), " tensors, portfolio of ",
      artifact.portfolio_size(), " configurations\n",
      "  data:      ", provenance.data_name(), ", split ", provenance.split(),
      " (", provenance.task_ids_size(), " tasks), seed ", provenance.seed(),
      "\n",
      absl::StrFormat("  wall time: %.2f s\n", provenance.wall_time_seconds()));
  // Curves "prefix@k" on one line each, other metrics one per line.
  std::map<std::string, std::map<int, double>> curves;
  std::map<std::string, double> scalars;
  for (const auto& [key, value] : provenance.validation_metrics()) {
    const size_t at = key.rfind('@');
    int k = 0;
    if (at != std::string::npos &&
        absl::SimpleAtoi(absl::string_view(key).substr(at + 1), &k)) {
      curves[key.substr(0, at)][k] = value;
    } else {
      scalars[key] = value;
    }
  }
  if (!curves.empty() || !scalars.empty())
    absl::StrAppend(&text, "  metrics:\n");
  for (const auto& [prefix, points] : curves) {
    absl::StrAppend(&text, "    ", prefix, ":");
    for (const auto& [k, value] : points) {
      absl::StrAppend(&text, absl::StrFormat(" @%d %.4f", k, value));
    }
    absl::StrAppend(&text, "\n");
  }
  for (const auto& [key, value] : scalars) {
    absl::StrAppend(&text, absl::StrFormat("    %s: %.6g\n", key, value));
  }
  return text;
}

}  // namespace metaopt::train
