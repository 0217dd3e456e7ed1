// What every model kind of metaopt-train shares: the common flags, reading the
// meta-dataset, progress lines, provenance, and publishing the artifact as a
// new registry version.
//
// Adding a model kind (deeppipe, pmf):
//   1. In your own files (e.g. core/meta_training/deeppipe_train.{h,cc}) define
//        TrainerKind DeepPipeTrainerKind();
//      whose `add_flags` adds your flags to the option group it is given and
//      returns a Trainer that reads them (keep the flag storage in a
//      std::shared_ptr captured by the Trainer).
//   2. Add one entry to BuiltinTrainerKinds() in train_main.cc and your library
//      to the DEPS of metaopt_train_main in core/meta_training/CMakeLists.txt.
// RunTraining then reads the data, calls your Trainer, fills the provenance
// and writes the version; your Trainer only builds the kind-specific parts.
#ifndef METAOPT_CORE_META_TRAINING_TRAIN_COMMON_H_
#define METAOPT_CORE_META_TRAINING_TRAIN_COMMON_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/meta_dataset/meta_dataset.h"
#include "core/meta_training/portfolio.h"
#include "core/registry/artifact.h"
#include "core/space/random.h"
#include "google/protobuf/map.h"
#include "metaopt/v1/model.pb.h"

namespace CLI {
class App;
}  // namespace CLI

namespace metaopt::train {

// The flags every kind has (metaopt-train --help lists them).
struct CommonTrainOptions {
  std::string kind;          // --kind: "portfolio", "deeppipe", "pmf", "grosi".
  std::string data_dir;      // --data: a meta-dataset folder.
  std::string registry_dir;  // --registry: created if needed.
  // --name; empty: DefaultModelName(data_dir, kind).
  std::string name;
  uint64_t seed = 0;                  // --seed
  int portfolio_size = 16;            // --size: K of the warm-start portfolio.
  std::string split_train = "train";  // --split-train
  // --split-valid; "none": no validation tasks.
  std::string split_valid = "valid";
  // --exclude-algorithm STAGE/ALGORITHM (repeatable): the algorithm is
  // removed from the space trained on and every row choosing it is dropped,
  // so the model has never seen it (a study that adds it back binds to the
  // model partially, docs/algorithms.md).
  std::vector<std::string> exclude_algorithms;
  // --feature-names FILE: train on the meta-features of metafeatures.csv that
  // the file names (ReadFeatureNames, KeepMetafeatures; empty: every column),
  // e.g. those a client computes, so that the model never relies on a
  // feature its studies will lack.
  std::string feature_names_file;
  // The exact command line (JoinCommandLine), recorded in the provenance.
  std::string command_line;
  bool quiet = false;  // --quiet: no progress lines.
};

// The meta-dataset read for training: only the two splits are loaded.
struct TrainingSplits {
  std::string folder_name;  // Last component of --data, e.g. "oboe".
  meta::MetaDataset dataset;
  std::vector<const meta::Task*> train;  // Non-empty.
  // Empty with --split-valid none or when the split has no tasks.
  std::vector<const meta::Task*> valid;
};

// Timestamped progress lines ("[    1.2s] message") on a stream; silent when
// `out` is nullptr. Not thread-safe.
class Progress {
 public:
  explicit Progress(std::ostream* out);

  void Log(std::string_view message);
  // For loops: "what done/total", at most once a second plus the last step.
  void Step(std::string_view what, int64_t done, int64_t total);
  absl::Duration elapsed() const { return absl::Now() - start_; }

 private:
  std::ostream* out_;
  absl::Time start_;
  absl::Time last_step_ = absl::InfinitePast();
};

// A kind's training: from the data, builds the kind-specific parts of the
// artifact (kind, tensors, normalization, portfolio, catalogue, int_options,
// training_features, provenance.validation_metrics). RunTraining fills
// format_version, search_space and objective when left empty, and the rest of
// the provenance.
using Trainer = std::function<absl::StatusOr<v1::ModelArtifact>(
    const CommonTrainOptions&, const TrainingSplits&, Progress&)>;

// One entry of metaopt-train's kind table.
struct TrainerKind {
  std::string name;         // The --kind value.
  std::string description;  // One line for --help.
  // Adds the kind's own flags to `flags` (an option group of the metaopt-train
  // command line, titled after the kind) and returns the Trainer that uses
  // them. Called for every built-in kind before the command line is parsed;
  // flags of a kind other than the selected one are rejected after parsing.
  std::function<Trainer(CLI::App& flags)> add_flags;
  // The kind's --size when the command line gives none (0: the common
  // default, CommonTrainOptions::portfolio_size).
  int default_portfolio_size = 0;
};

// Every kind metaopt-train knows by name, built in or not: portfolio,
// deeppipe, pmf, metabu, grosi, fsbo.
const std::vector<std::string>& KnownKinds();

// The kinds built into this binary (defined in train_main.cc).
std::vector<TrainerKind> BuiltinTrainerKinds();

// The newest version of model `name` in `registry_dir` that loads, for a
// kind that adds to an existing model (`kind`, named in the NOT_FOUND error
// when there is none).
absl::StatusOr<std::shared_ptr<const registry::LoadedModel>>
NewestModelVersion(const std::string& registry_dir, const std::string& name,
                   std::string_view kind);

// The last component of `data_dir` as an absolute, normalised path ("oboe"
// for "data/oboe/" or "../data/oboe").
std::string DataFolderName(std::string_view data_dir);

// `<DataFolderName(data_dir)>-<kind>`, e.g. "oboe-portfolio" for
// "data/oboe/".
std::string DefaultModelName(std::string_view data_dir, std::string_view kind);

// argv joined by spaces, each argument single-quoted for a POSIX shell when it
// contains anything but [A-Za-z0-9_./=:@%+,-].
std::string JoinCommandLine(int argc, const char* const* argv);

// The version of this build: "<project version> (git <describe>)".
std::string MetaoptVersion();

// The first k entries of a uniformly random permutation of 0..n-1 (k <= n).
std::vector<Eigen::Index> SampleWithoutReplacement(Eigen::Index n,
                                                   Eigen::Index k,
                                                   space::Rng& rng);

// Sets metrics["<prefix>@k"] = curve[k - 1] for k = 1..curve.size().
void AddCurveMetrics(std::string_view prefix, const std::vector<double>& curve,
                     google::protobuf::Map<std::string, double>* metrics);

// `search` with options.portfolio_size and options.seed, and an evolutionary
// search reporting its steps to `progress` (unless it reports elsewhere).
PortfolioOptions WarmStartOptions(const CommonTrainOptions& options,
                                  PortfolioOptions search, Progress& progress);

// The warm-start portfolio a model kind carries beside its network:
// BuildPortfolio over data's train and valid tasks with `search` (greedy by
// default; its size and seed replaced by options.portfolio_size and
// options.seed; an evolutionary search reports its steps to `progress`),
// logged to `progress` and appended to artifact->portfolio. Returns the result
// (for its regret curves) without the configurations.
absl::StatusOr<PortfolioResult> AddWarmStartPortfolio(
    const CommonTrainOptions& options, const TrainingSplits& data,
    Progress& progress, v1::ModelArtifact* artifact,
    const PortfolioOptions& search = {});

// The artifact's int_options "evolutionary_search" (0 or 1) and, for the
// evolutionary search, "evolutionary_steps", "evolutionary_population",
// "evolutionary_parents" and "evolutionary_from_greedy".
void AddPortfolioSearchIntOptions(const PortfolioOptions& options,
                                  v1::ModelArtifact* artifact);

// The sorted union of the meta-feature names of `tasks`, with their means,
// standard deviations (n - 1; 0 when constant or seen once) and the number of
// tasks with a finite value, over those tasks.
struct FeatureStatistics {
  std::vector<std::string> names;
  Eigen::VectorXd means;
  Eigen::VectorXd stds;
  std::vector<int> counts;
};
FeatureStatistics ComputeFeatureStatistics(
    const std::vector<const meta::Task*>& tasks);

// The meta-feature names in the file at `path`: one per line, surrounding
// spaces, empty lines and lines starting with '#' ignored. NOT_FOUND for a
// missing file; INVALID_ARGUMENT naming path:line for a name given twice, and
// for a file without names.
absl::StatusOr<std::vector<std::string>> ReadFeatureNames(
    const std::string& path);

// Keeps only the meta-features in `names` (in dataset.metafeature_names and
// every task's metafeatures); names the meta-dataset does not have are
// ignored, so that one list (all a client computes) serves every
// meta-dataset. INVALID_ARGUMENT when none of its metafeatures.csv columns is
// in `names`.
absl::Status KeepMetafeatures(const std::vector<std::string>& names,
                              meta::MetaDataset& dataset);

// Reads `options.data_dir` (only the train and valid splits), leaving out
// the excluded algorithms and the meta-features not in
// options.feature_names_file. INVALID_ARGUMENT for bad split names, equal
// splits, or a training split without tasks; the errors of ReadFeatureNames
// and KeepMetafeatures; reader errors as meta::ReadMetaDataset.
absl::StatusOr<TrainingSplits> ReadTrainingSplits(
    const CommonTrainOptions& options);

struct TrainResult {
  std::string name;
  int64_t version = 0;
  std::string version_dir;  // <registry>/<name>/<version>
  int64_t artifact_bytes = 0;
  v1::ModelArtifact artifact;  // As written.
};

// Validates the options (data and registry given, size >= 1, model name
// valid), reads the data, runs `trainer`, fills the provenance (data folder
// name, train split, its task ids, command line, seed, UTC create time, wall
// time, metaopt version), validates the artifact and publishes it with
// registry::WriteModelVersion (atomic: temp directory, then rename). Errors
// carry their stage ("reading ...", "training ...", "writing ...").
absl::StatusOr<TrainResult> RunTraining(const CommonTrainOptions& options,
                                        const Trainer& trainer,
                                        Progress& progress);

// A human-readable summary of what RunTraining wrote: path, version, kind,
// size, portfolio size, provenance and the metrics (curves "x@k" on one line
// per prefix).
std::string DescribeTrainResult(const TrainResult& result);

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_TRAIN_COMMON_H_
