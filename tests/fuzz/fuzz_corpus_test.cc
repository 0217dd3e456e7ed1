// Replays every seed (tests/fuzz/corpus/<target>/) and every regression input
// (tests/fuzz/regressions/<target>/) through its fuzz harness. A harness aborts
// when a contract breaks, so a failure here shows as a crashed test.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/fuzz/fuzz_harness.h"

namespace metaopt::fuzz {
namespace {

struct Target {
  const char* name;
  void (*harness)(std::string_view);
};

std::string FuzzDir() {
  const char* source = std::getenv("METAOPT_SOURCE_DIR");
  return std::string(source != nullptr ? source : ".") + "/tests/fuzz";
}

// The files of `dir` (none if it does not exist), sorted.
std::vector<std::filesystem::path> FilesIn(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Names the target in test output.
void PrintTo(const Target& target, std::ostream* os) { *os << target.name; }

class FuzzCorpusTest : public ::testing::TestWithParam<Target> {};

TEST_P(FuzzCorpusTest, SeedsKeepTheContracts) {
  const std::vector<std::filesystem::path> seeds =
      FilesIn(FuzzDir() + "/corpus/" + GetParam().name);
  ASSERT_GE(seeds.size(), 3u) << "too few seeds for " << GetParam().name;
  for (const auto& path : seeds) {
    SCOPED_TRACE(path.string());
    GetParam().harness(ReadFile(path));
  }
}

TEST_P(FuzzCorpusTest, RegressionInputsKeepTheContracts) {
  for (const auto& path :
       FilesIn(FuzzDir() + "/regressions/" + GetParam().name)) {
    SCOPED_TRACE(path.string());
    GetParam().harness(ReadFile(path));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Targets, FuzzCorpusTest,
    ::testing::Values(Target{"study_spec", StudySpecBinary},
                      Target{"study_spec_text", StudySpecText},
                      Target{"configuration", ConfigurationAgainstSpec},
                      Target{"meta_dataset", MetaDatasetFolder}),
    [](const ::testing::TestParamInfo<Target>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace metaopt::fuzz
