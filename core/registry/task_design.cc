#include "core/registry/task_design.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/status_macros.h"
#include "core/nn/tensor_io.h"
#include "core/surrogate/dataset2vec.h"
#include "core/surrogate/dida.h"

namespace metaopt::registry {
namespace {

constexpr char kField[] = "artifact.task_design";

bool AllFinite(const google::protobuf::RepeatedField<double>& values) {
  return std::all_of(values.begin(), values.end(),
                     [](double v) { return std::isfinite(v); });
}

// Whether the design's meta-features come from a raw sample through an
// extractor the artifact carries.
bool ReadsSample(const v1::TaskDesign& design) {
  return design.feature_source() == surrogate::kDidaPrefix ||
         design.feature_source() == surrogate::kD2vSource;
}

// The name of that extractor, for messages.
const char* ExtractorName(const v1::TaskDesign& design) {
  return design.feature_source() == surrogate::kDidaPrefix ? "Dida"
                                                           : "Dataset2Vec";
}

// A design's extractor: its name, output count and meta-features by name.
struct SampleExtractor {
  std::string name;
  int outputs = 0;
  std::function<std::map<std::string, double>(const surrogate::RawSample&)>
      features;
};

// The extractor of a design that ReadsSample; INVALID_ARGUMENT from its
// reader otherwise.
absl::StatusOr<SampleExtractor> ReadSampleExtractor(
    const v1::ModelArtifact& artifact) {
  if (artifact.task_design().feature_source() == surrogate::kDidaPrefix) {
    METAOPT_ASSIGN_OR_RETURN(
        surrogate::Dida dida,
        surrogate::Dida::Read(surrogate::kDidaPrefix, artifact));
    const int outputs = dida.output();
    return SampleExtractor{
        ExtractorName(artifact.task_design()), outputs, [dida = std::move(dida)](const surrogate::RawSample& s) {
          return surrogate::DidaFeatures(dida, s);
        }};
  }
  METAOPT_ASSIGN_OR_RETURN(const nn::TensorMap tensors,
                           nn::IndexTensors(artifact.tensors()));
  METAOPT_ASSIGN_OR_RETURN(
      surrogate::Dataset2Vec d2v,
      surrogate::Dataset2Vec::Read(surrogate::kDesignD2vPrefix, artifact,
                                   tensors));
  const int outputs = d2v.output();
  return SampleExtractor{
      ExtractorName(artifact.task_design()), outputs,
      [d2v = std::move(d2v)](const surrogate::RawSample& s) {
        return surrogate::Dataset2VecFeatures(d2v, s);
      }};
}

}  // namespace

absl::Status ValidateTaskDesign(const v1::TaskDesign& design) {
  if (design.method().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".method: must be set (e.g. \"metabu\")"));
  }
  const int num_features = design.feature_names_size();
  if (num_features == 0 || design.feature_means_size() != num_features ||
      design.feature_stds_size() != num_features) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ": ", num_features,
                     " feature_names need as many feature_means (",
                     design.feature_means_size(), ") and feature_stds (",
                     design.feature_stds_size(), "), at least one"));
  }
  for (int i = 0; i < num_features; ++i) {
    const double sd = design.feature_stds(i);
    if (!std::isfinite(design.feature_means(i)) || !std::isfinite(sd) ||
        !(sd > 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          kField, ".feature_stds[", i, "] (", design.feature_names(i),
          "): mean ", design.feature_means(i), " and standard deviation ", sd,
          " must be finite, the deviation positive"));
    }
  }
  const v1::Tensor& projection = design.projection();
  const bool identity =
      projection.shape().empty() && projection.values().empty();
  if (!identity &&
      (projection.shape_size() != 2 || projection.shape(0) < 1 ||
       projection.shape(1) != num_features ||
       projection.values_size() != projection.shape(0) * num_features ||
       !AllFinite(projection.values()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        kField, ".projection: must be empty (the identity) or a finite [d, ",
        num_features, "] tensor, got shape [",
        absl::StrJoin(projection.shape(), ", "), "] with ",
        projection.values_size(), " values"));
  }
  const int64_t dimension = identity ? num_features : projection.shape(0);
  if (!design.blend().empty() && design.blend() != "interleave") {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".blend: \"", design.blend(),
                     "\" is not a blend (\"\" or \"interleave\")"));
  }
  if (!design.feature_source().empty() && !ReadsSample(design)) {
    return absl::InvalidArgumentError(absl::StrCat(
        kField, ".feature_source: \"", design.feature_source(),
        "\" is not a feature source (\"\", \"dida\" or \"d2v\")"));
  }
  if (design.neighbours() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        kField, ".neighbours: ", design.neighbours(), " must be at least 1"));
  }
  if (design.tasks().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kField, ".tasks: at least one archived task is needed"));
  }
  for (int t = 0; t < design.tasks_size(); ++t) {
    const v1::DesignTask& task = design.tasks(t);
    if (task.embedding_size() != dimension || !AllFinite(task.embedding()) ||
        task.top().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kField, ".tasks[", t, "] \"", task.task_id(), "\": needs a finite ",
          dimension, "-dimensional embedding (got ", task.embedding_size(),
          ") and at least one top configuration"));
    }
  }
  return absl::OkStatus();
}

Eigen::VectorXd EmbedFeatures(
    const v1::TaskDesign& design,
    const google::protobuf::Map<std::string, double>& features,
    std::vector<std::string>* imputed) {
  const int num_features = design.feature_names_size();
  Eigen::VectorXd x(num_features);
  for (int i = 0; i < num_features; ++i) {
    const auto it = features.find(design.feature_names(i));
    if (it == features.end() || !std::isfinite(it->second)) {
      x(i) = 0.0;  // the training mean, standardized
      if (imputed != nullptr) imputed->push_back(design.feature_names(i));
    } else {
      x(i) = (it->second - design.feature_means(i)) / design.feature_stds(i);
    }
  }
  if (design.projection().shape().empty()) return x;  // the identity
  // Copied into Eigen's aligned storage so that the product's rounding does
  // not depend on where protobuf put the values.
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>
      projection = Eigen::Map<const Eigen::Matrix<
          double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
          design.projection().values().data(), design.projection().shape(0),
          num_features);
  return projection * x;
}

DesignQuery QueryTaskDesign(
    const v1::TaskDesign& design,
    const google::protobuf::Map<std::string, double>& features,
    const google::protobuf::RepeatedPtrField<v1::Configuration>& portfolio) {
  DesignQuery query;
  const Eigen::VectorXd z =
      EmbedFeatures(design, features, &query.imputed_features);
  std::vector<std::pair<double, int>> distances;
  for (int t = 0; t < design.tasks_size(); ++t) {
    const Eigen::Map<const Eigen::VectorXd> e(
        design.tasks(t).embedding().data(), design.tasks(t).embedding_size());
    distances.emplace_back((e - z).squaredNorm(), t);
  }
  std::stable_sort(
      distances.begin(), distances.end(),
      [](const auto& a, const auto& b) { return a.first < b.first; });
  const size_t k =
      std::min(distances.size(), static_cast<size_t>(design.neighbours()));
  int longest = 0;
  for (size_t i = 0; i < k; ++i) {
    const v1::DesignTask& task = design.tasks(distances[i].second);
    query.neighbours.push_back(task.task_id());
    longest = std::max(longest, task.top_size());
  }
  for (int rank = 0; rank < longest; ++rank) {
    for (size_t i = 0; i < k; ++i) {
      const v1::DesignTask& task = design.tasks(distances[i].second);
      if (rank < task.top_size())
        query.configurations.push_back(&task.top(rank));
    }
  }
  if (design.blend() == "interleave" && !portfolio.empty()) {
    std::vector<const v1::Configuration*> blended;
    const size_t n = std::max(query.configurations.size(),
                              static_cast<size_t>(portfolio.size()));
    for (size_t i = 0; i < n; ++i) {
      if (i < query.configurations.size()) {
        blended.push_back(query.configurations[i]);
      }
      if (i < static_cast<size_t>(portfolio.size())) {
        blended.push_back(&portfolio.Get(static_cast<int>(i)));
      }
    }
    query.configurations = std::move(blended);
  }
  return query;
}

absl::Status ValidateDesignExtractor(const v1::ModelArtifact& artifact) {
  const v1::TaskDesign& design = artifact.task_design();
  if (!ReadsSample(design)) return absl::OkStatus();
  const std::string& source = design.feature_source();
  absl::StatusOr<SampleExtractor> extractor = ReadSampleExtractor(artifact);
  if (!extractor.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kField, ".feature_source: \"", source, "\" needs the artifact's ",
        ExtractorName(design),
        " extractor: ", extractor.status().message()));
  }
  const std::string prefix = absl::StrCat(source, "_");
  for (int i = 0; i < design.feature_names_size(); ++i) {
    const std::string& name = design.feature_names(i);
    int k = -1;
    if (name.rfind(prefix, 0) != 0 ||
        !absl::SimpleAtoi(name.substr(prefix.size()), &k) || k < 0 ||
        k >= extractor->outputs) {
      return absl::InvalidArgumentError(absl::StrCat(
          kField, ".feature_names[", i, "]: \"", name,
          "\" is not an output of the ", extractor->name, " extractor (",
          prefix, "0 .. ", prefix, extractor->outputs - 1, ")"));
    }
  }
  return absl::OkStatus();
}

namespace {

// The raw sample a design with an extractor reads (nullopt for a design that
// reads spec.dataset_features); INVALID_ARGUMENT naming spec.dataset_sample.
absl::StatusOr<std::optional<surrogate::RawSample>> DesignSample(
    const v1::ModelArtifact& artifact, const v1::StudySpec& spec) {
  if (!ReadsSample(artifact.task_design())) return std::nullopt;
  if (!spec.has_dataset_sample()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.dataset_sample: absent; the bound model's task-aware design "
        "computes the dataset's meta-features with its ",
        ExtractorName(artifact.task_design()),
        " extractor from a raw sample of the dataset, so give one "
        "(docs/api.md, \"Dataset samples\"), or bind a model whose design "
        "reads spec.dataset_features"));
  }
  absl::StatusOr<surrogate::RawSample> sample =
      surrogate::RawSampleFromProto(spec.dataset_sample());
  if (!sample.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.", sample.status().message()));
  }
  return std::optional<surrogate::RawSample>(*std::move(sample));
}

}  // namespace

absl::Status CheckDesignInput(const v1::ModelArtifact& artifact,
                              const v1::StudySpec& spec) {
  return DesignSample(artifact, spec).status();
}

absl::StatusOr<google::protobuf::Map<std::string, double>> DesignFeatures(
    const v1::ModelArtifact& artifact, const v1::StudySpec& spec) {
  if (!ReadsSample(artifact.task_design())) return spec.dataset_features();
  METAOPT_ASSIGN_OR_RETURN(std::optional<surrogate::RawSample> sample,
                           DesignSample(artifact, spec));
  // Checked when the model loaded (ValidateDesignExtractor).
  METAOPT_ASSIGN_OR_RETURN(SampleExtractor extractor,
                           ReadSampleExtractor(artifact));
  const std::map<std::string, double> features = extractor.features(*sample);
  return google::protobuf::Map<std::string, double>(features.begin(),
                                                    features.end());
}

}  // namespace metaopt::registry
