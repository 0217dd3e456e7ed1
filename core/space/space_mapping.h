// Partial binding: how a study's search space maps onto the space a
// meta-learned model was trained on ("Deep Pipeline Embeddings for AutoML",
// Pineda Arango & Grabocka, KDD 2023, Experiment 4: new algorithms).
#ifndef METAOPT_CORE_SPACE_SPACE_MAPPING_H_
#define METAOPT_CORE_SPACE_SPACE_MAPPING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::space {

// What differs between a compatible study space and its model's space. Names
// are "stage/algorithm" and "stage/algorithm/parameter", in declaration order
// (the study's for new algorithms and narrowed parameters, the model's for
// masked ones). Empty lists: the spaces are the same up to the order of
// categorical values and algorithms within a stage.
struct SpaceMapping {
  // In the study only: a model without them must learn them from the study.
  std::vector<std::string> new_algorithms;
  // In the model only: never chosen by the study (masked).
  std::vector<std::string> masked_algorithms;
  // Shared parameters whose study domain differs from the model's: a numeric
  // range strictly inside the model's or another log flag, or a categorical
  // with fewer values. One line each, e.g. `estimator/svm/C [0.1, 10] log
  // within [0.01, 1000] log`.
  std::vector<std::string> narrowed_parameters;

  bool identical() const {
    return new_algorithms.empty() && masked_algorithms.empty() &&
           narrowed_parameters.empty();
  }
};

// Whether a model over `model_space` can serve a study over `study_space`, and
// how. The rules (docs/algorithms.md, "Partial binding"):
//   - the same stages: names, in order;
//   - every stage shares at least one algorithm (by name) with the model's;
//   - a shared algorithm has the same parameters (names, in order) of the
//     same domain types (float / int / categorical);
//   - a shared numeric parameter's study range lies within the model's (the
//     log flag may differ: values are encoded in the model's own scale);
//   - a shared categorical's study values are a subset of the model's (any
//     order).
// New and masked algorithms are reported, not refused here: whether a model
// kind can learn new algorithms is the binder's decision. INVALID_ARGUMENT
// naming the first violation, e.g. `stage[3] "estimator": algorithm "svm":
// parameter[0] "C": the study's range [0.001, 10] is not within the model's
// [0.01, 1000]`.
absl::StatusOr<SpaceMapping> MapStudySpace(const v1::SearchSpace& model_space,
                                           const v1::SearchSpace& study_space);

// The space a partially bound model encodes in: `model_space` plus the study's
// new algorithms (with the study's parameter domains), appended to their
// stages in the study's order. Equal to `model_space` without new algorithms.
// Assumes MapStudySpace(model_space, study_space) is OK.
v1::SearchSpace ExtendedModelSpace(const v1::SearchSpace& model_space,
                                   const v1::SearchSpace& study_space);

}  // namespace metaopt::space

#endif  // METAOPT_CORE_SPACE_SPACE_MAPPING_H_
