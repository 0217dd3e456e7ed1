#include "core/policy/grosi_policy.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "tests/testutil/synthetic_grosi.h"
#include "core/policy/policy_factory.h"
#include "core/space/search_space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::policy {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// One model trained on the two-family data, shared by every test.
class GrosiPolicyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto artifact = train::testing::TwoFamilyGrosiArtifact();
    ASSERT_TRUE(artifact.ok()) << artifact.status();
    auto space = space::SearchSpace::Create(artifact->search_space());
    ASSERT_TRUE(space.ok()) << space.status();
    model_ = new std::shared_ptr<const registry::LoadedModel>(
        registry::LoadedModel::Create("two-family-grosi", 1, *artifact,
                                      v1::ModelManifest(), *space, absl::Now())
            .value());
  }
  static void TearDownTestSuite() { delete model_; }

  // A catalogue study of the 21 points with meta-feature f = `f`.
  static v1::StudySpec Spec(double f, bool catalogue = true) {
    v1::StudySpec spec = metaopt::testing::CatalogueSpec(catalogue ? 21 : 0);
    spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GROSI);
    (*spec.mutable_dataset_features())["f"] = f;
    (*spec.mutable_dataset_features())["g"] = 0.0;
    return spec;
  }

  static double X(const v1::Configuration& c) {
    return c.assignments(0).parameters().at("x").number();
  }

  // Suggests one at a time and observes (x - center)^2, `trials` times.
  static std::vector<v1::Trial> Run(const Policy& policy,
                                    const v1::StudySpec& spec, double center,
                                    int trials, int batch,
                                    std::vector<std::string>* sources) {
    auto space = space::SearchSpace::Create(spec.search_space());
    std::vector<v1::Trial> out;
    for (int round = 0; static_cast<int>(out.size()) < trials; ++round) {
      space::Rng rng(100 + round);
      StudyView view{&spec, &*space, &out};
      auto result = policy.Suggest(view, batch, rng);
      EXPECT_TRUE(result.ok()) << result.status();
      if (!result.ok() || result->configurations.empty()) break;
      for (const v1::Configuration& c : result->configurations) {
        v1::Trial trial;
        trial.set_id(static_cast<int64_t>(out.size()) + 1);
        *trial.mutable_configuration() = c;
        trial.set_state(v1::TRIAL_STATE_COMPLETED);
        trial.set_value((X(c) - center) * (X(c) - center));
        out.push_back(trial);
        if (sources != nullptr) sources->push_back(result->source);
      }
    }
    return out;
  }

  static std::shared_ptr<const registry::LoadedModel>* model_;
};

std::shared_ptr<const registry::LoadedModel>* GrosiPolicyTest::model_ = nullptr;

TEST_F(GrosiPolicyTest, ZeroShotPicksDependOnTheDatasetFeatures) {
  for (const double f : {-1.0, 1.0}) {
    METAOPT_ASSERT_OK_AND_ASSIGN(auto policy,
                                 GrosiPolicy::Create(Spec(f), *model_));
    const v1::StudySpec spec = Spec(f);
    auto space = space::SearchSpace::Create(spec.search_space());
    std::vector<v1::Trial> none;
    StudyView view{&spec, &*space, &none};
    space::Rng rng(1);
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult result,
                                 policy->Suggest(view, 3, rng));
    ASSERT_EQ(result.configurations.size(), 3u);
    EXPECT_EQ(result.source, "grosi/zero-shot");
    for (const v1::Configuration& c : result.configurations) {
      if (f > 0) {
        EXPECT_GT(X(c), 0.6);
      } else {
        EXPECT_LT(X(c), 0.4);
      }
    }
    EXPECT_THAT(policy->imputed_features(), ::testing::ElementsAre("h"));
  }
}

TEST_F(GrosiPolicyTest, SequentialRunNeverRepeatsAndFindsTheOptimum) {
  const v1::StudySpec spec = Spec(1.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, GrosiPolicy::Create(spec, *model_));
  std::vector<std::string> sources;
  const std::vector<v1::Trial> trials =
      Run(*policy, spec, 0.85, 21, /*batch=*/2, &sources);
  ASSERT_EQ(trials.size(), 21u);  // the whole catalogue, then exhausted
  std::set<std::string> keys;
  for (const v1::Trial& t : trials) {
    EXPECT_TRUE(keys.insert(space::ConfigurationKey(t.configuration())).second)
        << "repeated: " << t.configuration().ShortDebugString();
  }
  EXPECT_EQ(sources.front(), "grosi/zero-shot");
  EXPECT_EQ(sources.back(), "grosi/refit-top10");
  double best = 1.0;
  for (int i = 0; i < 5; ++i) best = std::min(best, trials[i].value());
  EXPECT_LT(best, 0.01);
}

TEST_F(GrosiPolicyTest, HeldConfigurationsAreNotSuggested) {
  const v1::StudySpec spec = Spec(-1.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, GrosiPolicy::Create(spec, *model_));
  auto space = space::SearchSpace::Create(spec.search_space());
  // The zero-shot favourites are held by pending (ACTIVE) trials.
  std::vector<v1::Trial> trials;
  for (int i = 0; i < 3; ++i) {
    v1::Trial trial;
    trial.set_id(i + 1);
    *trial.mutable_configuration() =
        spec.candidates(policy->zero_shot_order()[i]);
    trial.set_state(v1::TRIAL_STATE_ACTIVE);
    trials.push_back(trial);
  }
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(2);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult result,
                               policy->Suggest(view, 4, rng));
  ASSERT_EQ(result.configurations.size(), 4u);
  std::set<std::string> keys;
  for (const v1::Trial& t : trials) {
    keys.insert(space::ConfigurationKey(t.configuration()));
  }
  for (const v1::Configuration& c : result.configurations) {
    EXPECT_TRUE(keys.insert(space::ConfigurationKey(c)).second)
        << c.ShortDebugString();
  }
  EXPECT_EQ(
      space::ConfigurationKey(result.configurations[0]),
      space::ConfigurationKey(spec.candidates(policy->zero_shot_order()[3])));
}

TEST_F(GrosiPolicyTest, SpaceWithoutCatalogue) {
  const v1::StudySpec spec = Spec(1.0, /*catalogue=*/false);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, GrosiPolicy::Create(spec, *model_));
  EXPECT_TRUE(policy->zero_shot_order().empty());
  std::vector<std::string> sources;
  const std::vector<v1::Trial> trials =
      Run(*policy, spec, 0.85, 8, /*batch=*/1, &sources);
  ASSERT_EQ(trials.size(), 8u);
  EXPECT_GT(X(trials[0].configuration()), 0.6);
  EXPECT_EQ(sources[0], "grosi/zero-shot");
  EXPECT_EQ(sources[7], "grosi/refit-top10");
}

TEST_F(GrosiPolicyTest, DeterministicGivenTheRng) {
  const v1::StudySpec spec = Spec(1.0);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, GrosiPolicy::Create(spec, *model_));
  const auto a = Run(*policy, spec, 0.5, 12, 1, nullptr);
  const auto b = Run(*policy, spec, 0.5, 12, 1, nullptr);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(space::ConfigurationKey(a[i].configuration()),
              space::ConfigurationKey(b[i].configuration()));
  }
}

TEST_F(GrosiPolicyTest, ValidationErrors) {
  v1::StudySpec spec = Spec(1.0);
  spec.clear_dataset_features();
  EXPECT_THAT(GrosiPolicy::Create(spec, *model_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.dataset_features: empty")));
  (*spec.mutable_dataset_features())["unknown"] = 1.0;
  EXPECT_THAT(GrosiPolicy::Create(spec, *model_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("spec.dataset_features"),
                                        HasSubstr("unknown"),
                                        HasSubstr("two-family-grosi@1"))));
  EXPECT_THAT(GrosiPolicy::Create(Spec(1.0), nullptr).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("metaopt-train --kind grosi")));
  v1::ModelArtifact other = (*model_)->artifact;
  other.set_kind(v1::MODEL_KIND_PORTFOLIO);
  auto portfolio =
      registry::LoadedModel::Create("p", 1, other, v1::ModelManifest(),
                                    (*model_)->space, absl::Now())
          .value();
  EXPECT_THAT(GrosiPolicy::Create(Spec(1.0), portfolio).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("MODEL_KIND_PORTFOLIO")));
  // Through the factory, as CreateStudy builds it.
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy,
                               CreatePolicy(Spec(1.0), std::nullopt, *model_));
  EXPECT_EQ(policy->name(), "grosi");
  const v1::StudySpec valid = Spec(1.0);
  auto space = space::SearchSpace::Create(valid.search_space());
  std::vector<v1::Trial> none;
  EXPECT_THAT(policy->FineTune(StudyView{&valid, &*space, &none}, {}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::_));
}

// A Dataset2Vec GROSI model (no engineered meta-features) trained on the
// two-family data's raw samples.
class GrosiD2vPolicyTest : public GrosiPolicyTest {
 protected:
  static void SetUpTestSuite() {
    GrosiPolicyTest::SetUpTestSuite();
    auto artifact = train::testing::TwoFamilyD2vArtifact();
    ASSERT_TRUE(artifact.ok()) << artifact.status();
    auto space = space::SearchSpace::Create(artifact->search_space());
    ASSERT_TRUE(space.ok()) << space.status();
    d2v_ = new std::shared_ptr<const registry::LoadedModel>(
        registry::LoadedModel::Create("two-family-grosi-d2v", 1, *artifact,
                                      v1::ModelManifest(), *space, absl::Now())
            .value());
  }
  static void TearDownTestSuite() {
    delete d2v_;
    GrosiPolicyTest::TearDownTestSuite();
  }

  // The sample of a held-out task of the family (TwoFamilySamples' rule).
  static v1::DatasetSample Sample(bool right) {
    const meta::MetaDataset data = train::testing::TwoFamilyDataset(0, 0, 2);
    return train::testing::SampleProto(
        train::testing::TwoFamilySamples(data, 99).at(
            data.tasks[right ? 1 : 0].id));
  }

  static v1::StudySpec SampleSpec(bool right) {
    v1::StudySpec spec = metaopt::testing::CatalogueSpec(21);
    spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GROSI);
    *spec.mutable_dataset_sample() = Sample(right);
    return spec;
  }

  static std::vector<double> FirstPicks(const Policy& policy,
                                        const v1::StudySpec& spec) {
    auto space = space::SearchSpace::Create(spec.search_space());
    std::vector<v1::Trial> none;
    StudyView view{&spec, &*space, &none};
    space::Rng rng(1);
    auto result = policy.Suggest(view, 3, rng);
    EXPECT_TRUE(result.ok()) << result.status();
    std::vector<double> xs;
    if (result.ok()) {
      for (const v1::Configuration& c : result->configurations) {
        xs.push_back(X(c));
      }
    }
    return xs;
  }

  static std::shared_ptr<const registry::LoadedModel>* d2v_;
};

std::shared_ptr<const registry::LoadedModel>* GrosiD2vPolicyTest::d2v_ =
    nullptr;

TEST_F(GrosiD2vPolicyTest, ZeroShotPicksDependOnTheRawSample) {
  for (const bool right : {false, true}) {
    const v1::StudySpec spec = SampleSpec(right);
    METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, GrosiPolicy::Create(spec, *d2v_));
    const std::vector<double> xs = FirstPicks(*policy, spec);
    ASSERT_EQ(xs.size(), 3u);
    for (double x : xs) {
      if (right) {
        EXPECT_GT(x, 0.6);
      } else {
        EXPECT_LT(x, 0.4);
      }
    }
    const std::map<std::string, std::string> metadata =
        GrosiStudyMetadata((*d2v_)->artifact, spec);
    EXPECT_EQ(metadata.at("task_conditioning"), "dataset2vec");
    EXPECT_EQ(metadata.at("dataset_sample"), "used");
    EXPECT_EQ(metadata.count("conditioning_imputed_features"), 0u);
  }
}

TEST_F(GrosiD2vPolicyTest, WithoutASampleTheTrainingMeanStandsIn) {
  v1::StudySpec spec = SampleSpec(true);
  spec.clear_dataset_sample();
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, GrosiPolicy::Create(spec, *d2v_));
  EXPECT_EQ(FirstPicks(*policy, spec).size(), 3u);
  const std::map<std::string, std::string> metadata =
      GrosiStudyMetadata((*d2v_)->artifact, spec);
  EXPECT_THAT(metadata.at("dataset_sample"),
              StartsWith("absent: the mean Dataset2Vec output"));
  // Through StudyMetadata, as CreateStudy records it.
  auto space = space::SearchSpace::Create(spec.search_space());
  const auto recorded = StudyMetadata((*d2v_)->artifact, spec, *space);
  EXPECT_EQ(recorded.at("task_conditioning"), "dataset2vec");
}

TEST_F(GrosiD2vPolicyTest, AnEngineeredModelIgnoresTheSample) {
  v1::StudySpec spec = Spec(1.0);
  *spec.mutable_dataset_sample() = Sample(false);  // contradicts f = 1
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy, GrosiPolicy::Create(spec, *model_));
  for (double x : FirstPicks(*policy, spec)) EXPECT_GT(x, 0.6);
  const std::map<std::string, std::string> metadata =
      GrosiStudyMetadata((*model_)->artifact, spec);
  EXPECT_EQ(metadata.at("task_conditioning"), "meta-features");
  EXPECT_THAT(metadata.at("dataset_sample"), StartsWith("ignored"));
  EXPECT_EQ(metadata.at("conditioning_imputed_features"), "h");
  // Without features, the sample cannot stand in for them.
  spec.clear_dataset_features();
  EXPECT_THAT(GrosiPolicy::Create(spec, *model_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("reads no dataset_sample")));
}

}  // namespace
}  // namespace metaopt::policy
