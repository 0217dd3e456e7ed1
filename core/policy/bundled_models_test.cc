// The models committed under models/ (the server's default registry): every
// version loads and verifies, records a training command without machine
// paths, and every DeepPipe and FSBO model serves a study over its space from
// the first Suggest (portfolio, then EI under the meta-learned kernel).
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "core/policy/deeppipe_policy.h"
#include "core/policy/policy_factory.h"
#include "core/registry/artifact.h"
#include "core/space/search_space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::policy {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Every complete version directory under the project's models/.
std::vector<fs::path> BundledVersions() {
  const char* root = std::getenv("METAOPT_SOURCE_DIR");
  std::vector<fs::path> versions;
  if (root == nullptr) return versions;
  for (const auto& model : fs::directory_iterator(fs::path(root) / "models")) {
    if (!model.is_directory()) continue;
    for (const auto& version : fs::directory_iterator(model.path())) {
      if (registry::ParseVersionDirName(version.path().filename().string())) {
        versions.push_back(version.path());
      }
    }
  }
  return versions;
}

TEST(BundledModelsTest, EveryVersionLoadsAndRecordsAPortableCommand) {
  const std::vector<fs::path> versions = BundledVersions();
  if (versions.empty()) GTEST_SKIP() << "METAOPT_SOURCE_DIR/models not found";
  for (const fs::path& dir : versions) {
    SCOPED_TRACE(dir.string());
    METAOPT_ASSERT_OK_AND_ASSIGN(auto model,
                                 registry::ReadModelVersion(dir.string()));
    const std::string& command =
        model->artifact.provenance().command_line();
    EXPECT_FALSE(command.empty());
    for (absl::string_view word : absl::StrSplit(command, ' ')) {
      EXPECT_FALSE(absl::StartsWith(word, "/"))
          << "absolute path in the training command: " << word;
    }
  }
}

TEST(BundledModelsTest, DeepPipeModelsServeTheirSpaceFromTheFirstSuggest) {
  const std::vector<fs::path> versions = BundledVersions();
  if (versions.empty()) GTEST_SKIP() << "METAOPT_SOURCE_DIR/models not found";
  int deeppipe_models = 0;
  int fsbo_models = 0;
  for (const fs::path& dir : versions) {
    SCOPED_TRACE(dir.string());
    METAOPT_ASSERT_OK_AND_ASSIGN(auto model,
                                 registry::ReadModelVersion(dir.string()));
    const bool fsbo = model->artifact.kind() == v1::MODEL_KIND_FSBO;
    if (model->artifact.kind() != v1::MODEL_KIND_DEEPPIPE && !fsbo) continue;
    ++(fsbo ? fsbo_models : deeppipe_models);
    v1::StudySpec spec;
    *spec.mutable_search_space() = model->artifact.search_space();
    *spec.mutable_objective() = model->artifact.objective();
    spec.mutable_algorithm()->set_kind(fsbo ? v1::ALGORITHM_KIND_FSBO
                                            : v1::ALGORITHM_KIND_DEEPPIPE);
    METAOPT_ASSERT_OK_AND_ASSIGN(auto policy,
                                 CreatePolicy(spec, std::nullopt, model));
    const auto* deeppipe = dynamic_cast<const DeepPipePolicy*>(policy.get());
    ASSERT_NE(deeppipe, nullptr);
    EXPECT_TRUE(deeppipe->meta_learned());
    ASSERT_GT(model->artifact.portfolio_size(), 0);

    std::vector<v1::Trial> trials;
    StudyView view{&spec, &model->space, &trials};
    space::Rng rng(1);
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult first,
                                 policy->Suggest(view, 1, rng));
    ASSERT_EQ(first.configurations.size(), 1u);
    EXPECT_EQ(first.source, fsbo ? "fsbo/portfolio" : "deeppipe/portfolio");
    if (fsbo) EXPECT_EQ(model->artifact.portfolio_size(), 5);
    EXPECT_EQ(space::ConfigurationKey(first.configurations[0]),
              space::ConfigurationKey(model->artifact.portfolio(0)));

    // With the initial design observed, EI under the meta-learned kernel
    // proposes a valid configuration of the space.
    spec.mutable_algorithm()->set_initial_trials(1);
    METAOPT_ASSERT_OK_AND_ASSIGN(policy,
                                 CreatePolicy(spec, std::nullopt, model));
    v1::Trial observed;
    observed.set_id(1);
    *observed.mutable_configuration() = first.configurations[0];
    observed.set_state(v1::TRIAL_STATE_COMPLETED);
    observed.set_value(0.5);
    trials.push_back(observed);
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult next,
                                 policy->Suggest(view, 1, rng));
    ASSERT_EQ(next.configurations.size(), 1u);
    EXPECT_THAT(next.source, HasSubstr("ei"));
    METAOPT_EXPECT_OK(model->space.Canonicalize(next.configurations[0], "configuration").status());
  }
  EXPECT_GE(deeppipe_models, 3) << "oboe, sklearn-pipelines, hpobench-mlp";
  EXPECT_GE(fsbo_models, 2) << "adaboost, hpobench-mlp";
}

}  // namespace
}  // namespace metaopt::policy
