// Test support for meta-datasets: writes a MetaDataset as a folder in the
// shared format, so tests can generate small folders (and corrupt them) instead
// of shipping fixtures.
#ifndef METAOPT_TESTS_TESTUTIL_META_DATASET_FOLDERS_H_
#define METAOPT_TESTS_TESTUTIL_META_DATASET_FOLDERS_H_

#include <string>

#include "absl/status/status.h"
#include "core/meta_dataset/meta_dataset.h"

namespace metaopt::meta {

// The text of the files of a meta-dataset folder.
struct FolderText {
  std::string space_json;
  std::string evaluations_csv;
  std::string tasks_csv;
  std::string metafeatures_csv;  // Empty: no metafeatures.csv.
};

// Renders `dataset` in the folder format: evaluations.csv has the columns task,
// stages, params, y, then the first task's Task::values names (every task
// must have them, aligned with y; no seed columns); numbers in shortest
// round-trip form; metafeatures.csv only when `metafeature_names` is non-empty
// (one row per task with metafeatures). INVALID_ARGUMENT when a configuration
// does not fit the space (missing assignment or parameter, wrong value kind).
absl::StatusOr<FolderText> RenderMetaDataset(const MetaDataset& dataset);

// Writes `text` into `dir` (created if needed; existing files are replaced, a
// stale metafeatures.csv is removed when `text.metafeatures_csv` is empty).
absl::Status WriteFolder(const FolderText& text, const std::string& dir);

// RenderMetaDataset + WriteFolder.
absl::Status WriteMetaDataset(const MetaDataset& dataset,
                              const std::string& dir);

}  // namespace metaopt::meta

#endif  // METAOPT_TESTS_TESTUTIL_META_DATASET_FOLDERS_H_
