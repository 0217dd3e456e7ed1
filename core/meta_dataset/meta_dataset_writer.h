// Writing meta-dataset folders (docs/meta_datasets.md): the text of space.json
// and of evaluations.csv rows, numbers in the shortest form that round-trips.
// Shared by the history export (core/history) and the tests' folder generator
// (tests/testutil/meta_dataset_folders.h).
#ifndef METAOPT_CORE_META_DATASET_META_DATASET_WRITER_H_
#define METAOPT_CORE_META_DATASET_META_DATASET_WRITER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::meta {

// The shortest C-locale text that strtod turns back into `x` (e.g. "0.5",
// "1e-08"). REQUIRES: x is finite.
std::string FormatNumber(double x);

// The text of space.json for a folder named `name` (one JSON object, indented,
// ending with a line break).
std::string RenderSpaceJson(absl::string_view name,
                            const v1::SearchSpace& space,
                            const v1::Objective& objective);

// Appends one evaluations.csv line for the canonical configuration `config` of
// `space` on task `task_id`: the task, the algorithm of each stage, one cell
// per parameter of the space (empty unless its algorithm is chosen), `y`, then
// the `extra` cells, and a line break. INVALID_ARGUMENT (naming `where`) when
// the configuration does not fit the space: an assignment per stage is
// missing, a chosen algorithm's parameter is missing or of the wrong kind.
absl::Status AppendEvaluationRow(const v1::SearchSpace& space,
                                 absl::string_view task_id,
                                 const v1::Configuration& config, double y,
                                 absl::Span<const std::string> extra,
                                 absl::string_view where, std::string* out);

}  // namespace metaopt::meta

#endif  // METAOPT_CORE_META_DATASET_META_DATASET_WRITER_H_
