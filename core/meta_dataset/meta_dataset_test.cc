#include "core/meta_dataset/meta_dataset.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/testutil/meta_dataset_reader_fixture.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

#ifndef METAOPT_SOURCE_DIR_DEFAULT
#define METAOPT_SOURCE_DIR_DEFAULT "."
#endif

namespace metaopt::meta {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::metaopt::meta::reader_test::ExpectSameDataset;
using ::metaopt::meta::reader_test::kInvalid;
using ::metaopt::meta::reader_test::MakeAssignment;
using ::metaopt::meta::reader_test::MakeConfiguration;
using ::metaopt::meta::reader_test::MetaDatasetTest;
using ::metaopt::meta::reader_test::SetLine;
using ::metaopt::meta::reader_test::SmallFolder;
using ::metaopt::meta::reader_test::TempDir;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// ---------------------------------------------------------------------------------------------
// Reading a valid folder.

TEST_F(MetaDatasetTest, ReadsSmallFolder) {
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset data, Read());
  EXPECT_EQ(data.name, "small");
  EXPECT_EQ(data.objective.name(), "error");
  EXPECT_EQ(data.objective.goal(), v1::GOAL_MINIMIZE);
  ASSERT_EQ(data.space.stages_size(), 2);
  const v1::Parameter& n_components =
      data.space.stages(0).algorithms(2).parameters(0);
  EXPECT_EQ(n_components.int_domain().low(), 1);
  EXPECT_EQ(n_components.int_domain().high(), 16);
  EXPECT_TRUE(n_components.int_domain().log());
  EXPECT_TRUE(
      data.space.stages(1).algorithms(1).parameters(0).float_domain().log());
  EXPECT_EQ(data.num_evaluation_rows, 7);
  EXPECT_THAT(data.task_property_names, ElementsAre("n_classes"));
  EXPECT_THAT(data.metafeature_names, ElementsAre("nr_inst", "class_ent.mean"));

  ASSERT_EQ(data.tasks.size(), 3u);
  const Task& t1 = data.tasks[0];
  EXPECT_EQ(t1.id, "t1");
  EXPECT_EQ(t1.name, "first");
  EXPECT_EQ(t1.split, "train");
  EXPECT_EQ(t1.n_rows, 100);
  EXPECT_EQ(t1.n_features, 5);
  EXPECT_THAT(t1.properties, ElementsAre(Pair("n_classes", "2")));
  EXPECT_THAT(t1.metafeatures,
              ElementsAre(Pair("class_ent.mean", 0.5), Pair("nr_inst", 100.0)));
  EXPECT_EQ(t1.y, (std::vector<double>{0.25, 0.5, 0.125}));
  ASSERT_EQ(t1.configurations.size(), 3u);
  const v1::Configuration want0 = MakeConfiguration(
      {MakeAssignment("prep", "none", {}),
       MakeAssignment("model", "knn",
                      {{"k", 3.0}, {"weights", std::string("uniform")}})});
  EXPECT_TRUE(MessageDifferencer::Equals(t1.configurations[0], want0))
      << t1.configurations[0].ShortDebugString();
  const v1::Configuration want1 = MakeConfiguration(
      {MakeAssignment("prep", "scale", {{"factor", 1.5}}),
       MakeAssignment("model", "svm",
                      {{"C", 0.1}, {"kernel", std::string("rbf")}})});
  EXPECT_TRUE(MessageDifferencer::Equals(t1.configurations[1], want1))
      << t1.configurations[1].ShortDebugString();

  const Task& t2 = data.tasks[1];
  EXPECT_EQ(t2.name, "");
  EXPECT_EQ(t2.n_rows, std::nullopt);
  EXPECT_EQ(t2.n_features, std::nullopt);
  EXPECT_TRUE(t2.properties.empty());
  EXPECT_TRUE(t2.metafeatures.empty());
  // A numeric-looking categorical value stays a category.
  const v1::Configuration want_t2 = MakeConfiguration(
      {MakeAssignment("prep", "none", {}),
       MakeAssignment("model", "svm",
                      {{"C", 100.0}, {"kernel", std::string("1e-05")}})});
  EXPECT_TRUE(MessageDifferencer::Equals(t2.configurations[0], want_t2))
      << t2.configurations[0].ShortDebugString();

  const Task& t3 = data.tasks[2];
  EXPECT_THAT(t3.metafeatures,
              ElementsAre(Pair("nr_inst", 300.0)));  // Empty cell skipped.
  EXPECT_EQ(t3.y, (std::vector<double>{-0.3, 3.19113473778998e-05}));
}

TEST_F(MetaDatasetTest, GeneratedDatasetRoundTrips) {
  MetaDataset data;
  data.name = "generated";
  data.objective.set_name("accuracy");
  data.objective.set_goal(v1::GOAL_MAXIMIZE);
  METAOPT_ASSERT_OK_AND_ASSIGN(SpaceFile space,
                               ParseSpaceJson(SmallFolder().space_json));
  data.space = space.space;
  data.task_property_names = {"n_classes", "source"};
  data.metafeature_names = {"b.mean", "a"};
  const char* splits[] = {"train", "valid", "test"};
  for (int t = 0; t < 3; ++t) {
    Task& task = data.tasks.emplace_back();
    task.id = absl::StrCat(100 + t);
    task.name = t == 1 ? "" : absl::StrCat("data", t);
    task.split = splits[t];
    if (t != 1) task.n_rows = 1000 * (t + 1);
    if (t != 2) task.n_features = 10 + t;
    if (t == 0) task.properties = {{"n_classes", "2"}, {"source", "R MASS"}};
    if (t == 2) task.properties = {{"source", "sklearn"}};
    if (t != 1) task.metafeatures = {{"a", 1.0 / 3 + t}, {"b.mean", -2.5e-300}};
    for (int i = 0; i < 5; ++i) {
      const bool knn = (i + t) % 2 == 0;
      v1::Assignment prep =
          i % 3 == 0 ? MakeAssignment("prep", "none", {})
          : i % 3 == 1
              ? MakeAssignment("prep", "scale", {{"factor", 0.5 + 0.1 * i}})
              : MakeAssignment("prep", "pca", {{"n_components", 1.0 + i}});
      v1::Assignment model =
          knn ? MakeAssignment(
                    "model", "knn",
                    {{"k", 1.0 + i}, {"weights", std::string("distance")}})
              : MakeAssignment("model", "svm",
                               {{"C", 0.01 * (i + 1) * 3},
                                {"kernel", std::string("1e-05")}});
      task.configurations.push_back(MakeConfiguration({prep, model}));
      task.y.push_back(0.1 * i - t / 7.0);
    }
  }
  TempDir dir;
  METAOPT_ASSERT_OK(WriteMetaDataset(data, dir.path("generated")));
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset read,
                               ReadMetaDataset(dir.path("generated")));
  ExpectSameDataset(read, data);
  EXPECT_EQ(read.num_evaluation_rows, 15);
}

TEST_F(MetaDatasetTest, ReadThenWriteRoundTrips) {
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset data, Read());
  METAOPT_ASSERT_OK(WriteMetaDataset(data, dir_.path("copy")));
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset copy,
                               ReadMetaDataset(dir_.path("copy")));
  ExpectSameDataset(copy, data);
}

TEST_F(MetaDatasetTest, ReadmeAndMetafeaturesAreOptional) {
  text_.metafeatures_csv
      .clear();  // WriteFolder then writes no metafeatures.csv.
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset data, Read());
  EXPECT_FALSE(std::filesystem::exists(dir_.path("small/README.md")));
  EXPECT_TRUE(data.metafeature_names.empty());
  for (const Task& task : data.tasks) EXPECT_TRUE(task.metafeatures.empty());
}

// ---------------------------------------------------------------------------------------------
// Split selection and helpers.

TEST_F(MetaDatasetTest, SelectsSplits) {
  ReadOptions options;
  options.splits = {"test"};
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset test, Read(options));
  ASSERT_EQ(test.tasks.size(), 1u);
  EXPECT_EQ(test.tasks[0].id, "t3");
  EXPECT_EQ(test.tasks[0].configurations.size(), 2u);
  EXPECT_THAT(test.tasks[0].metafeatures, ElementsAre(Pair("nr_inst", 300.0)));
  EXPECT_EQ(test.num_evaluation_rows, 7);  // All rows are read and validated.
  EXPECT_EQ(test.FindTask("t1"), nullptr);

  options.splits = {"valid", "train"};
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset train_valid, Read(options));
  ASSERT_EQ(train_valid.tasks.size(), 2u);
  EXPECT_EQ(train_valid.tasks[0].id, "t1");  // tasks.csv order.
  EXPECT_EQ(train_valid.tasks[1].id, "t2");

  options.splits = {"all"};
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset all, Read(options));
  EXPECT_EQ(all.tasks.size(), 3u);
  options.splits = {"holdout"};
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset none, Read(options));
  EXPECT_TRUE(none.tasks.empty());
}

TEST_F(MetaDatasetTest, UnselectedRowsAreStillValidated) {
  SetLine(&text_.evaluations_csv, 2,
          "t1,none,knn,,,3,uniform,,,abc,0.2,0.3,1.5");
  ReadOptions options;
  options.splits = {"test"};
  EXPECT_THAT(Read(options),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:2: column \"y\": \"abc\"")));
}

TEST_F(MetaDatasetTest, RejectsUnknownSplitInOptions) {
  ReadOptions options;
  options.splits = {"training"};
  EXPECT_THAT(
      Read(options),
      StatusIs(kInvalid,
               HasSubstr("unknown split \"training\" (expected one of train, "
                         "valid, test, holdout, all)")));
  options.splits = {};
  options.max_rows_per_task = -1;
  EXPECT_THAT(Read(options),
              StatusIs(kInvalid, HasSubstr("max_rows_per_task")));
}

TEST_F(MetaDatasetTest, CapsRowsPerTask) {
  ReadOptions options;
  options.max_rows_per_task = 1;
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset data, Read(options));
  for (const Task& task : data.tasks) {
    EXPECT_EQ(task.configurations.size(), 1u) << task.id;
    EXPECT_EQ(task.y.size(), 1u) << task.id;
  }
  EXPECT_EQ(data.tasks[0].y[0], 0.25);
}

TEST_F(MetaDatasetTest, ReadsValueColumnsAlignedWithY) {
  ReadOptions options;
  options.value_columns = {"runtime_s", "y_seed0"};
  options.splits = {"train", "valid"};
  // y_seed0 is empty on t2's first row: a value column must be set.
  EXPECT_THAT(Read(options),
              StatusIs(kInvalid, HasSubstr("y_seed0")));
  options.value_columns = {"runtime_s"};
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset data, Read(options));
  ASSERT_EQ(data.tasks.size(), 2u);
  EXPECT_THAT(data.tasks[0].values,
              ElementsAre(Pair("runtime_s", ElementsAre(1.5, 2, 0.5))));
  EXPECT_THAT(data.tasks[1].values,
              ElementsAre(Pair("runtime_s", ElementsAre(0.25, 3))));
  // Not read unless asked for.
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset plain, Read());
  EXPECT_TRUE(plain.tasks[0].values.empty());
}

TEST_F(MetaDatasetTest, RejectsBadValueColumns) {
  ReadOptions options;
  options.value_columns = {"fit_seconds"};
  EXPECT_THAT(Read(options),
              StatusIs(kInvalid, HasSubstr("\"fit_seconds\" is not a column")));
  options.value_columns = {"y"};
  EXPECT_THAT(Read(options),
              StatusIs(kInvalid, HasSubstr("\"y\" is not a column")));
  options.value_columns = {"runtime_s", "runtime_s"};
  EXPECT_THAT(Read(options), StatusIs(kInvalid, HasSubstr("listed twice")));
  options.value_columns = {"runtime_s"};
  SetLine(&text_.evaluations_csv, 3,
          "t1,scale,svm,1.5,,,,0.1,rbf,0.5,0.5,,slow");
  EXPECT_THAT(Read(options),
              StatusIs(kInvalid, HasSubstr("runtime_s")));
}

TEST_F(MetaDatasetTest, TasksOfSplitAndFindTask) {
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset data, Read());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<const Task*> valid,
                               data.TasksOfSplit("valid"));
  ASSERT_EQ(valid.size(), 1u);
  EXPECT_EQ(valid[0]->id, "t2");
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<const Task*> all,
                               data.TasksOfSplit("all"));
  EXPECT_EQ(all.size(), 3u);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<const Task*> holdout,
                               data.TasksOfSplit("holdout"));
  EXPECT_TRUE(holdout.empty());
  EXPECT_THAT(
      data.TasksOfSplit("dev"),
      StatusIs(kInvalid,
               HasSubstr("unknown split \"dev\" (expected one of train, valid, "
                         "test, holdout, all)")));
  ASSERT_NE(data.FindTask("t3"), nullptr);
  EXPECT_EQ(data.FindTask("t3")->name, "third");
  EXPECT_EQ(data.FindTask("t4"), nullptr);
}

// ---------------------------------------------------------------------------------------------
// Missing files.

TEST_F(MetaDatasetTest, MissingFolder) {
  EXPECT_THAT(
      ReadMetaDataset(dir_.path("absent")),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("does not exist")));
}

TEST_F(MetaDatasetTest, MissingRequiredFiles) {
  for (const char* file : {"space.json", "evaluations.csv", "tasks.csv"}) {
    METAOPT_ASSERT_OK(WriteFolder(text_, dir_.path("small")));
    std::filesystem::remove(dir_.path(absl::StrCat("small/", file)));
    EXPECT_THAT(ReadMetaDataset(dir_.path("small")),
                StatusIs(absl::StatusCode::kNotFound,
                         HasSubstr(absl::StrCat(file, ": no such file"))));
  }
}

// ---------------------------------------------------------------------------------------------
// The real meta-datasets of shared/data (skipped when absent).

std::string SharedDataDir() {
  if (const char* dir = std::getenv("METAOPT_SHARED_DATA");
      dir != nullptr && *dir != '\0') {
    return dir;
  }
  const char* source = std::getenv("METAOPT_SOURCE_DIR");
  return absl::StrCat(source != nullptr && *source != '\0'
                          ? source
                          : METAOPT_SOURCE_DIR_DEFAULT,
                      "/../shared/data");
}

struct RealCase {
  std::string folder;
  std::vector<std::string> splits;  // Loaded splits (empty: all).
  v1::Goal goal;
  int num_stages;
  int num_params;
  int64_t num_rows;           // Rows of evaluations.csv (all tasks).
  size_t loaded_tasks;        // Tasks of the loaded splits.
  int64_t min_rows_per_task;  // README: evaluations per task.
  int64_t max_rows_per_task;
  size_t num_metafeatures;
  size_t tasks_with_metafeatures;  // Among the loaded tasks.
};

void PrintTo(const RealCase& c, std::ostream* os) { *os << c.folder; }

class RealMetaDatasetTest : public ::testing::TestWithParam<RealCase> {};

TEST_P(RealMetaDatasetTest, MatchesItsReadme) {
  const RealCase& c = GetParam();
  const std::string dir = absl::StrCat(SharedDataDir(), "/", c.folder);
  if (!std::filesystem::is_directory(dir)) {
    GTEST_SKIP()
        << "meta-dataset folder " << dir
        << " is absent (set METAOPT_SHARED_DATA to the shared/data folder)";
  }
  ReadOptions options;
  options.splits = c.splits;
  const auto start = std::chrono::steady_clock::now();
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset data, ReadMetaDataset(dir, options));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::cout << "[ INFO     ] read " << c.folder << " (splits "
            << (c.splits.empty() ? "all" : absl::StrJoin(c.splits, "+"))
            << ") in " << seconds << " s" << std::endl;
  RecordProperty("read_seconds", absl::StrCat(seconds));

  EXPECT_EQ(data.name, c.folder);
  EXPECT_EQ(data.objective.goal(), c.goal);
  EXPECT_EQ(data.space.stages_size(), c.num_stages);
  EXPECT_EQ(static_cast<int>(EvaluationColumns(data.space).size()),
            2 + c.num_stages + c.num_params);
  EXPECT_EQ(data.num_evaluation_rows, c.num_rows);
  EXPECT_EQ(data.tasks.size(), c.loaded_tasks);
  EXPECT_EQ(data.metafeature_names.size(), c.num_metafeatures);
  size_t with_metafeatures = 0;
  int64_t loaded_rows = 0;
  for (const Task& task : data.tasks) {
    ASSERT_EQ(task.configurations.size(), task.y.size());
    EXPECT_GE(static_cast<int64_t>(task.y.size()), c.min_rows_per_task)
        << task.id;
    EXPECT_LE(static_cast<int64_t>(task.y.size()), c.max_rows_per_task)
        << task.id;
    loaded_rows += task.y.size();
    if (!task.metafeatures.empty()) ++with_metafeatures;
    // Canonical form: one assignment per stage, algorithm set, exactly its
    // parameters.
    const v1::Configuration& config = task.configurations.front();
    ASSERT_EQ(config.assignments_size(), c.num_stages);
    for (int s = 0; s < c.num_stages; ++s) {
      const v1::Assignment& a = config.assignments(s);
      EXPECT_EQ(a.stage(), data.space.stages(s).name());
      EXPECT_FALSE(a.algorithm().empty());
    }
  }
  if (c.splits.empty()) EXPECT_EQ(loaded_rows, c.num_rows);
  EXPECT_EQ(with_metafeatures, c.tasks_with_metafeatures);
}

INSTANTIATE_TEST_SUITE_P(SharedData, RealMetaDatasetTest,
                         ::testing::Values(RealCase{"oboe",
                                                    {},
                                                    v1::GOAL_MINIMIZE,
                                                    1,
                                                    22,
                                                    73146,
                                                    334,
                                                    219,
                                                    219,
                                                    46,
                                                    255},
                                           RealCase{"adaboost",
                                                    {},
                                                    v1::GOAL_MAXIMIZE,
                                                    2,
                                                    4,
                                                    23209,
                                                    51,
                                                    90,
                                                    3030,
                                                    212,
                                                    51},
                                           RealCase{"hpobench-mlp",
                                                    {"test"},
                                                    v1::GOAL_MAXIMIZE,
                                                    1,
                                                    5,
                                                    180000,
                                                    1,
                                                    30000,
                                                    30000,
                                                    0,
                                                    0},
                                           RealCase{"fcnet",
                                                    {"test"},
                                                    v1::GOAL_MINIMIZE,
                                                    1,
                                                    9,
                                                    186624,
                                                    1,
                                                    62208,
                                                    62208,
                                                    0,
                                                    0},
                                           RealCase{"nasbench201",
                                                    {"test"},
                                                    v1::GOAL_MAXIMIZE,
                                                    1,
                                                    6,
                                                    31250,
                                                    1,
                                                    15625,
                                                    15625,
                                                    0,
                                                    0},
                                           RealCase{"sklearn-pipelines",
                                                    {},
                                                    v1::GOAL_MAXIMIZE,
                                                    4,
                                                    19,
                                                    16994,
                                                    29,
                                                    586,
                                                    586,
                                                    21,
                                                    29}),
                         [](const ::testing::TestParamInfo<RealCase>& info) {
                           std::string name = info.param.folder;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace metaopt::meta
