// ALGORITHM_KIND_FSBO: its descriptor (binding, objectives), the policy built
// over a MODEL_KIND_FSBO model (the portfolio first, then the whole deep
// kernel fine-tuned on the observations at every iteration) and its errors.
#include <memory>
#include <vector>

#include "core/common/status_macros.h"
#include "core/policy/deeppipe_policy.h"
#include "core/policy/model_binding.h"
#include "core/policy/policy_factory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/deeppipe_catalogue_study.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::policy {
namespace {

using deeppipe_test::CatalogueSpec;
using deeppipe_test::Completed;
using deeppipe_test::MetaModel;
using ::metaopt::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

v1::StudySpec FsboSpec() {
  v1::StudySpec spec = CatalogueSpec();
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_FSBO);
  return spec;
}

std::shared_ptr<const registry::LoadedModel> FsboModel(
    const v1::StudySpec& spec) {
  return MetaModel(spec, surrogate::FeatureScaler(),
                   surrogate::FsboArchitecture());
}

v1::AlgorithmSpec Fsbo() {
  v1::AlgorithmSpec algorithm;
  algorithm.set_kind(v1::ALGORITHM_KIND_FSBO);
  return algorithm;
}

TEST(FsboDescriptorTest,
     BindsFsboModelsOnlyAndOthersDoNotBindThemByThemselves) {
  METAOPT_ASSERT_OK_AND_ASSIGN(const AlgorithmKindDescriptor* d,
                               FindAlgorithmKind(v1::ALGORITHM_KIND_FSBO));
  EXPECT_TRUE(d->models_encoded_space);
  EXPECT_TRUE(AutoBindsModel(Fsbo(), v1::MODEL_KIND_FSBO));
  EXPECT_TRUE(CheckModelKind(Fsbo(), v1::MODEL_KIND_FSBO).ok());
  for (v1::ModelKind other : {v1::MODEL_KIND_PORTFOLIO, v1::MODEL_KIND_DEEPPIPE,
                              v1::MODEL_KIND_PMF, v1::MODEL_KIND_GROSI}) {
    EXPECT_FALSE(AutoBindsModel(Fsbo(), other)) << other;
    EXPECT_THAT(CheckModelKind(Fsbo(), other),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("spec.algorithm.model"),
                               HasSubstr(v1::ModelKind_Name(other)),
                               HasSubstr("ALGORITHM_KIND_FSBO"))));
  }
  // Its 5-setting portfolio is not the data's default one: other kinds take
  // an FSBO model only by name.
  for (v1::AlgorithmKind kind :
       {v1::ALGORITHM_KIND_GP, v1::ALGORITHM_KIND_DEEPPIPE,
        v1::ALGORITHM_KIND_MOSAIC, v1::ALGORITHM_KIND_RANDOM}) {
    v1::AlgorithmSpec algorithm;
    algorithm.set_kind(kind);
    EXPECT_FALSE(AutoBindsModel(algorithm, v1::MODEL_KIND_FSBO)) << kind;
  }
}

TEST(FsboDescriptorTest, RejectsSeveralObjectivesAndConstraints) {
  v1::StudySpec spec = FsboSpec();
  EXPECT_TRUE(CheckObjectivesSupported(spec).ok());
  v1::StudySpec two = spec;
  two.add_objectives()->set_name("a");
  two.add_objectives()->set_name("b");
  EXPECT_THAT(CheckObjectivesSupported(two),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("spec.objectives"),
                             HasSubstr("ALGORITHM_KIND_FSBO"))));
  v1::StudySpec constrained = spec;
  constrained.add_constraints()->set_metric("m");
  EXPECT_THAT(CheckObjectivesSupported(constrained),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("spec.constraints"),
                             HasSubstr("ALGORITHM_KIND_FSBO"))));
}

TEST(FsboPolicyTest, NeedsAnFsboModel) {
  const v1::StudySpec spec = FsboSpec();
  EXPECT_THAT(CreatePolicy(spec, std::nullopt, nullptr),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("MODEL_KIND_FSBO"),
                             HasSubstr("metaopt-train --kind fsbo"))));
  // A DeepPipe model (Matérn kernel, standardised targets) is not FSBO's.
  EXPECT_THAT(CreatePolicy(spec, std::nullopt, MetaModel(spec)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("MODEL_KIND_DEEPPIPE")));
}

TEST(FsboPolicyTest,
     PortfolioFirstThenTheWholeDeepKernelFineTunedEveryIteration) {
  v1::StudySpec spec = FsboSpec();
  spec.mutable_algorithm()->set_initial_trials(3);  // The model's 3 entries.
  auto space = space::SearchSpace::Create(spec.search_space());
  const auto model = FsboModel(spec);
  ASSERT_EQ(model->artifact.kind(), v1::MODEL_KIND_FSBO);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const Policy> policy,
                               CreatePolicy(spec, std::nullopt, model));
  EXPECT_EQ(policy->name(), "fsbo");
  const Eigen::VectorXd base =
      dynamic_cast<const DeepPipePolicy&>(*policy).model().parameters();
  const int net = dynamic_cast<const DeepPipePolicy&>(*policy)
                      .model()
                      .num_network_parameters();

  std::vector<v1::Trial> trials;
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(5);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult first,
                               policy->Suggest(view, 3, rng));
  ASSERT_EQ(first.configurations.size(), 3u);
  EXPECT_EQ(first.source, "fsbo/portfolio");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(space::ConfigurationKey(first.configurations[i]),
              space::ConfigurationKey(spec.candidates(i)));
    trials.push_back(Completed(i + 1, first.configurations[i]));
  }

  Eigen::VectorXd previous;
  for (int iteration = 0; iteration < 3; ++iteration) {
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult next,
                                 policy->Suggest(view, 1, rng));
    ASSERT_EQ(next.configurations.size(), 1u);
    EXPECT_THAT(next.source, HasSubstr("fsbo/ei"));
    // Every Suggest with a new observation fine-tunes (restarting from the
    // meta-learned parameters: the stored state stays empty) ...
    ASSERT_TRUE(next.update.has_value()) << iteration;
    v1::PolicyState unchanged;
    *unchanged.mutable_deeppipe() = v1::DeepPipePolicyState();
    EXPECT_EQ(next.update->state, unchanged.SerializeAsString());
    const auto& updated =
        dynamic_cast<const DeepPipePolicy&>(*next.update->policy);
    ASSERT_NE(updated.fitted_model(), nullptr);
    EXPECT_EQ(updated.fitted_observations(),
              static_cast<int64_t>(trials.size()));
    const Eigen::VectorXd fitted = updated.fitted_model()->parameters();
    // ... the whole deep kernel: the network moved, not only the kernel ...
    EXPECT_GT((fitted.head(net) - base.head(net)).cwiseAbs().maxCoeff(), 1e-6);
    EXPECT_GT((fitted.tail(fitted.size() - net) - base.tail(base.size() - net))
                  .cwiseAbs()
                  .maxCoeff(),
              1e-6);
    // ... with the mean held at 0 (FSBO's zero-mean GP) ...
    const auto& gp = updated.fitted_model()->gp();
    EXPECT_EQ(gp.hyperparameters()[gp.mean_index()], 0.0);
    // ... and on the new observations: each iteration's fit differs.
    if (previous.size() > 0) {
      EXPECT_GT((fitted - previous).cwiseAbs().maxCoeff(), 1e-9) << iteration;
    }
    previous = fitted;
    trials.push_back(Completed(static_cast<int64_t>(trials.size()) + 1,
                               next.configurations[0]));
    policy = next.update->policy;
  }
  // Pure: a policy rebuilt from the stored state suggests the same.
  METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const Policy> reloaded,
                               CreatePolicy(spec, std::nullopt, model));
  space::Rng a(9), b(9);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult again_a,
                               policy->Suggest(view, 1, a));
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult again_b,
                               reloaded->Suggest(view, 1, b));
  EXPECT_EQ(space::ConfigurationKey(again_a.configurations[0]),
            space::ConfigurationKey(again_b.configurations[0]));
}

TEST(FsboPolicyTest, KernelScopeWouldLeaveTheNetworkAlone) {
  // The same study under the kernel-scope schedule (DeepPipe's) moves no
  // network parameter: what the previous test sees is FSBO's FULL scope.
  v1::StudySpec spec = FsboSpec();
  spec.mutable_algorithm()->set_initial_trials(3);
  auto space = space::SearchSpace::Create(spec.search_space());
  const auto model = FsboModel(spec);
  DeepPipePolicyOptions options = FsboPolicyOptions();
  options.suggest_scope = surrogate::FineTuneScope::kKernel;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto policy, DeepPipePolicy::Create(spec, std::nullopt, model, options));
  std::vector<v1::Trial> trials;
  for (int i = 0; i < 4; ++i)
    trials.push_back(Completed(i + 1, spec.candidates(i)));
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(5);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult next,
                               policy->Suggest(view, 1, rng));
  ASSERT_TRUE(next.update.has_value());
  const auto& updated =
      dynamic_cast<const DeepPipePolicy&>(*next.update->policy);
  ASSERT_NE(updated.fitted_model(), nullptr);
  const int net = policy->model().num_network_parameters();
  EXPECT_EQ(updated.fitted_model()->parameters().head(net),
            policy->model().parameters().head(net));
}

}  // namespace
}  // namespace metaopt::policy
