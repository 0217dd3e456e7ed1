// Serving a model's task-aware zero-shot design (v1::TaskDesign, learned by
// `metaopt-train --kind metabu`): a study's dataset features (or the Dida or
// Dataset2Vec meta-features of its dataset sample, DesignFeatures) are
// standardized with the training statistics (a missing feature takes its
// training mean), mapped by the learned projection, and the nearest archived
// tasks' top configurations become the study's first suggestions.
//
// Pure functions of their arguments; thread-safe.
#ifndef METAOPT_CORE_REGISTRY_TASK_DESIGN_H_
#define METAOPT_CORE_REGISTRY_TASK_DESIGN_H_

#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/map.h"
#include "metaopt/v1/model.pb.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::registry {

// INVALID_ARGUMENT naming the field below `artifact.task_design` unless the
// design is consistent: a method, features with finite means and positive
// finite standard deviations, a projection [d, features] of finite values
// (or none: the identity, d = features), neighbours >= 1, at least one task,
// each with a d-dimensional finite embedding and at least one top
// configuration. (The configurations are
// checked against the artifact's space by ValidateArtifact.)
absl::Status ValidateTaskDesign(const v1::TaskDesign& design);

struct DesignQuery {
  // Round robin over the nearest tasks: the best configuration of each
  // neighbour (nearest first), then the second best of each, and so on; may
  // repeat a configuration. Points into the design.
  std::vector<const v1::Configuration*> configurations;
  std::vector<std::string> neighbours;        // task ids, nearest first
  std::vector<std::string> imputed_features;  // took their training mean
};

// The mapped (embedded) features; the names of imputed features are appended
// to `*imputed` when given. `design` must be valid.
Eigen::VectorXd EmbedFeatures(
    const v1::TaskDesign& design,
    const google::protobuf::Map<std::string, double>& features,
    std::vector<std::string>* imputed = nullptr);

// The design for a dataset with `features` (the design.neighbours nearest
// archived tasks by Euclidean distance of the embeddings; ties: archive
// order), blended with `portfolio` as design.blend says ("interleave":
// alternately a design entry and a portfolio entry, design first, each list
// in order). `design` must be valid.
DesignQuery QueryTaskDesign(
    const v1::TaskDesign& design,
    const google::protobuf::Map<std::string, double>& features,
    const google::protobuf::RepeatedPtrField<v1::Configuration>& portfolio =
        {});

// OK unless the design's feature_source is "dida" ("d2v") and the artifact
// carries no readable Dida (Dataset2Vec) extractor, at surrogate::kDidaPrefix
// (surrogate::kDesignD2vPrefix), whose outputs name the design's features;
// INVALID_ARGUMENT naming the field otherwise.
absl::Status ValidateDesignExtractor(const v1::ModelArtifact& artifact);

// The meta-features a study's design reads: spec.dataset_features, or, for a
// design whose feature_source is "dida" or "d2v", the Dida or Dataset2Vec
// meta-features of spec.dataset_sample computed by the artifact's extractor
// (about n^2 m operations for a sample of n rows and m columns with Dida,
// n m c with Dataset2Vec). INVALID_ARGUMENT naming
// spec.dataset_sample when such a design has none or it is malformed. The
// artifact must be valid (ValidateArtifact).
absl::StatusOr<google::protobuf::Map<std::string, double>> DesignFeatures(
    const v1::ModelArtifact& artifact, const v1::StudySpec& spec);

// DesignFeatures' validation of the spec alone (nothing computed): OK, or its
// INVALID_ARGUMENT.
absl::Status CheckDesignInput(const v1::ModelArtifact& artifact,
                              const v1::StudySpec& spec);

}  // namespace metaopt::registry

#endif  // METAOPT_CORE_REGISTRY_TASK_DESIGN_H_
