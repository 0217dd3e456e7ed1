// Fixtures of the meta-dataset reader's tests (GTest, unlike
// meta_dataset_testutil, which the fuzz harness links): a small folder whose
// files the tests break line by line, and dataset comparisons.
#ifndef METAOPT_TESTS_TESTUTIL_META_DATASET_READER_FIXTURE_H_
#define METAOPT_TESTS_TESTUTIL_META_DATASET_READER_FIXTURE_H_

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/meta_dataset/meta_dataset.h"
#include "tests/testutil/meta_dataset_folders.h"
#include "gtest/gtest.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::meta::reader_test {

inline constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

// A fresh directory, removed with its contents at the end of the test.
class TempDir : public ::metaopt::testing::ScopedTempDir {
 public:
  // The directory, or `sub` inside it.
  std::string path(const std::string& sub = "") const {
    return sub.empty() ? ScopedTempDir::path() : File(sub);
  }
};

// Lines joined with LF, each ending with LF.
std::string Lines(const std::vector<std::string>& lines);

// Replaces line `line` (1-based) of `text`.
void SetLine(std::string* text, int line, const std::string& replacement);

// Removes line `line` (1-based) of `text`.
void DeleteLine(std::string* text, int line);

// A small folder: two stages (a parameterless algorithm, float, int-log,
// categorical with a numeric-looking value, float-log), three tasks in three
// splits, seed and auxiliary columns, metafeatures for two tasks (one with a
// missing cell).
FolderText SmallFolder();

class MetaDatasetTest : public ::testing::Test {
 protected:
  // Writes `text_` and reads it back.
  absl::StatusOr<MetaDataset> Read(const ReadOptions& options = {}) {
    absl::Status status = WriteFolder(text_, dir_.path("small"));
    if (!status.ok()) return status;
    return ReadMetaDataset(dir_.path("small"), options);
  }

  TempDir dir_;
  FolderText text_ = SmallFolder();
};

v1::Assignment MakeAssignment(
    const std::string& stage, const std::string& algorithm,
    const std::vector<
        std::pair<std::string, std::variant<double, std::string>>>& params);

v1::Configuration MakeConfiguration(std::vector<v1::Assignment> assignments);

// Expects `a` and `b` to hold the same dataset, numbers exactly.
void ExpectSameDataset(const MetaDataset& a, const MetaDataset& b);

}  // namespace metaopt::meta::reader_test

#endif  // METAOPT_TESTS_TESTUTIL_META_DATASET_READER_FIXTURE_H_
