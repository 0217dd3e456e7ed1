#include "core/common/file_util.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt {
namespace {

using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(FileUtilTest, ReadsWholeFilesAndNamesMissingOnes) {
  ScopedTempDir dir;
  const std::string path = dir.File("f");
  std::ofstream(path, std::ios::binary) << std::string("a\0b\n", 4);
  EXPECT_EQ(ReadFileToString(path, "config").value(), std::string("a\0b\n", 4));
  EXPECT_THAT(ReadFileToString(dir.File("absent"), "--tokens"),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("--tokens"), HasSubstr("absent"))));
}

TEST(FileUtilTest, DirectoriesAreNotFilesAndSizesAreBounded) {
  ScopedTempDir dir;
  EXPECT_THAT(ReadFileToString(dir.File(""), ""),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("directory")));
  const std::string path = dir.File("f");
  std::ofstream(path, std::ios::binary) << "12345";
  EXPECT_EQ(ReadFileToString(path, "", 5).value(), "12345");
  EXPECT_THAT(ReadFileToString(path, "", 4),
              StatusIs(absl::StatusCode::kOutOfRange,
                       AllOf(::testing::StartsWith(path + ": "),
                             HasSubstr("larger than 4 bytes"))));
}

TEST(FileUtilTest, PemFilesMustHoldAPemBlock) {
  ScopedTempDir dir;
  const std::string pem = dir.File("cert.pem");
  std::ofstream(pem) << "-----BEGIN CERTIFICATE-----\nMIIB\n"
                        "-----END CERTIFICATE-----\n";
  EXPECT_THAT(ReadPemFile(pem, "--tls-cert"), ::metaopt::testing::IsOk());
  const std::string der = dir.File("cert.der");
  std::ofstream(der) << "\x30\x82\x01";
  EXPECT_THAT(ReadPemFile(der, "--tls-cert"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--tls-cert"), HasSubstr("cert.der"),
                             HasSubstr("not a PEM file"))));
  EXPECT_THAT(ReadPemFile(dir.File("absent"), "--tls-key"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("--tls-key")));
}

}  // namespace
}  // namespace metaopt
