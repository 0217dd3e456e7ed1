#ifndef METAOPT_TESTS_TESTUTIL_TEMP_DIR_H_
#define METAOPT_TESTS_TESTUTIL_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "gtest/gtest.h"

namespace metaopt::testing {

// A fresh directory under ::testing::TempDir(), removed with its contents on
// destruction. Not thread-safe (one owner).
class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string pattern = ::testing::TempDir() + "metaopt_test_XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    const char* dir = mkdtemp(buffer.data());
    EXPECT_NE(dir, nullptr) << "mkdtemp failed for " << pattern;
    if (dir != nullptr) path_ = dir;
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  ~ScopedTempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }

  const std::string& path() const { return path_; }
  // `name` inside the directory.
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace metaopt::testing

#endif  // METAOPT_TESTS_TESTUTIL_TEMP_DIR_H_
