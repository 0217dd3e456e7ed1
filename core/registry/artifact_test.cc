#include "core/registry/artifact.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>

#include "core/registry/sha256.h"
#include "tests/testutil/test_artifacts.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::registry {
namespace {

namespace fs = std::filesystem;
using ::metaopt::registry::testing::TestArtifact;
using ::metaopt::registry::testing::WriteFile;
using ::metaopt::registry::testing::WriteRawVersion;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> DirEntries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// ---- Names and versions ----

TEST(ValidateModelNameTest, AcceptsLettersDigitsDotsUnderscoresAndDashes) {
  EXPECT_THAT(ValidateModelName("oboe-portfolio"), IsOk());
  EXPECT_THAT(ValidateModelName("a"), IsOk());
  EXPECT_THAT(ValidateModelName("0.deep_pipe-v2"), IsOk());
  EXPECT_THAT(ValidateModelName(std::string(128, 'x')), IsOk());
}

TEST(ValidateModelNameTest, RejectsOtherNames) {
  for (const std::string& name :
       {std::string(""), std::string(".hidden"), std::string("-x"),
        std::string("_x"), std::string("a b"), std::string("a/b"),
        std::string("a@1"), std::string(129, 'x'), std::string("é")}) {
    EXPECT_THAT(ValidateModelName(name, "spec.algorithm.model"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("spec.algorithm.model"),
                               HasSubstr("not a model name"))))
        << name;
  }
}

TEST(ParseVersionDirNameTest, AcceptsPositiveIntegersOnly) {
  EXPECT_EQ(ParseVersionDirName("1"), 1);
  EXPECT_EQ(ParseVersionDirName("42"), 42);
  EXPECT_EQ(ParseVersionDirName("9223372036854775807"),
            std::numeric_limits<int64_t>::max());
  for (const char* name : {"", "0", "01", "007", "+1", "-1", " 1", "1 ", "1.0",
                           "abc", "1a", "9223372036854775808", ".tmp-abc"}) {
    EXPECT_EQ(ParseVersionDirName(name), std::nullopt) << name;
  }
}

// ---- ValidateArtifact ----

TEST(ValidateArtifactTest, AcceptsTheTestArtifact) {
  EXPECT_THAT(ValidateArtifact(TestArtifact()), IsOk());
}

TEST(ValidateArtifactTest, AcceptsEmptyTensorsAndScalars) {
  v1::ModelArtifact artifact = TestArtifact();
  v1::Tensor* empty = artifact.add_tensors();
  empty->set_name("empty");
  empty->add_shape(0);
  empty->add_shape(5);
  v1::Tensor* scalar = artifact.add_tensors();
  scalar->set_name("scalar");
  scalar->add_values(1.5);
  EXPECT_THAT(ValidateArtifact(artifact), IsOk());
}

TEST(ValidateArtifactTest, RejectsUnsupportedFormatVersion) {
  v1::ModelArtifact artifact = TestArtifact();
  artifact.set_format_version(0);
  EXPECT_THAT(
      ValidateArtifact(artifact),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "artifact.format_version: 0 is not supported (this build reads "
              "format version 1)")));
  artifact.set_format_version(2);
  EXPECT_THAT(ValidateArtifact(artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("artifact.format_version: 2")));
}

TEST(ValidateArtifactTest, RejectsUnsetKind) {
  v1::ModelArtifact artifact = TestArtifact();
  artifact.set_kind(v1::MODEL_KIND_UNSPECIFIED);
  EXPECT_THAT(
      ValidateArtifact(artifact),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("artifact.kind")));
}

TEST(ValidateArtifactTest, RejectsInvalidSearchSpace) {
  v1::ModelArtifact artifact = TestArtifact();
  artifact.mutable_search_space()
      ->mutable_stages(1)
      ->mutable_algorithms(1)
      ->set_name("RF");
  EXPECT_THAT(
      ValidateArtifact(artifact),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("artifact.search_space.stages[1].algorithms[1]")));
  artifact.mutable_search_space()->clear_stages();
  EXPECT_THAT(ValidateArtifact(artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("artifact.search_space")));
}

TEST(ValidateArtifactTest, RejectsTensorWithoutName) {
  v1::ModelArtifact artifact = TestArtifact();
  artifact.mutable_tensors(0)->clear_name();
  EXPECT_THAT(ValidateArtifact(artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("artifact.tensors[0].name: empty")));
}

TEST(ValidateArtifactTest, RejectsDuplicateTensorNames) {
  v1::ModelArtifact artifact = TestArtifact();
  *artifact.add_tensors() = artifact.tensors(0);
  EXPECT_THAT(
      ValidateArtifact(artifact),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("artifact.tensors[1].name: duplicate \"weights\" (also "
                    "tensors[0])")));
}

TEST(ValidateArtifactTest, RejectsNegativeDimension) {
  v1::ModelArtifact artifact = TestArtifact();
  artifact.mutable_tensors(0)->set_shape(1, -3);
  EXPECT_THAT(
      ValidateArtifact(artifact),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "artifact.tensors[0] \"weights\".shape[1]: -3 is negative")));
}

TEST(ValidateArtifactTest, RejectsShapeThatDoesNotMatchValues) {
  v1::ModelArtifact artifact = TestArtifact();
  artifact.mutable_tensors(0)->mutable_values()->RemoveLast();
  EXPECT_THAT(
      ValidateArtifact(artifact),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr(
              "artifact.tensors[0] \"weights\": shape [2, 3] has 6 elements "
              "but 5 values")));
}

TEST(ValidateArtifactTest, RejectsOverflowingShape) {
  v1::ModelArtifact artifact = TestArtifact();
  v1::Tensor* tensor = artifact.mutable_tensors(0);
  tensor->clear_shape();
  for (int i = 0; i < 4; ++i) tensor->add_shape(int64_t{1} << 20);
  EXPECT_THAT(ValidateArtifact(artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("too many elements")));
}

TEST(ValidateArtifactTest, RejectsNonFiniteTensorValues) {
  for (double bad : {kNaN, kInf, -kInf}) {
    v1::ModelArtifact artifact = TestArtifact();
    artifact.mutable_tensors(0)->set_values(4, bad);
    EXPECT_THAT(
        ValidateArtifact(artifact),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 AllOf(HasSubstr("artifact.tensors[0] \"weights\".values[4]"),
                       HasSubstr("is not finite"))));
  }
}

TEST(ValidateArtifactTest, RejectsNonFiniteNormalization) {
  v1::ModelArtifact artifact = TestArtifact();
  (*artifact.mutable_normalization())["y_std"] = kNaN;
  EXPECT_THAT(
      ValidateArtifact(artifact),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("artifact.normalization[\"y_std\"]: nan is not finite")));
}

TEST(ValidateArtifactTest, RejectsPortfolioConfigurationOutsideTheSpace) {
  v1::ModelArtifact artifact = TestArtifact();
  (*artifact.mutable_portfolio(1)
        ->mutable_assignments(1)
        ->mutable_parameters())["max_depth"]
      .set_number(99);
  EXPECT_THAT(ValidateArtifact(artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("artifact.portfolio[1]")));
  artifact = TestArtifact();
  artifact.mutable_portfolio(0)->mutable_assignments(1)->set_algorithm("SVM");
  EXPECT_THAT(ValidateArtifact(artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("artifact.portfolio[0]")));
}

TEST(ValidateArtifactTest, RejectsCatalogueConfigurationOutsideTheSpace) {
  v1::ModelArtifact artifact = TestArtifact();
  *artifact.add_catalogue() = artifact.portfolio(0);
  *artifact.add_catalogue() = artifact.portfolio(1);
  EXPECT_THAT(ValidateArtifact(artifact), IsOk());
  (*artifact.mutable_catalogue(1)
        ->mutable_assignments(1)
        ->mutable_parameters())["learning_rate"]
      .set_number(kNaN);
  EXPECT_THAT(ValidateArtifact(artifact),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("artifact.catalogue[1]")));
}

// ---- WriteModelVersion / ReadModelVersion ----

TEST(WriteModelVersionTest, RoundTrips) {
  ScopedTempDir registry;
  const v1::ModelArtifact artifact = TestArtifact(3.5);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      int64_t version,
      WriteModelVersion(registry.path(), "oboe-portfolio", artifact));
  EXPECT_EQ(version, 1);
  const std::string dir = registry.File("oboe-portfolio/1");
  EXPECT_THAT(DirEntries(dir), ::testing::ElementsAre("MANIFEST", "model.pb"));

  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const LoadedModel> model,
      ReadModelVersion(registry.path(), "oboe-portfolio", 1));
  EXPECT_EQ(model->name, "oboe-portfolio");
  EXPECT_EQ(model->version, 1);
  EXPECT_EQ(model->reference(), "oboe-portfolio@1");
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      model->artifact, artifact));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      model->space.proto(), artifact.search_space()));
  EXPECT_EQ(model->manifest.kind(), v1::MODEL_KIND_PORTFOLIO);
  EXPECT_EQ(model->manifest.artifact(), "model.pb");
  EXPECT_EQ(model->manifest.artifact_sha256(),
            Sha256Hex(ReadFile(dir + "/model.pb")));
  EXPECT_GT(model->manifest.create_time().seconds(), 0);
  EXPECT_LE(model->load_time, absl::Now());

  // The directory form names the same version.
  METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const LoadedModel> again,
                               ReadModelVersion(dir + "/"));
  EXPECT_EQ(again->name, "oboe-portfolio");
  EXPECT_EQ(again->version, 1);
}

TEST(WriteModelVersionTest, NumbersVersionsAfterTheLargestExisting) {
  ScopedTempDir registry;
  for (int64_t expected = 1; expected <= 3; ++expected) {
    EXPECT_EQ(
        WriteModelVersion(registry.path(), "m", TestArtifact()).value_or(-1),
        expected);
  }
  // Incomplete versions count; names that are not versions do not.
  fs::create_directories(registry.File("m/7"));
  fs::create_directories(registry.File("m/0010"));
  fs::create_directories(registry.File("m/abc"));
  EXPECT_EQ(
      WriteModelVersion(registry.path(), "m", TestArtifact()).value_or(-1), 8);
  // Other models are numbered independently.
  EXPECT_EQ(
      WriteModelVersion(registry.path(), "other", TestArtifact()).value_or(-1),
      1);
  // No temporary directories are left behind.
  EXPECT_THAT(DirEntries(registry.File("m")),
              ::testing::ElementsAre("0010", "1", "2", "3", "7", "8", "abc"));
}

TEST(WriteModelVersionTest, RejectsInvalidNameOrArtifactAndWritesNothing) {
  ScopedTempDir registry;
  EXPECT_THAT(WriteModelVersion(registry.path(), "../escape", TestArtifact()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a model name")));
  v1::ModelArtifact bad = TestArtifact();
  bad.mutable_tensors(0)->set_values(0, kNaN);
  EXPECT_THAT(WriteModelVersion(registry.path(), "m", bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("artifact.tensors[0]")));
  EXPECT_THAT(DirEntries(registry.path()), IsEmpty());
}

TEST(ReadModelVersionTest, VersionWithoutManifestIsIncomplete) {
  ScopedTempDir registry;
  fs::create_directories(registry.File("m/1"));
  ASSERT_TRUE(WriteFile(registry.File("m/1/model.pb"),
                        TestArtifact().SerializeAsString()));
  EXPECT_THAT(ReadModelVersion(registry.path(), "m", 1),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("incomplete version: no MANIFEST")));
  EXPECT_THAT(ReadModelVersion(registry.path(), "m", 2),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("incomplete version: no MANIFEST")));
}

TEST(ReadModelVersionTest, DetectsChecksumMismatch) {
  ScopedTempDir registry;
  ASSERT_THAT(WriteModelVersion(registry.path(), "m", TestArtifact()), IsOk());
  const std::string path = registry.File("m/1/model.pb");
  std::string bytes = ReadFile(path);
  bytes[bytes.size() / 2] ^= 0x01;  // same size, different content
  ASSERT_TRUE(WriteFile(path, bytes));
  EXPECT_THAT(
      ReadModelVersion(registry.path(), "m", 1),
      StatusIs(absl::StatusCode::kDataLoss,
               AllOf(HasSubstr("checksum mismatch"), HasSubstr("m/1"))));
}

TEST(ReadModelVersionTest, DetectsSizeMismatch) {
  ScopedTempDir registry;
  ASSERT_THAT(WriteModelVersion(registry.path(), "m", TestArtifact()), IsOk());
  const std::string path = registry.File("m/1/model.pb");
  ASSERT_TRUE(WriteFile(path, ReadFile(path) + "x"));
  EXPECT_THAT(
      ReadModelVersion(registry.path(), "m", 1),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr("MANIFEST says")));
}

TEST(ReadModelVersionTest, DetectsMissingArtifact) {
  ScopedTempDir registry;
  ASSERT_THAT(WriteModelVersion(registry.path(), "m", TestArtifact()), IsOk());
  fs::remove(registry.File("m/1/model.pb"));
  EXPECT_THAT(
      ReadModelVersion(registry.path(), "m", 1),
      StatusIs(absl::StatusCode::kDataLoss,
               HasSubstr("names artifact \"model.pb\" but it is missing")));
}

TEST(ReadModelVersionTest, RejectsUnparsableOrUnsafeManifest) {
  ScopedTempDir registry;
  ASSERT_THAT(WriteModelVersion(registry.path(), "m", TestArtifact()), IsOk());
  ASSERT_TRUE(WriteFile(registry.File("m/1/MANIFEST"), "\xff\xff\xff garbage"));
  EXPECT_THAT(ReadModelVersion(registry.path(), "m", 1),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("MANIFEST does not parse")));

  v1::ModelManifest manifest;
  manifest.set_artifact("../../etc/passwd");
  manifest.set_artifact_sha256(std::string(64, 'a'));
  ASSERT_TRUE(
      WriteFile(registry.File("m/1/MANIFEST"), manifest.SerializeAsString()));
  EXPECT_THAT(
      ReadModelVersion(registry.path(), "m", 1),
      StatusIs(absl::StatusCode::kDataLoss,
               HasSubstr("is not a file name inside the version directory")));

  manifest.set_artifact("model.pb");
  manifest.set_artifact_sha256("ABC");
  ASSERT_TRUE(
      WriteFile(registry.File("m/1/MANIFEST"), manifest.SerializeAsString()));
  EXPECT_THAT(ReadModelVersion(registry.path(), "m", 1),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("64 lower-case hex digits")));
}

TEST(ReadModelVersionTest, RejectsUnparsableArtifact) {
  ScopedTempDir registry;
  ASSERT_TRUE(WriteRawVersion(registry.File("m/1"),
                              std::string("\xff\xff\xff\xff", 4)));
  EXPECT_THAT(
      ReadModelVersion(registry.path(), "m", 1),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr("does not parse")));
}

TEST(ReadModelVersionTest, RejectsInvalidArtifact) {
  ScopedTempDir registry;
  v1::ModelArtifact bad = TestArtifact();
  bad.mutable_tensors(0)->add_shape(7);
  ASSERT_TRUE(WriteRawVersion(registry.File("m/1"), bad));
  EXPECT_THAT(
      ReadModelVersion(registry.path(), "m", 1),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr(
                   "m/1: artifact.tensors[0] \"weights\": shape [2, 3, 7]"))));
}

TEST(ReadModelVersionTest, RejectsKindDifferentFromManifest) {
  ScopedTempDir registry;
  ASSERT_THAT(WriteModelVersion(registry.path(), "m", TestArtifact()), IsOk());
  v1::ModelManifest manifest;
  ASSERT_TRUE(
      manifest.ParseFromString(ReadFile(registry.File("m/1/MANIFEST"))));
  manifest.set_kind(v1::MODEL_KIND_PMF);
  ASSERT_TRUE(
      WriteFile(registry.File("m/1/MANIFEST"), manifest.SerializeAsString()));
  EXPECT_THAT(
      ReadModelVersion(registry.path(), "m", 1),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("MANIFEST says kind MODEL_KIND_PMF, the artifact "
                         "MODEL_KIND_PORTFOLIO")));
}

TEST(ReadModelVersionTest, CanonicalizesPortfolio) {
  ScopedTempDir registry;
  v1::ModelArtifact artifact = TestArtifact();
  // Assignments out of stage order are valid; the loaded copy has them in stage
  // order.
  artifact.mutable_portfolio(0)->mutable_assignments()->SwapElements(0, 1);
  ASSERT_THAT(WriteModelVersion(registry.path(), "m", artifact), IsOk());
  METAOPT_ASSERT_OK_AND_ASSIGN(auto model,
                               ReadModelVersion(registry.path(), "m", 1));
  EXPECT_EQ(model->artifact.portfolio(0).assignments(0).stage(),
            "preprocessor");
  EXPECT_EQ(model->artifact.portfolio(0).assignments(1).stage(), "estimator");
}

TEST(ReadModelVersionTest, RejectsDirectoryThatIsNotAVersion) {
  ScopedTempDir registry;
  EXPECT_THAT(ReadModelVersion(registry.File("m/01")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not a version")));
  EXPECT_THAT(ReadModelVersion(registry.path(), "m", 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a positive integer")));
  EXPECT_THAT(ReadModelVersion(registry.path(), "bad name", 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not a model name")));
}

}  // namespace
}  // namespace metaopt::registry
