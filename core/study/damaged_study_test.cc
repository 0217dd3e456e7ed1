// A study whose stored rows do not parse: listed by its id without hiding the
// healthy studies, reported by GetStudy, removable by DeleteStudy.
#include <memory>
#include <string>

#include "core/storage/sqlite_util.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::study {
namespace {

using ::metaopt::testing::CatalogueSpec;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::SizeIs;

TEST(DamagedStudyTest, ListedByIdGetIsDataLossDeleteRemovesIt) {
  ::metaopt::testing::ScopedTempDir dir;
  const std::string path = dir.File("metaopt.db");
  auto storage = storage::OpenSqliteStorage(path);
  ASSERT_THAT(storage, IsOk());
  {
    StudyEngine engine(storage->get(), nullptr);
    for (const char* id : {"a", "broken", "c"}) {
      v1::CreateStudyRequest create;
      create.set_study_id(id);
      *create.mutable_spec() = CatalogueSpec(5);
      ASSERT_THAT(engine.CreateStudy(create), IsOk());
      v1::SuggestRequest suggest;
      suggest.set_study_id(id);
      suggest.set_count(2);
      ASSERT_THAT(engine.Suggest(suggest), IsOk());
    }
  }
  auto raw = storage::Database::Open(path);
  ASSERT_THAT(raw, IsOk());
  ASSERT_THAT(raw->Exec("UPDATE trials SET trial = x'ffffffff' WHERE "
                        "study_id = 'broken' AND trial_id = 2"),
              IsOk());

  StudyEngine engine(storage->get(), nullptr);  // loads studies afresh
  auto listed = engine.ListStudies(v1::ListStudiesRequest());
  ASSERT_THAT(listed, IsOk());
  ASSERT_THAT(listed->studies(), SizeIs(3));
  EXPECT_EQ(listed->studies(0).trial_count(), 2);
  EXPECT_EQ(listed->studies(1).study_id(), "broken");
  EXPECT_FALSE(listed->studies(1).has_spec());
  EXPECT_EQ(listed->studies(2).trial_count(), 2);

  v1::GetStudyRequest get;
  get.set_study_id("broken");
  EXPECT_THAT(engine.GetStudy(get),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("trial 2")));
  v1::DeleteStudyRequest del;
  del.set_study_id("broken");
  EXPECT_THAT(engine.DeleteStudy(del), IsOk());
  EXPECT_THAT(engine.GetStudy(get),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("broken")));
  listed = engine.ListStudies(v1::ListStudiesRequest());
  ASSERT_THAT(listed, IsOk());
  EXPECT_THAT(listed->studies(), SizeIs(2));
}

}  // namespace
}  // namespace metaopt::study
