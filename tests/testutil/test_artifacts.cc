#include "tests/testutil/test_artifacts.h"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "core/registry/artifact.h"
#include "core/registry/sha256.h"

namespace metaopt::registry::testing {
namespace {

void AddIntParameter(v1::Algorithm* algorithm, const std::string& name,
                     int64_t low, int64_t high) {
  v1::Parameter* parameter = algorithm->add_parameters();
  parameter->set_name(name);
  parameter->mutable_int_domain()->set_low(low);
  parameter->mutable_int_domain()->set_high(high);
}

v1::Assignment* AddAssignment(v1::Configuration* config,
                              const std::string& stage,
                              const std::string& algorithm) {
  v1::Assignment* assignment = config->add_assignments();
  assignment->set_stage(stage);
  assignment->set_algorithm(algorithm);
  return assignment;
}

}  // namespace

v1::SearchSpace TestSearchSpace() {
  v1::SearchSpace space;
  v1::Stage* preprocessor = space.add_stages();
  preprocessor->set_name("preprocessor");
  preprocessor->add_algorithms()->set_name("none");
  v1::Algorithm* pca = preprocessor->add_algorithms();
  pca->set_name("pca");
  AddIntParameter(pca, "n_components", 1, 10);

  v1::Stage* estimator = space.add_stages();
  estimator->set_name("estimator");
  v1::Algorithm* rf = estimator->add_algorithms();
  rf->set_name("RF");
  AddIntParameter(rf, "n_estimators", 10, 500);
  v1::Parameter* criterion = rf->add_parameters();
  criterion->set_name("criterion");
  criterion->mutable_categorical_domain()->add_values("gini");
  criterion->mutable_categorical_domain()->add_values("entropy");
  v1::Algorithm* gbt = estimator->add_algorithms();
  gbt->set_name("GBT");
  v1::Parameter* learning_rate = gbt->add_parameters();
  learning_rate->set_name("learning_rate");
  learning_rate->mutable_float_domain()->set_low(1e-3);
  learning_rate->mutable_float_domain()->set_high(1.0);
  learning_rate->mutable_float_domain()->set_log(true);
  AddIntParameter(gbt, "max_depth", 1, 10);
  return space;
}

v1::ModelArtifact TestArtifact(double marker) {
  v1::ModelArtifact artifact;
  artifact.set_format_version(kCurrentFormatVersion);
  artifact.set_kind(v1::MODEL_KIND_PORTFOLIO);
  *artifact.mutable_search_space() = TestSearchSpace();
  artifact.mutable_objective()->set_name("accuracy");
  artifact.mutable_objective()->set_goal(v1::GOAL_MAXIMIZE);

  v1::Tensor* weights = artifact.add_tensors();
  weights->set_name("weights");
  weights->add_shape(2);
  weights->add_shape(3);
  for (int i = 0; i < 6; ++i) weights->add_values(marker);
  (*artifact.mutable_normalization())["y_mean"] = 0.5;
  (*artifact.mutable_normalization())["y_std"] = 0.25;

  v1::Configuration* first = artifact.add_portfolio();
  AddAssignment(first, "preprocessor", "none");
  v1::Assignment* rf = AddAssignment(first, "estimator", "RF");
  (*rf->mutable_parameters())["n_estimators"].set_number(100);
  (*rf->mutable_parameters())["criterion"].set_category("gini");
  v1::Configuration* second = artifact.add_portfolio();
  (*AddAssignment(second, "preprocessor", "pca")
        ->mutable_parameters())["n_components"]
      .set_number(3);
  v1::Assignment* gbt = AddAssignment(second, "estimator", "GBT");
  (*gbt->mutable_parameters())["learning_rate"].set_number(0.1);
  (*gbt->mutable_parameters())["max_depth"].set_number(6);

  v1::TrainingProvenance* provenance = artifact.mutable_provenance();
  provenance->set_data_name("oboe");
  provenance->set_split("train");
  for (const char* task : {"task-1", "task-2", "task-3"})
    provenance->add_task_ids(task);
  provenance->set_seed(7);
  provenance->mutable_create_time()->set_seconds(1700000000);
  (*provenance->mutable_validation_metrics())["regret@10"] = 0.125;
  return artifact;
}

bool WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  out.close();
  return !out.fail();
}

namespace {

bool WriteRawVersionOfKind(const std::string& version_dir,
                           const std::string& artifact_bytes,
                           v1::ModelKind kind) {
  std::error_code ec;
  std::filesystem::create_directories(version_dir, ec);
  if (ec) return false;
  v1::ModelManifest manifest;
  manifest.set_kind(kind);
  manifest.set_artifact(kArtifactFileName);
  manifest.set_artifact_bytes(static_cast<int64_t>(artifact_bytes.size()));
  manifest.set_artifact_sha256(Sha256Hex(artifact_bytes));
  return WriteFile(version_dir + "/" + kArtifactFileName, artifact_bytes) &&
         WriteFile(version_dir + "/" + kManifestFileName,
                   manifest.SerializeAsString());
}

}  // namespace

bool WriteRawVersion(const std::string& version_dir,
                     const std::string& artifact_bytes) {
  return WriteRawVersionOfKind(version_dir, artifact_bytes,
                               v1::MODEL_KIND_UNSPECIFIED);
}

bool WriteRawVersion(const std::string& version_dir,
                     const v1::ModelArtifact& artifact) {
  return WriteRawVersionOfKind(version_dir, artifact.SerializeAsString(),
                               artifact.kind());
}

}  // namespace metaopt::registry::testing
