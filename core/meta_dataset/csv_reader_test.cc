#include "core/meta_dataset/csv_reader.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tests/testutil/meta_dataset_reader_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::meta {
namespace {

using ::metaopt::meta::reader_test::kInvalid;
using ::metaopt::meta::reader_test::MetaDatasetTest;
using ::metaopt::meta::reader_test::SetLine;
using ::metaopt::meta::reader_test::SmallFolder;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// evaluations.csv: file-level rules.

TEST_F(MetaDatasetTest, WrongFieldCount) {
  SetLine(&text_.evaluations_csv, 3, "t1,scale,svm,1.5,,,,0.1,rbf,0.5,0.5,2");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:3: expected 13 fields (as in "
                                 "the header), found 12")));
}

TEST_F(MetaDatasetTest, CrLineEndings) {
  absl::StrReplaceAll({{"\n", "\r\n"}}, &text_.evaluations_csv);
  EXPECT_THAT(Read(),
              StatusIs(kInvalid, HasSubstr("evaluations.csv:1: CR character")));
  text_ = SmallFolder();
  absl::StrReplaceAll(
      {{"t3,third,test,300,7,3\n", "t3,third,test,300,7,3\r\n"}},
      &text_.tasks_csv);
  EXPECT_THAT(Read(),
              StatusIs(kInvalid, HasSubstr("tasks.csv:4: CR character")));
}

TEST_F(MetaDatasetTest, MissingFinalLineFeed) {
  text_.evaluations_csv.pop_back();
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("evaluations.csv:8: the last line does not "
                                   "end with LF")));
}

TEST_F(MetaDatasetTest, BlankLineAndEmptyFile) {
  SetLine(&text_.evaluations_csv, 5, "");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid, HasSubstr("evaluations.csv:5: blank line")));
  text_.evaluations_csv.clear();
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("evaluations.csv: the file is empty")));
}

// ---------------------------------------------------------------------------------------------
// The number grammar of cells.

TEST_F(MetaDatasetTest, NumberNotParsable) {
  SetLine(&text_.evaluations_csv, 3, "t1,scale,svm,1.5,,,,abc,rbf,0.5,0.5,,2");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:3: column \"svm.C\": \"abc\" "
                                 "is not a number")));
  // C-locale grammar only: no leading '+', no bare '.', no hex.
  for (const char* bad : {"+0.1", ".1", "0x1p-3", "1,5"}) {
    text_ = SmallFolder();
    SetLine(&text_.evaluations_csv, 3,
            absl::StrCat("t1,scale,svm,1.5,,,,", bad, ",rbf,0.5,0.5,2"));
    EXPECT_THAT(Read(), StatusIs(kInvalid, HasSubstr("evaluations.csv:3:")))
        << bad;
  }
}

TEST_F(MetaDatasetTest, IntNotIntegral) {
  SetLine(&text_.evaluations_csv, 2,
          "t1,none,knn,,,2.5,uniform,,,0.25,0.2,0.3,1.5");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:2: column \"knn.k\": \"2.5\" "
                                 "is not an integer")));
}

}  // namespace
}  // namespace metaopt::meta
