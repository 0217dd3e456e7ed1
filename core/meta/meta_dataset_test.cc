#include "core/meta/meta_dataset.h"

#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/meta/meta_dataset_testutil.h"
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
using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

// A fresh directory, removed with its contents at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string pattern = ::testing::TempDir() + "meta_dataset_test_XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    const char* dir = mkdtemp(buffer.data());
    EXPECT_NE(dir, nullptr) << pattern;
    if (dir != nullptr) path_ = dir;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string path(const std::string& sub = "") const {
    return sub.empty() ? path_ : path_ + "/" + sub;
  }

 private:
  std::string path_;
};

// Lines joined with LF, each ending with LF.
std::string Lines(const std::vector<std::string>& lines) {
  return absl::StrCat(absl::StrJoin(lines, "\n"), "\n");
}

// Replaces line `line` (1-based) of `text`.
void SetLine(std::string* text, int line, const std::string& replacement) {
  std::vector<std::string> lines = absl::StrSplit(*text, '\n');
  ASSERT_LT(line, static_cast<int>(lines.size()));
  lines[line - 1] = replacement;
  *text = absl::StrJoin(lines, "\n");
}

// Removes line `line` (1-based) of `text`.
void DeleteLine(std::string* text, int line) {
  std::vector<std::string> lines = absl::StrSplit(*text, '\n');
  ASSERT_LT(line, static_cast<int>(lines.size()));
  lines.erase(lines.begin() + (line - 1));
  *text = absl::StrJoin(lines, "\n");
}

// A small folder: two stages (a parameterless algorithm, float, int-log,
// categorical with a numeric-looking value, float-log), three tasks in three
// splits, seed and auxiliary columns, metafeatures for two tasks (one with a
// missing cell).
FolderText SmallFolder() {
  FolderText text;
  text.space_json = R"json({
  "name": "small",
  "objective": {"name": "error", "goal": "minimize"},
  "stages": [
    {"name": "prep", "algorithms": [
      {"name": "none", "params": []},
      {"name": "scale", "params": [
        {"name": "factor", "type": "float", "low": 0.5, "high": 2.0, "log": false}]},
      {"name": "pca", "params": [
        {"name": "n_components", "type": "int", "low": 1, "high": 16, "log": true}]}]},
    {"name": "model", "algorithms": [
      {"name": "knn", "params": [
        {"name": "k", "type": "int", "low": 1, "high": 15, "log": false},
        {"name": "weights", "type": "categorical", "values": ["uniform", "distance"]}]},
      {"name": "svm", "params": [
        {"name": "C", "type": "float", "low": 0.01, "high": 100, "log": true},
        {"name": "kernel", "type": "categorical", "values": ["rbf", "poly", "1e-05"]}]}]}
  ]
}
)json";
  // Columns: 1 task, 2 prep, 3 model, 4 scale.factor, 5 pca.n_components, 6
  // knn.k, 7 knn.weights, 8 svm.C, 9 svm.kernel, 10 y, 11 y_seed0, 12 y_seed1,
  // 13 runtime_s.
  text.evaluations_csv = Lines({
      "task,prep,model,scale.factor,pca.n_components,knn.k,knn.weights,svm.C,"
      "svm.kernel,y,"
      "y_seed0,y_seed1,runtime_s",
      "t1,none,knn,,,3,uniform,,,0.25,0.2,0.3,1.5",           // line 2
      "t1,scale,svm,1.5,,,,0.1,rbf,0.5,0.5,,2",               // line 3
      "t1,pca,knn,,4,7,distance,,,0.125,0.1,0.15,0.5",        // line 4
      "t2,none,svm,,,,,100,1e-05,1e-05,,,0.25",               // line 5
      "t2,pca,svm,,16,,,0.01,poly,0.75,0.7,0.8,3",            // line 6
      "t3,scale,knn,0.5,,15,uniform,,,-0.3,,,1",              // line 7
      "t3,none,knn,,,1,distance,,,3.19113473778998e-05,,,1",  // line 8
  });
  text.tasks_csv = Lines({
      "task,name,split,n_rows,n_features,n_classes",
      "t1,first,train,100,5,2",  // line 2
      "t2,,valid,,,",            // line 3
      "t3,third,test,300,7,3",   // line 4
  });
  text.metafeatures_csv = Lines({
      "task,nr_inst,class_ent.mean",
      "t1,100,0.5",  // line 2
      "t3,300,",     // line 3
  });
  return text;
}

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
        std::pair<std::string, std::variant<double, std::string>>>& params) {
  v1::Assignment assignment;
  assignment.set_stage(stage);
  assignment.set_algorithm(algorithm);
  for (const auto& [name, value] : params) {
    v1::ParameterValue& v = (*assignment.mutable_parameters())[name];
    if (std::holds_alternative<double>(value)) {
      v.set_number(std::get<double>(value));
    } else {
      v.set_category(std::get<std::string>(value));
    }
  }
  return assignment;
}

v1::Configuration MakeConfiguration(std::vector<v1::Assignment> assignments) {
  v1::Configuration config;
  for (v1::Assignment& a : assignments)
    *config.add_assignments() = std::move(a);
  return config;
}

void ExpectSameDataset(const MetaDataset& a, const MetaDataset& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_TRUE(MessageDifferencer::Equals(a.space, b.space))
      << a.space.DebugString() << "\nvs\n"
      << b.space.DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(a.objective, b.objective));
  EXPECT_EQ(a.task_property_names, b.task_property_names);
  EXPECT_EQ(a.metafeature_names, b.metafeature_names);
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t t = 0; t < a.tasks.size(); ++t) {
    const Task& x = a.tasks[t];
    const Task& y = b.tasks[t];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.split, y.split);
    EXPECT_EQ(x.n_rows, y.n_rows);
    EXPECT_EQ(x.n_features, y.n_features);
    EXPECT_EQ(x.properties, y.properties);
    EXPECT_EQ(x.metafeatures, y.metafeatures);  // Exact: numbers round-trip.
    EXPECT_EQ(x.y, y.y);
    ASSERT_EQ(x.configurations.size(), y.configurations.size());
    for (size_t i = 0; i < x.configurations.size(); ++i) {
      EXPECT_TRUE(
          MessageDifferencer::Equals(x.configurations[i], y.configurations[i]))
          << x.id << " #" << i << ": " << x.configurations[i].ShortDebugString()
          << " vs " << y.configurations[i].ShortDebugString();
    }
  }
}

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

TEST(EvaluationColumnsTest,
     QualifiesParametersSharedAcrossStagesWithTheStageName) {
  MetaDataset data;
  data.name = "twice";
  data.objective.set_name("loss");
  data.objective.set_goal(v1::GOAL_MINIMIZE);
  METAOPT_ASSERT_OK_AND_ASSIGN(SpaceFile space, ParseSpaceJson(R"json({
    "name": "twice", "objective": {"name": "loss", "goal": "minimize"},
    "stages": [
      {"name": "s1", "algorithms": [{"name": "scale", "params": [
          {"name": "factor", "type": "float", "low": 0, "high": 1, "log": false}]}]},
      {"name": "s2", "algorithms": [{"name": "scale", "params": [
          {"name": "factor", "type": "float", "low": 0, "high": 1, "log": false},
          {"name": "shift", "type": "int", "low": -3, "high": 3, "log": false}]}]}]})json"));
  EXPECT_THAT(EvaluationColumns(space.space),
              ElementsAre("task", "s1", "s2", "s1.scale.factor",
                          "s2.scale.factor", "scale.shift", "y"));
  data.space = space.space;
  Task& task = data.tasks.emplace_back();
  task.id = "only";
  task.split = "train";
  task.configurations.push_back(MakeConfiguration(
      {MakeAssignment("s1", "scale", {{"factor", 0.25}}),
       MakeAssignment("s2", "scale", {{"factor", 0.0}, {"shift", -3.0}})}));
  task.y.push_back(1.0);
  TempDir dir;
  METAOPT_ASSERT_OK(WriteMetaDataset(data, dir.path("twice")));
  METAOPT_ASSERT_OK_AND_ASSIGN(MetaDataset read,
                               ReadMetaDataset(dir.path("twice")));
  ExpectSameDataset(read, data);
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
// space.json.

TEST_F(MetaDatasetTest, SpaceBadJson) {
  text_.space_json = "{\"name\": \"small\",";
  EXPECT_THAT(Read(),
              StatusIs(kInvalid, HasSubstr("space.json: invalid JSON")));
  text_.space_json = "[]";
  EXPECT_THAT(Read(), StatusIs(kInvalid,
                               HasSubstr("space.json: the top level must be")));
}

TEST_F(MetaDatasetTest, SpaceMissingKey) {
  absl::StrReplaceAll({{"\"algorithms\": [\n      {\"name\": \"knn\"",
                        "\"algos\": [\n      {\"name\": \"knn\""}},
                      &text_.space_json);
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("space.json: stages[1] (\"model\"): missing "
                                   "key \"algorithms\"")));
}

TEST_F(MetaDatasetTest, SpaceUnknownType) {
  absl::StrReplaceAll(
      {{R"("name": "k", "type": "int")", R"("name": "k", "type": "integer")"}},
      &text_.space_json);
  EXPECT_THAT(
      Read(),
      StatusIs(
          kInvalid,
          HasSubstr("space.json: stages[1].algorithms[0].params[0] (\"k\"): "
                    "unknown type \"integer\"")));
}

TEST_F(MetaDatasetTest, SpaceLowAboveHigh) {
  absl::StrReplaceAll({{R"("low": 1, "high": 15)", R"("low": 5, "high": 1)"}},
                      &text_.space_json);
  EXPECT_THAT(Read(), StatusIs(kInvalid,
                               HasSubstr("params[0] (\"k\"): low 5 > high 1")));
}

TEST_F(MetaDatasetTest, SpaceLogNeedsPositiveLow) {
  absl::StrReplaceAll(
      {{R"("low": 0.01, "high": 100)", R"("low": 0, "high": 100)"}},
      &text_.space_json);
  EXPECT_THAT(Read(), StatusIs(kInvalid,
                               HasSubstr("(\"C\"): log scale needs low > 0")));
}

TEST_F(MetaDatasetTest, SpaceIntBoundsMustBeIntegral) {
  absl::StrReplaceAll(
      {{R"("low": 1, "high": 15)", R"("low": 1.5, "high": 15)"}},
      &text_.space_json);
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid,
               HasSubstr("(\"k\"): int bound low 1.5 is not an integer")));
}

// Caught by the meta_dataset fuzz harness: int bounds beyond +-2^53 (and other
// breaches of the service's search-space rules) were accepted, and studies over
// the space then failed.
TEST_F(MetaDatasetTest, SpaceMustObeyTheSearchSpaceRules) {
  absl::StrReplaceAll(
      {{R"("low": 1, "high": 15)", R"("low": 1, "high": 100000000000000000)"}},
      &text_.space_json);
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid,
               HasSubstr("space.json: stages[1].algorithms[0].parameters[0]: "
                         "high 100000000000000000 is outside")));
  text_ = SmallFolder();
  const std::string long_name(200, 'n');
  absl::StrReplaceAll({{R"("name": "k")", "\"name\": \"" + long_name + "\""}},
                      &text_.space_json);
  EXPECT_THAT(Read(), StatusIs(kInvalid, HasSubstr("more than the limit of")));
}

TEST_F(MetaDatasetTest, SpaceEmptyValues) {
  absl::StrReplaceAll({{R"(["uniform", "distance"])", "[]"}},
                      &text_.space_json);
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("(\"weights\"): \"values\" is empty")));
}

TEST_F(MetaDatasetTest, SpaceKeysOfTheOtherType) {
  absl::StrReplaceAll(
      {{R"("type": "categorical", "values": ["uniform", "distance"])",
        R"("type": "categorical", "values": ["uniform"], "log": false)"}},
      &text_.space_json);
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid,
               HasSubstr("a categorical parameter has no \"log\" key")));
}

TEST_F(MetaDatasetTest, SpaceBadGoal) {
  absl::StrReplaceAll({{"\"minimize\"", "\"lower\""}}, &text_.space_json);
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("space.json: objective: goal \"lower\" is not "
                                 "\"minimize\" or \"maximize\"")));
}

TEST_F(MetaDatasetTest, SpaceDuplicateNames) {
  const std::string original = text_.space_json;
  absl::StrReplaceAll({{"\"name\": \"model\"", "\"name\": \"prep\""}},
                      &text_.space_json);
  EXPECT_THAT(Read(),
              StatusIs(kInvalid, HasSubstr("duplicate stage name \"prep\"")));
  text_.space_json = original;
  absl::StrReplaceAll({{"\"name\": \"svm\"", "\"name\": \"knn\""}},
                      &text_.space_json);
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("stages[1].algorithms[1] (\"knn\"): duplicate "
                                 "algorithm name \"knn\"")));
  text_.space_json = original;
  absl::StrReplaceAll({{"\"name\": \"kernel\"", "\"name\": \"C\""}},
                      &text_.space_json);
  EXPECT_THAT(Read(),
              StatusIs(kInvalid, HasSubstr("duplicate parameter name \"C\"")));
  text_.space_json = original;
  absl::StrReplaceAll(
      {{R"(["rbf", "poly", "1e-05"])", R"(["rbf", "poly", "rbf"])"}},
      &text_.space_json);
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("values[2]: duplicate value \"rbf\"")));
  text_.space_json = original;
  absl::StrReplaceAll({{"\"name\": \"model\"", "\"name\": \"y\""}},
                      &text_.space_json);
  EXPECT_THAT(
      Read(),
      StatusIs(kInvalid, HasSubstr("column name \"y\" would occur twice")));
}

TEST_F(MetaDatasetTest, SpaceNameWithComma) {
  absl::StrReplaceAll({{"\"name\": \"knn\"", "\"name\": \"k,nn\""}},
                      &text_.space_json);
  EXPECT_THAT(Read(), StatusIs(kInvalid, HasSubstr("contains a comma")));
}

// ---------------------------------------------------------------------------------------------
// evaluations.csv: file-level and header rules.

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

TEST_F(MetaDatasetTest, NumberOutsideBounds) {
  SetLine(&text_.evaluations_csv, 3, "t1,scale,svm,3,,,,0.1,rbf,0.5,0.5,,2");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:3: column \"scale.factor\": "
                                 "\"3\" is outside [0.5, 2]")));
}

TEST_F(MetaDatasetTest, IntNotIntegral) {
  SetLine(&text_.evaluations_csv, 2,
          "t1,none,knn,,,2.5,uniform,,,0.25,0.2,0.3,1.5");
  EXPECT_THAT(Read(),
              StatusIs(kInvalid,
                       HasSubstr("evaluations.csv:2: column \"knn.k\": \"2.5\" "
                                 "is not an integer")));
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
