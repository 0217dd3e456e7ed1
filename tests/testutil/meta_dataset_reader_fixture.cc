#include "tests/testutil/meta_dataset_reader_fixture.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/message_differencer.h"

namespace metaopt::meta::reader_test {

using ::google::protobuf::util::MessageDifferencer;

std::string Lines(const std::vector<std::string>& lines) {
  return absl::StrCat(absl::StrJoin(lines, "\n"), "\n");
}

void SetLine(std::string* text, int line, const std::string& replacement) {
  std::vector<std::string> lines = absl::StrSplit(*text, '\n');
  ASSERT_LT(line, static_cast<int>(lines.size()));
  lines[line - 1] = replacement;
  *text = absl::StrJoin(lines, "\n");
}

void DeleteLine(std::string* text, int line) {
  std::vector<std::string> lines = absl::StrSplit(*text, '\n');
  ASSERT_LT(line, static_cast<int>(lines.size()));
  lines.erase(lines.begin() + (line - 1));
  *text = absl::StrJoin(lines, "\n");
}

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

}  // namespace metaopt::meta::reader_test
