// The history export: completed studies as a meta-dataset folder that the
// reader and metaopt-train accept (StudyEngine::ExportMetaDataset over
// in-memory storage).
#include "core/history/history_export.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/testutil/history_studies.h"
#include "core/meta_dataset/meta_dataset.h"
#include "core/meta_training/train_main.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::history {
namespace {

using ::metaopt::testing::CatalogueSpec;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::PipelineSpec;
using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class HistoryExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    METAOPT_ASSERT_OK_AND_ASSIGN(storage_, storage::OpenInMemoryStorage());
    engine_ = std::make_unique<study::StudyEngine>(storage_.get(), nullptr);
  }

  v1::StudySpec Pipeline(uint64_t seed, double rows = 0) {
    v1::StudySpec spec = PipelineSpec(v1::ALGORITHM_KIND_RANDOM, seed);
    if (rows > 0)
      (*spec.mutable_dataset_features())["NumberOfInstances"] = rows;
    return spec;
  }

  // Exports with `request` as `owner` into dir_; returns the folder names.
  absl::StatusOr<std::vector<std::string>> Export(
      const v1::ExportMetaDatasetRequest& request,
      const std::string& owner = "") {
    METAOPT_ASSIGN_OR_RETURN(
        std::unique_ptr<HistoryExporter> exporter,
        engine_->ExportMetaDataset(request, OwnerContext(owner)));
    return WriteExport(*exporter, dir_.path());
  }

  v1::ExportMetaDatasetRequest AllCompatible(int min_trials = 5) {
    v1::ExportMetaDatasetRequest request;
    request.set_all_compatible(true);
    request.set_min_completed_trials(min_trials);
    return request;
  }

  std::unique_ptr<storage::Storage> storage_;
  std::unique_ptr<study::StudyEngine> engine_;
  ScopedTempDir dir_;
};

TEST_F(HistoryExportTest, CompletedStudiesBecomeAReadableMetaDataset) {
  // Three completed pipeline studies (one with a FAILED and an INFEASIBLE
  // trial), one with too few trials, one over another space.
  METAOPT_ASSERT_OK(RunStudy(*engine_, "", "a", Pipeline(1, 100), 8, {3}, {5}));
  METAOPT_ASSERT_OK(RunStudy(*engine_, "", "b", Pipeline(2, 200), 6));
  METAOPT_ASSERT_OK(RunStudy(*engine_, "", "c", Pipeline(3), 7));
  METAOPT_ASSERT_OK(RunStudy(*engine_, "", "short", Pipeline(4), 4));
  METAOPT_ASSERT_OK(RunStudy(*engine_, "", "other", CatalogueSpec(20), 6));

  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<std::string> folders,
                               Export(AllCompatible()));
  ASSERT_THAT(folders, SizeIs(2));
  const std::string pipeline = HistoryDatasetName(
      "", Pipeline(0).search_space(), Pipeline(0).objective());
  ASSERT_THAT(folders, ::testing::Contains(pipeline));

  const std::string folder = dir_.File(pipeline);
  METAOPT_ASSERT_OK_AND_ASSIGN(meta::MetaDataset data,
                               meta::ReadMetaDataset(folder));
  EXPECT_EQ(data.name, pipeline);
  ASSERT_THAT(data.tasks, SizeIs(3));  // "short" is not completed
  EXPECT_EQ(data.tasks[0].id, "a");
  EXPECT_EQ(data.tasks[0].configurations.size(), 8u);  // failures kept
  EXPECT_EQ(data.tasks[1].configurations.size(), 6u);
  // 3 tasks: one valid, chosen by hash; the same on every export.
  int valid = 0;
  for (const meta::Task& task : data.tasks) valid += task.split == "valid";
  EXPECT_EQ(valid, 1);
  EXPECT_EQ(data.tasks[0].metafeatures.at("NumberOfInstances"), 100);
  EXPECT_TRUE(data.tasks[2].metafeatures.empty());

  // A FAILED / INFEASIBLE row has the study's worst COMPLETED value and says
  // so in its state column.
  const std::vector<std::string> lines =
      absl::StrSplit(ReadText(absl::StrCat(folder, "/evaluations.csv")), '\n',
                     absl::SkipEmpty());
  const std::vector<std::string> header = absl::StrSplit(lines[0], ',');
  ASSERT_GE(header.size(), 3u);
  EXPECT_EQ(header[header.size() - 2], "state");
  EXPECT_EQ(header.back(), "trial");
  double worst = 1e9;
  for (size_t i = 0; i < data.tasks[0].y.size(); ++i) {
    const std::vector<std::string> cells = absl::StrSplit(lines[1 + i], ',');
    if (cells[cells.size() - 2] == "COMPLETED") {
      worst = std::min(worst, data.tasks[0].y[i]);
    }
  }
  EXPECT_THAT(lines[3], HasSubstr(",FAILED,3"));
  EXPECT_THAT(lines[5], HasSubstr(",INFEASIBLE,5"));
  EXPECT_EQ(data.tasks[0].y[2], worst);
  EXPECT_EQ(data.tasks[0].y[4], worst);
  const std::string tasks = ReadText(absl::StrCat(folder, "/tasks.csv"));
  EXPECT_THAT(tasks, HasSubstr("a,,"));
  EXPECT_THAT(tasks, HasSubstr(",RANDOM,6,1,1\n"));
  EXPECT_THAT(ReadText(absl::StrCat(folder, "/README.md")),
              HasSubstr("worst COMPLETED value"));

  // Deterministic: a second export writes the same files.
  const std::string first_tasks = tasks;
  METAOPT_ASSERT_OK(Export(AllCompatible()).status());
  EXPECT_EQ(ReadText(absl::StrCat(folder, "/tasks.csv")), first_tasks);
}

TEST_F(HistoryExportTest, SmallChunksGiveTheSameFiles) {
  METAOPT_ASSERT_OK(RunStudy(*engine_, "", "a", Pipeline(1, 5), 9));
  METAOPT_ASSERT_OK(RunStudy(*engine_, "", "b", Pipeline(2), 9));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<HistoryExporter> big,
      engine_->ExportMetaDataset(AllCompatible(), OwnerContext("")));
  ScopedTempDir other;
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<std::string> folders,
                               WriteExport(*big, dir_.path()));
  ASSERT_THAT(folders, SizeIs(1));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<HistoryGroup> groups,
                               ScanHistory(*storage_, "", {5}));
  HistoryExporter small(storage_.get(), "", groups, {5}, absl::UnixEpoch(),
                        /*chunk_bytes=*/37);
  int chunks = 0;
  ExportFolderWriter writer(other.path());
  for (;;) {
    METAOPT_ASSERT_OK_AND_ASSIGN(std::optional<FileChunk> chunk, small.Next());
    if (!chunk.has_value()) break;
    EXPECT_LE(chunk->data.size(), 37u);
    METAOPT_ASSERT_OK(writer.Write(*chunk));
    ++chunks;
  }
  METAOPT_ASSERT_OK(writer.Finish().status());
  EXPECT_GT(chunks, 20);
  for (const char* file :
       {"space.json", "evaluations.csv", "tasks.csv", "metafeatures.csv"}) {
    EXPECT_EQ(ReadText(absl::StrCat(other.path(), "/", folders[0], "/", file)),
              ReadText(absl::StrCat(dir_.path(), "/", folders[0], "/", file)))
        << file;
  }
}

TEST_F(HistoryExportTest, OutOfOrderChunksAreRejected) {
  ExportFolderWriter writer(dir_.path());
  FileChunk chunk;
  chunk.dataset = "history-000000000000";
  chunk.file = "space.json";
  chunk.offset = 5;
  EXPECT_THAT(writer.Write(chunk), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("offset")));
  chunk.offset = 0;
  chunk.file = "../escape";
  EXPECT_THAT(writer.Write(chunk), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("file name")));
  chunk.dataset = "../up";
  chunk.file = "space.json";
  EXPECT_THAT(writer.Write(chunk), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("folder name")));
}

TEST_F(HistoryExportTest, OwnersSeeOnlyTheirOwnStudies) {
  METAOPT_ASSERT_OK(RunStudy(*engine_, "alice", "a1", Pipeline(1), 6));
  METAOPT_ASSERT_OK(RunStudy(*engine_, "alice", "a2", Pipeline(2), 6));
  METAOPT_ASSERT_OK(RunStudy(*engine_, "bob", "b1", Pipeline(3), 6));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<std::string> bobs,
                               Export(AllCompatible(), "bob"));
  ASSERT_THAT(bobs, SizeIs(1));
  METAOPT_ASSERT_OK_AND_ASSIGN(meta::MetaDataset data,
                               meta::ReadMetaDataset(dir_.File(bobs[0])));
  ASSERT_THAT(data.tasks, SizeIs(1));
  EXPECT_EQ(data.tasks[0].id, "b1");
  // Another owner's study id is unknown to bob.
  v1::ExportMetaDatasetRequest request;
  request.set_space_of("a1");
  request.set_min_completed_trials(5);
  EXPECT_THAT(Export(request, "bob"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("a1")));
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<std::string> alices,
                               Export(request, "alice"));
  ASSERT_THAT(alices, SizeIs(1));
  EXPECT_NE(alices[0], bobs[0]);  // the name identifies the owner too
}

TEST_F(HistoryExportTest, RequestErrors) {
  METAOPT_ASSERT_OK(RunStudy(*engine_, "", "a", Pipeline(1), 3));
  EXPECT_THAT(
      Export(v1::ExportMetaDatasetRequest()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("space_of")));
  v1::ExportMetaDatasetRequest request = AllCompatible(-1);
  EXPECT_THAT(Export(request), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("min_completed_trials: -1")));
  request.set_space_of("a");
  request.set_min_completed_trials(0);  // 10: "a" has 3
  EXPECT_THAT(Export(request), StatusIs(absl::StatusCode::kFailedPrecondition,
                                        HasSubstr("10 COMPLETED trials")));
  request.set_space_of("bad id!");
  EXPECT_THAT(Export(request), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("space_of")));
  // Nothing completed: no folder at all.
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<std::string> none,
                               Export(AllCompatible(50)));
  EXPECT_THAT(none, ElementsAre());
}

// metaopt-train reads an export unchanged: a portfolio and a DeepPipe model.
TEST_F(HistoryExportTest, MetaoptTrainTrainsOnAnExport) {
  for (int i = 0; i < 6; ++i) {
    METAOPT_ASSERT_OK(RunStudy(*engine_, "", absl::StrCat("s", i),
                               Pipeline(10 + i, 100 + i), 12, {2}));
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(std::vector<std::string> folders,
                               Export(AllCompatible()));
  ASSERT_THAT(folders, SizeIs(1));
  const std::string data = dir_.File(folders[0]);
  ScopedTempDir registry;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"metaopt-train", "--kind", "portfolio",
                                 "--data", data, "--registry", registry.path(),
                                 "--size", "4", "--quiet"},
        std::vector<std::string>{"metaopt-train", "--kind", "deeppipe",
                                 "--data", data, "--registry", registry.path(),
                                 "--epochs", "2", "--quiet"}}) {
    std::vector<const char*> argv;
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    std::ostringstream out, err;
    EXPECT_EQ(train::MetaoptTrainMain(static_cast<int>(argv.size()),
                                      argv.data(), out, err),
              0)
        << err.str();
    EXPECT_THAT(out.str(), HasSubstr(absl::StrCat(folders[0], "-", args[2])));
  }
}

}  // namespace
}  // namespace metaopt::history
