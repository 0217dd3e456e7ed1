#include "core/meta_dataset/table_readers.h"

#include "core/meta_dataset/meta_dataset.h"
#include "tests/testutil/meta_dataset_reader_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::meta {
namespace {

using ::metaopt::meta::reader_test::DeleteLine;
using ::metaopt::meta::reader_test::kInvalid;
using ::metaopt::meta::reader_test::MetaDatasetTest;
using ::metaopt::meta::reader_test::SetLine;
using ::metaopt::meta::reader_test::SmallFolder;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// evaluations.csv: header rules.

TEST_F(MetaDatasetTest, HeaderMismatch) {
  SetLine(&text_.evaluations_csv, 1,
          "task,prep,model,scale.factor,pca.n_components,knn.n,knn.weights,svm."
          "C,svm.kernel,y,"
          "y_seed0,y_seed1,runtime_s");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid,
               HasSubstr("evaluations.csv:1: header column 6 is "
                         "\"knn.n\" but space.json requires \"knn.k\"")));
}

TEST_F(MetaDatasetTest, HeaderTooShort) {
  SetLine(&text_.evaluations_csv, 1, "task,prep,model");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid,
               HasSubstr("evaluations.csv:1: the header has 3 columns")));
}

TEST_F(MetaDatasetTest, HeaderSeedColumnsOutOfOrder) {
  SetLine(&text_.evaluations_csv, 1,
          "task,prep,model,scale.factor,pca.n_components,knn.k,knn.weights,svm."
          "C,svm.kernel,y,"
          "y_seed1,y_seed0,runtime_s");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid, HasSubstr("header column 11 is \"y_seed1\"")));
  SetLine(&text_.evaluations_csv, 1,
          "task,prep,model,scale.factor,pca.n_components,knn.k,knn.weights,svm."
          "C,svm.kernel,y,"
          "y_seed0,runtime_s,runtime_s");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("duplicate column name \"runtime_s\"")));
}

// ---------------------------------------------------------------------------------------------
// evaluations.csv: task rules.

TEST_F(MetaDatasetTest, UnknownTask) {
  SetLine(&text_.evaluations_csv, 5, "t9,none,svm,,,,,100,1e-05,1e-05,,,0.25");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("evaluations.csv:5: column \"task\": task "
                                   "\"t9\" is not in ")));
}

TEST_F(MetaDatasetTest, TaskWithoutRows) {
  DeleteLine(&text_.evaluations_csv, 6);
  DeleteLine(&text_.evaluations_csv, 5);
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("tasks.csv:3: task \"t2\" has no rows in")));
}

TEST_F(MetaDatasetTest, TaskRowsNotContiguous) {
  // t1 (lines 2-3), t2 (line 4), t1 again (line 5).
  DeleteLine(&text_.evaluations_csv, 4);
  SetLine(&text_.evaluations_csv, 5,
          "t1,pca,knn,,4,7,distance,,,0.125,0.1,0.15,0.5");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:5: column \"task\": rows of "
                                 "task \"t1\" are not contiguous")));
}

TEST_F(MetaDatasetTest, TasksOutOfOrder) {
  SetLine(&text_.tasks_csv, 3, "t3,third,test,300,7,3");
  SetLine(&text_.tasks_csv, 4, "t2,,valid,,,");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:7: column \"task\": task "
                                 "\"t3\" follows task \"t2\" but comes before "
                                 "it in tasks.csv")));
}

// ---------------------------------------------------------------------------------------------
// evaluations.csv: cell rules.

TEST_F(MetaDatasetTest, UnknownAlgorithm) {
  SetLine(&text_.evaluations_csv, 2,
          "t1,none,lda,,,3,uniform,,,0.25,0.2,0.3,1.5");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:2: column \"model\": \"lda\" "
                                 "is not an algorithm of stage \"model\" "
                                 "(expected one of knn, svm)")));
}

TEST_F(MetaDatasetTest, ParameterSetForInactiveAlgorithm) {
  SetLine(&text_.evaluations_csv, 2,
          "t1,none,knn,,,3,uniform,1,,0.25,0.2,0.3,1.5");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid,
               HasSubstr("evaluations.csv:2: column \"svm.C\": \"1\" is "
                         "set but stage \"model\" chose \"knn\"")));
}

TEST_F(MetaDatasetTest, ParameterEmptyForActiveAlgorithm) {
  SetLine(&text_.evaluations_csv, 4,
          "t1,pca,knn,,,7,distance,,,0.125,0.1,0.15,0.5");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("evaluations.csv:4: column "
                                   "\"pca.n_components\": empty but stage "
                                   "\"prep\" chose \"pca\"")));
}

TEST_F(MetaDatasetTest, CategoryNotAmongValues) {
  SetLine(&text_.evaluations_csv, 2,
          "t1,none,knn,,,3,manhattan,,,0.25,0.2,0.3,1.5");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("evaluations.csv:2: column \"knn.weights\": "
                                   "\"manhattan\" is not one of the values "
                                   "[uniform, distance]")));
}

TEST_F(MetaDatasetTest, NumberOutsideBounds) {
  SetLine(&text_.evaluations_csv, 3, "t1,scale,svm,3,,,,0.1,rbf,0.5,0.5,,2");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:3: column \"scale.factor\": "
                                 "\"3\" is outside [0.5, 2]")));
}

TEST_F(MetaDatasetTest, BadObjective) {
  SetLine(&text_.evaluations_csv, 6, "t2,pca,svm,,16,,,0.01,poly,,0.7,0.8,3");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("evaluations.csv:6: column \"y\": empty")));
  text_ = SmallFolder();
  SetLine(&text_.evaluations_csv, 6,
          "t2,pca,svm,,16,,,0.01,poly,nan,0.7,0.8,3");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:6: column \"y\": \"nan\" is "
                                 "not a number")));
  text_ = SmallFolder();
  SetLine(&text_.evaluations_csv, 6,
          "t2,pca,svm,,16,,,0.01,poly,1e999,0.7,0.8,3");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("evaluations.csv:6: column \"y\": \"1e999\" "
                                   "is not a finite double")));
  text_ = SmallFolder();
  SetLine(&text_.evaluations_csv, 6, "t2,pca,svm,,16,,,0.01,poly,0.75,0.7,x,3");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:6: column \"y_seed1\": \"x\" "
                                 "is not a number")));
}

TEST_F(MetaDatasetTest, DuplicateConfigurationWithinTask) {
  // Same values as line 3, written differently.
  SetLine(&text_.evaluations_csv, 4, "t1,scale,svm,1.50,,,,1e-1,rbf,0.9,,,2");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid,
               HasSubstr("evaluations.csv:4: duplicate configuration in "
                         "task \"t1\" (same as line 3)")));
}

TEST_F(MetaDatasetTest, SameConfigurationInTwoTasksIsFine) {
  SetLine(&text_.evaluations_csv, 7,
          "t3,none,knn,,,3,uniform,,,0.25,0.2,0.3,1.5");
  METAOPT_EXPECT_OK(Read());
}

// ---------------------------------------------------------------------------------------------
// tasks.csv.

TEST_F(MetaDatasetTest, TasksBadHeader) {
  SetLine(&text_.tasks_csv, 1, "task,split,name,n_rows,n_features,n_classes");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("tasks.csv:1: the header must start with "
                                   "\"task,name,split,n_rows,n_features\"")));
}

TEST_F(MetaDatasetTest, TasksDuplicateTask) {
  SetLine(&text_.tasks_csv, 4, "t1,third,test,300,7,3");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("tasks.csv:4: column \"task\": duplicate task "
                                 "\"t1\" (first at line 2)")));
}

TEST_F(MetaDatasetTest, TasksBadSplit) {
  SetLine(&text_.tasks_csv, 3, "t2,,validation,,,");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid,
               HasSubstr("tasks.csv:3: column \"split\": \"validation\" "
                         "is not a split (expected one of train, valid, "
                         "test, holdout)")));
}

TEST_F(MetaDatasetTest, TasksBadSize) {
  SetLine(&text_.tasks_csv, 2, "t1,first,train,1e3,5,2");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("tasks.csv:2: column \"n_rows\": \"1e3\" is "
                                   "not a non-negative integer")));
}

TEST_F(MetaDatasetTest, TasksWrongFieldCount) {
  SetLine(&text_.tasks_csv, 3, "t2,,valid,,");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid, HasSubstr("tasks.csv:3: expected 6 fields")));
}

// ---------------------------------------------------------------------------------------------
// metafeatures.csv.

TEST_F(MetaDatasetTest, MetafeaturesUnknownTask) {
  SetLine(&text_.metafeatures_csv, 3, "t7,300,");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("metafeatures.csv:3: column \"task\": task "
                                   "\"t7\" is not in")));
}

TEST_F(MetaDatasetTest, MetafeaturesBadNumber) {
  SetLine(&text_.metafeatures_csv, 2, "t1,100,high");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid,
               HasSubstr("metafeatures.csv:2: column \"class_ent.mean\": "
                         "\"high\" is not a number")));
}

TEST_F(MetaDatasetTest, MetafeaturesDuplicateRow) {
  SetLine(&text_.metafeatures_csv, 3, "t1,300,");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid,
               HasSubstr("metafeatures.csv:3: column \"task\": duplicate "
                         "row for task \"t1\" (first at line 2)")));
}

TEST_F(MetaDatasetTest, MetafeaturesDuplicateFeatureName) {
  SetLine(&text_.metafeatures_csv, 1, "task,nr_inst,nr_inst");
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("metafeatures.csv:1: duplicate feature name "
                                   "\"nr_inst\" (columns 2 and 3)")));
  SetLine(&text_.metafeatures_csv, 1, "id,nr_inst,class_ent.mean");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("metafeatures.csv:1: the first header column "
                                 "must be \"task\"")));
}

}  // namespace
}  // namespace metaopt::meta
