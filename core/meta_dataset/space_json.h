// space.json of a meta-dataset folder (docs/meta_datasets.md): the search
// space and the objective, parsed with nlohmann-json and validated strictly.
#ifndef METAOPT_CORE_META_DATASET_SPACE_JSON_H_
#define METAOPT_CORE_META_DATASET_SPACE_JSON_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::meta {

inline constexpr char kSpaceFile[] = "space.json";

// The contents of a space.json file.
struct SpaceFile {
  std::string name;
  v1::SearchSpace space;
  v1::Objective objective;
};

// Parses and validates the text of a space.json file. Errors are
// INVALID_ARGUMENT starting with "space.json: " and naming the JSON path, e.g.
// `space.json: stages[0].algorithms[1].params[2] ("lr"): low 5 > high 1`.
// Thread-safe (no shared state).
absl::StatusOr<SpaceFile> ParseSpaceJson(std::string_view text);

// The first columns of evaluations.csv for `space`: `task`, one per stage, one
// per parameter in space order (`<algorithm>.<param>`, or
// `<stage>.<algorithm>.<param>` when that
// `<algorithm>.<param>` occurs in more than one stage), then `y`.
std::vector<std::string> EvaluationColumns(const v1::SearchSpace& space);

}  // namespace metaopt::meta

#endif  // METAOPT_CORE_META_DATASET_SPACE_JSON_H_
