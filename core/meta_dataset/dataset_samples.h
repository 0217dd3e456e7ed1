// Raw dataset samples of a meta-dataset's tasks (v1::DatasetSample), stored
// beside it as <task id>.json in the protobuf JSON mapping, for the models
// that read raw data (GROSI with a Dataset2Vec extractor) in metaopt-train and
// metaopt-bench. data/prep/dataset_samples/export_samples.py writes them.
#ifndef METAOPT_CORE_META_DATASET_DATASET_SAMPLES_H_
#define METAOPT_CORE_META_DATASET_DATASET_SAMPLES_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::meta {

// A v1::DatasetSample in JSON at `path`, validated by
// space::ValidateDatasetSample. INVALID_ARGUMENT naming `what` and the path
// for an unreadable, malformed or invalid file.
absl::StatusOr<v1::DatasetSample> ReadDatasetSampleFile(
    const std::string& path, const std::string& what);

// <dir>/<id>.json of each of `task_ids` (ReadDatasetSampleFile) by task id; a
// task without a file has no entry. INVALID_ARGUMENT naming `what` when `dir`
// is not a directory.
absl::StatusOr<std::map<std::string, v1::DatasetSample>> ReadDatasetSamples(
    const std::string& dir, const std::vector<std::string>& task_ids,
    const std::string& what);

}  // namespace metaopt::meta

#endif  // METAOPT_CORE_META_DATASET_DATASET_SAMPLES_H_
