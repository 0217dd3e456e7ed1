#include "core/meta_dataset/dataset_samples.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/file_util.h"
#include "core/space/search_space.h"
#include "google/protobuf/util/json_util.h"

namespace metaopt::meta {

absl::StatusOr<v1::DatasetSample> ReadDatasetSampleFile(
    const std::string& path, const std::string& what) {
  absl::StatusOr<std::string> text = ReadFileToString(path, what);
  if (!text.ok()) return absl::InvalidArgumentError(text.status().message());
  v1::DatasetSample sample;
  const auto parsed =
      google::protobuf::util::JsonStringToMessage(*text, &sample);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", path, ": not a metaopt.v1.DatasetSample in JSON: ",
        std::string(parsed.message())));
  }
  absl::Status valid = space::ValidateDatasetSample(sample, "dataset_sample");
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": ", valid.message()));
  }
  return sample;
}

absl::StatusOr<std::map<std::string, v1::DatasetSample>> ReadDatasetSamples(
    const std::string& dir, const std::vector<std::string>& task_ids,
    const std::string& what) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", dir, ": not a directory"));
  }
  std::map<std::string, v1::DatasetSample> out;
  for (const std::string& id : task_ids) {
    const std::string path =
        (std::filesystem::path(dir) / (id + ".json")).string();
    if (!std::filesystem::exists(path, error)) continue;
    absl::StatusOr<v1::DatasetSample> sample =
        ReadDatasetSampleFile(path, what);
    if (!sample.ok()) return sample.status();
    out.emplace(id, *std::move(sample));
  }
  return out;
}

}  // namespace metaopt::meta
