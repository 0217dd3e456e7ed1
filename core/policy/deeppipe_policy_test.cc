// The DeepPipe policy (core/policy/deeppipe_policy.h): a meta-learned or
// scratch network serving a study, fine-tuning, its options, and the ensemble
// with an unlearned GP. Partial binding and the fine-tune schedule have their
// own files.
#include "core/policy/deeppipe_policy.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/common/status_macros.h"
#include "tests/testutil/deeppipe_catalogue_study.h"
#include "core/policy/policy_factory.h"
#include "core/policy/model_binding.h"
#include "core/surrogate/output_head.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::policy {
namespace {

using deeppipe_test::CatalogueSpec;
using deeppipe_test::Completed;
using deeppipe_test::MetaModel;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

// The expected-improvement pick of `surrogate` over the catalogue entries that
// no trial of `view` holds (best observed target `best`): its catalogue row.
absl::StatusOr<int> CatalogueEiPick(const surrogate::Surrogate& surrogate,
                                    const v1::StudySpec& spec,
                                    const space::Encoder& encoder,
                                    const StudyView& view, double best) {
  auto catalogue = acquisition::EncodeCatalogue(spec, encoder);
  HeldConfigurations held(view);
  METAOPT_ASSIGN_OR_RETURN(
      std::vector<int> rows,
      acquisition::MaximizeOverCatalogue(
          surrogate, *catalogue,
          [&](const std::string& key) { return held.contains(key); },
          acquisition::LogExpectedImprovementFunction(best), 1));
  if (rows.size() != 1) return absl::InternalError("no catalogue pick");
  return rows[0];
}

TEST(DeepPipePolicyTest, MetaLearnedStartsFromThePortfolioThenUsesTheModel) {
  const v1::StudySpec spec = CatalogueSpec();
  auto space = space::SearchSpace::Create(spec.search_space());
  auto model = MetaModel(spec);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy,
                               CreatePolicy(spec, std::nullopt, model));
  std::vector<v1::Trial> trials;
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(5);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult first,
                               policy->Suggest(view, 3, rng));
  ASSERT_EQ(first.configurations.size(), 3u);
  EXPECT_EQ(first.source, "deeppipe/portfolio");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(space::ConfigurationKey(first.configurations[i]),
              space::ConfigurationKey(spec.candidates(i)));
    trials.push_back(Completed(i + 1, first.configurations[i]));
  }
  // After the portfolio (3 < initial_trials 5, but the portfolio ran out),
  // EI under the kernel fine-tuned on the three observations.
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult next,
                               policy->Suggest(view, 2, rng));
  ASSERT_EQ(next.configurations.size(), 2u);
  EXPECT_THAT(next.source, HasSubstr("ei"));
  // Suggest-time fine-tuning restarts from the base: pure, the stored state
  // unchanged; the update only carries the fit for the next Suggests.
  ASSERT_TRUE(next.update.has_value());
  v1::PolicyState unchanged;
  *unchanged.mutable_deeppipe() = v1::DeepPipePolicyState();
  EXPECT_EQ(next.update->state, unchanged.SerializeAsString());
  space::Rng a(9), b(9);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult again_a,
                               policy->Suggest(view, 1, a));
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult again_b,
                               policy->Suggest(view, 1, b));
  EXPECT_EQ(space::ConfigurationKey(again_a.configurations[0]),
            space::ConfigurationKey(again_b.configurations[0]));
}

TEST(DeepPipePolicyTest, ConditionedModelReadsTheStudysDatasetFeatures) {
  v1::StudySpec spec = CatalogueSpec();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      surrogate::FeatureScaler features,
      surrogate::FeatureScaler::Create({"log_rows", "n_classes"},
                                       Eigen::Vector2d(8.0, 3.0),
                                       Eigen::Vector2d(2.0, 1.0)));
  auto model = MetaModel(spec, features);
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  // Metadata names the conditioning and the feature that took its mean.
  (*spec.mutable_dataset_features())["log_rows"] = 12.0;
  std::map<std::string, std::string> metadata =
      StudyMetadata(model->artifact, spec, *space);
  EXPECT_EQ(metadata["task_conditioning"], "meta-features");
  EXPECT_EQ(metadata["conditioning_imputed_features"], "n_classes");
  (*spec.mutable_dataset_features())["n_classes"] = 2.0;
  EXPECT_EQ(StudyMetadata(model->artifact, spec, *space)
                .at("conditioning_imputed_features"),
            "none");
  // Only studies whose surrogate is the DeepPipe network are conditioned.
  v1::StudySpec gp_spec = spec;
  gp_spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
  EXPECT_FALSE(StudyMetadata(model->artifact, gp_spec, *space)
                   .count("task_conditioning"));
  EXPECT_FALSE(StudyMetadata(MetaModel(spec)->artifact, spec, *space)
                   .count("task_conditioning"));

  // The same observations, two datasets: the studies' surrogates read their
  // own features (with a mean head this strong, their EI picks differ; a
  // policy that ignored the features would pick the same entry twice), and
  // each pick is deterministic.
  std::vector<v1::Trial> trials;
  for (int i = 0; i < 4; ++i) {
    trials.push_back(Completed(i + 1, spec.candidates(i)));
  }
  v1::StudySpec other = spec;
  (*other.mutable_dataset_features())["log_rows"] = 2.0;
  (*other.mutable_dataset_features())["n_classes"] = 9.0;
  std::vector<std::string> picks;
  // The deep kernel's picks (a random mean head this strong predicts the
  // observations worse than a plain GP would, which the fallback would use).
  DeepPipePolicyOptions deep_only;
  deep_only.plain_gp_ensemble = DeepPipePolicyOptions::PlainGpEnsemble::kNever;
  for (const v1::StudySpec* s : {&spec, &other, &spec}) {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        auto policy,
        DeepPipePolicy::Create(*s, std::nullopt, model, deep_only));
    StudyView view{s, &*space, &trials};
    space::Rng rng(5);
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult next,
                                 policy->Suggest(view, 1, rng));
    ASSERT_EQ(next.configurations.size(), 1u);
    EXPECT_THAT(next.source, HasSubstr("ei"));
    picks.push_back(space::ConfigurationKey(next.configurations[0]));
  }
  EXPECT_NE(picks[0], picks[1]);
  EXPECT_EQ(picks[0], picks[2]);
  // Without features the study is conditioned on the training means.
  v1::StudySpec plain = spec;
  plain.clear_dataset_features();
  EXPECT_EQ(StudyMetadata(model->artifact, plain, *space)
                .at("conditioning_imputed_features"),
            "log_rows,n_classes");
}

// Several objectives and a constraint: the meta-learned surrogate models the
// first objective, GPs on its inputs the second and the constrained metric;
// batches are distinct and never repeat a trial's entry.
TEST(DeepPipePolicyTest, SeveralObjectivesAndAConstraintSuggestByEhvi) {
  v1::StudySpec spec = CatalogueSpec();
  spec.mutable_objective()->set_name("error");
  *spec.add_objectives() = spec.objective();
  v1::Objective* seconds = spec.add_objectives();
  seconds->set_name("seconds");
  seconds->set_goal(v1::GOAL_MINIMIZE);
  v1::Constraint* memory = spec.add_constraints();
  memory->set_metric("memory");
  memory->set_sense(v1::CONSTRAINT_SENSE_AT_MOST);
  memory->set_bound(2);
  auto space = space::SearchSpace::Create(spec.search_space());
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto policy, CreatePolicy(spec, std::nullopt, MetaModel(spec)));
  std::vector<v1::Trial> trials;
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(5);
  std::set<std::string> keys;
  std::string source;
  for (int step = 0; step < 6; ++step) {
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult r,
                                 policy->Suggest(view, 2, rng));
    ASSERT_EQ(r.configurations.size(), 2u);
    source = r.source;
    for (const v1::Configuration& c : r.configurations) {
      EXPECT_TRUE(keys.insert(space::ConfigurationKey(c)).second);
      v1::Trial t = Completed(static_cast<int64_t>(trials.size()) + 1, c);
      const double error = t.value();
      (*t.mutable_metrics())["error"] = error;
      (*t.mutable_metrics())["seconds"] = 1 / (0.1 + error);
      (*t.mutable_metrics())["memory"] = 3 * error;
      t.set_feasible(3 * error <= 2);
      trials.push_back(std::move(t));
    }
  }
  EXPECT_THAT(source, HasSubstr("ehvi"));
}

// MetaModel(spec) with an output head for "seconds" of the given weights
// (one per embedding dimension).
std::shared_ptr<const registry::LoadedModel> WithSecondsHead(
    const v1::StudySpec& spec, const Eigen::VectorXd& weight) {
  v1::ModelArtifact artifact = MetaModel(spec)->artifact;
  surrogate::OutputHead head;
  head.metric = "seconds";
  head.weight = weight;
  head.bias = 0.5;
  for (v1::Tensor& t : surrogate::OutputHeadTensors(head)) {
    *artifact.add_tensors() = std::move(t);
  }
  auto space = space::SearchSpace::Create(spec.search_space());
  return registry::LoadedModel::Create("dp", 2, artifact, v1::ModelManifest(),
                                       *std::move(space), absl::UnixEpoch())
      .value();
}

// Cost-aware transfer: with a head for the further objective "seconds" the
// Pareto step models it around the head's prediction, which changes the
// picks; a misshapen head is refused at creation.
TEST(DeepPipePolicyTest, AnOutputHeadModelsItsFurtherObjective) {
  v1::StudySpec spec = CatalogueSpec();
  spec.mutable_objective()->set_name("error");
  *spec.add_objectives() = spec.objective();
  v1::Objective* seconds = spec.add_objectives();
  seconds->set_name("seconds");
  seconds->set_goal(v1::GOAL_MINIMIZE);
  auto space = space::SearchSpace::Create(spec.search_space());
  const int z = MetaModel(spec)->servable.deeppipe->embedding_dim();
  auto run = [&](std::shared_ptr<const registry::LoadedModel> model) {
    std::vector<std::string> picks;
    auto policy = CreatePolicy(spec, std::nullopt, model);
    EXPECT_TRUE(policy.ok()) << policy.status();
    if (!policy.ok()) return picks;
    std::vector<v1::Trial> trials;
    StudyView view{&spec, &*space, &trials};
    space::Rng rng(5);
    for (int step = 0; step < 8; ++step) {
      auto r = (*policy)->Suggest(view, 1, rng);
      EXPECT_TRUE(r.ok()) << r.status();
      if (!r.ok() || r->configurations.empty()) break;
      v1::Trial t = Completed(static_cast<int64_t>(trials.size()) + 1,
                              r->configurations[0]);
      (*t.mutable_metrics())["error"] = t.value();
      (*t.mutable_metrics())["seconds"] = std::exp(3 * t.value());
      picks.push_back(space::ConfigurationKey(r->configurations[0]));
      trials.push_back(std::move(t));
    }
    return picks;
  };
  const std::vector<std::string> plain = run(MetaModel(spec));
  const std::vector<std::string> headed =
      run(WithSecondsHead(spec, Eigen::VectorXd::LinSpaced(z, -4, 4)));
  ASSERT_EQ(plain.size(), 8u);
  ASSERT_EQ(headed.size(), 8u);
  EXPECT_NE(plain, headed);
  EXPECT_THAT(CreatePolicy(spec, std::nullopt,
                           WithSecondsHead(spec, Eigen::VectorXd::Ones(z + 1)))
                  .status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("output_head/seconds/weight")));
}

TEST(DeepPipePolicyTest, FineTuneLowersTheLossAndPersists) {
  const v1::StudySpec spec = CatalogueSpec();
  auto space = space::SearchSpace::Create(spec.search_space());
  auto model = MetaModel(spec);
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy,
                               CreatePolicy(spec, std::nullopt, model));
  std::vector<v1::Trial> trials;
  StudyView view{&spec, &*space, &trials};
  EXPECT_THAT(policy->FineTune(view, FineTuneOptions()),
              testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                HasSubstr("at least 1")));
  for (int i = 0; i < 12; ++i)
    trials.push_back(Completed(i + 1, spec.candidates(i)));
  for (v1::FineTuneScope scope :
       {v1::FINE_TUNE_SCOPE_KERNEL, v1::FINE_TUNE_SCOPE_FULL}) {
    FineTuneOptions options;
    options.scope = scope;
    options.steps = 50;
    METAOPT_ASSERT_OK_AND_ASSIGN(FineTuneResult tuned,
                                 policy->FineTune(view, options));
    EXPECT_LT(tuned.loss_after, tuned.loss_before);
    EXPECT_GT(tuned.steps_run, 0);
    v1::PolicyState stored;
    ASSERT_TRUE(stored.ParseFromString(tuned.update.state));
    ASSERT_TRUE(stored.has_deeppipe());
    EXPECT_GT(stored.deeppipe().kernel_parameters_size(), 0);
    EXPECT_EQ(stored.deeppipe().network_parameters_size() > 0,
              scope == v1::FINE_TUNE_SCOPE_FULL);
    // Restoring the stored state reproduces the tuned policy's suggestions.
    METAOPT_ASSERT_OK_AND_ASSIGN(auto restored,
                                 CreatePolicy(spec, tuned.update.state, model));
    space::Rng a(4), b(4);
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult from_tuned,
                                 tuned.update.policy->Suggest(view, 2, a));
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult from_restored,
                                 restored->Suggest(view, 2, b));
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(space::ConfigurationKey(from_tuned.configurations[i]),
                space::ConfigurationKey(from_restored.configurations[i]));
    }
  }
}

TEST(DeepPipePolicyTest, ScratchTrainsOnTheStudyAndNeverRepeats) {
  const v1::StudySpec spec = CatalogueSpec();
  auto space = space::SearchSpace::Create(spec.search_space());
  METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const Policy> policy,
                               CreatePolicy(spec, std::nullopt, nullptr));
  std::vector<v1::Trial> trials;
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(2);
  absl::flat_hash_set<std::string> seen;
  bool saw_model = false;
  for (int t = 0; t < 12; ++t) {
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult r,
                                 policy->Suggest(view, 1, rng));
    ASSERT_EQ(r.configurations.size(), 1u);
    if (t < 5) EXPECT_EQ(r.source, "deeppipe/initial-design");
    if (r.source == "deeppipe/ei") {
      saw_model = true;
      ASSERT_TRUE(r.update.has_value());  // the trained network is persisted
      policy = r.update->policy;
    }
    EXPECT_TRUE(
        seen.insert(space::ConfigurationKey(r.configurations[0])).second);
    trials.push_back(Completed(t + 1, r.configurations[0]));
  }
  EXPECT_TRUE(saw_model);
}

TEST(DeepPipePolicyTest, NamedPmfModelIsRejected) {
  v1::AlgorithmSpec algorithm;
  algorithm.set_kind(v1::ALGORITHM_KIND_DEEPPIPE);
  EXPECT_THAT(policy::CheckModelKind(algorithm, v1::MODEL_KIND_PMF),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("MODEL_KIND_PMF")));
  EXPECT_TRUE(
      policy::CheckModelKind(algorithm, v1::MODEL_KIND_DEEPPIPE).ok());
  EXPECT_TRUE(policy::AutoBindsModel(algorithm, v1::MODEL_KIND_DEEPPIPE));
  EXPECT_FALSE(policy::AutoBindsModel(algorithm, v1::MODEL_KIND_PORTFOLIO));
}

TEST(DeepPipePolicyTest, OptionsAreValidatedAndSuggestFitsStopOnSteps) {
  const DeepPipePolicyOptions defaults;
  // No wall-clock limit by default: a loaded machine gives the same fit.
  EXPECT_EQ(defaults.suggest_budget, absl::InfiniteDuration());
  EXPECT_EQ(defaults.scratch_budget, absl::InfiniteDuration());
  const v1::StudySpec spec = CatalogueSpec();
  auto model = MetaModel(spec);
  for (auto change : std::vector<std::function<void(DeepPipePolicyOptions&)>>{
           [](DeepPipePolicyOptions& o) { o.suggest_fit_points = -1; },
           [](DeepPipePolicyOptions& o) { o.suggest_steps = -1; },
           [](DeepPipePolicyOptions& o) { o.kernel_learning_rate = 0; },
           [](DeepPipePolicyOptions& o) { o.ranking.samples = 0; },
           [](DeepPipePolicyOptions& o) { o.ranking.dilution_quantile = 2; },
           [](DeepPipePolicyOptions& o) { o.plain_gp.refit_growth = -1; },
           [](DeepPipePolicyOptions& o) {
             o.suggest_budget = absl::ZeroDuration();
           }}) {
    DeepPipePolicyOptions options;
    change(options);
    EXPECT_THAT(
        DeepPipePolicy::Create(spec, std::nullopt, model, options),
        testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  }
}

// Beyond suggest_fit_points observations the kernel fine-tune reads the
// systematic sample: the suggestion is that of the base model fine-tuned on
// the sample by hand, with the posterior over every observation.
TEST(DeepPipePolicyTest, LargeStudiesFineTuneOnABoundedSample) {
  const v1::StudySpec spec = CatalogueSpec();
  auto space = space::SearchSpace::Create(spec.search_space());
  auto model = MetaModel(spec);
  DeepPipePolicyOptions options;
  options.suggest_fit_points = 10;
  // This test follows the deep kernel.
  options.plain_gp_ensemble = DeepPipePolicyOptions::PlainGpEnsemble::kNever;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto policy, DeepPipePolicy::Create(spec, std::nullopt, model, options));
  std::vector<v1::Trial> trials;
  for (int i = 0; i < 30; ++i) {
    trials.push_back(Completed(i + 1, spec.candidates(i)));
  }
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(4);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult result,
                               policy->Suggest(view, 1, rng));
  ASSERT_EQ(result.configurations.size(), 1u);
  EXPECT_EQ(result.source, "deeppipe/ei");

  const surrogate::DeepPipeModel& base = *model->servable.deeppipe;
  const TrainingData data = CollectTrainingData(view, base.encoder());
  const TrainingData sample = FitSample(data, options.suggest_fit_points);
  surrogate::DeepPipeFineTuneOptions fit;
  fit.max_steps = options.suggest_steps;
  fit.learning_rate = options.kernel_learning_rate;
  METAOPT_ASSERT_OK_AND_ASSIGN(surrogate::DeepPipeFineTuneResult tuned,
                               base.FineTune(sample.X, sample.y, fit));
  METAOPT_ASSERT_OK_AND_ASSIGN(auto posterior,
                               tuned.model.Posterior(data.X, data.y));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      int row, CatalogueEiPick(*posterior, spec, base.encoder(), view,
                               data.y.minCoeff()));
  EXPECT_EQ(space::ConfigurationKey(result.configurations[0]),
            space::ConfigurationKey(spec.candidates(row)));
}

// ---- Model selection: the deep kernel or an unlearned GP ----

// DeepKernelLooPredictions: for each i, the deep kernel's GP conditioned on
// the other points, at point i (noise included), standardised targets.
TEST(DeepPipeEnsembleTest, DeepKernelLooPredictionsLeaveThePointOut) {
  const v1::StudySpec spec = CatalogueSpec();
  auto space = space::SearchSpace::Create(spec.search_space());
  const surrogate::DeepPipeModel model = *MetaModel(spec)->servable.deeppipe;
  std::vector<v1::Trial> trials;
  for (int i = 0; i < 12; ++i)
    trials.push_back(Completed(i + 1, spec.candidates(i)));
  StudyView view{&spec, &*space, &trials};
  const TrainingData data = CollectTrainingData(view, model.encoder());
  METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction loo,
                               DeepKernelLooPredictions(model, data));

  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd Z, model.Embed(data.X));
  const Eigen::VectorXd ys =
      gp::Standardization::FromTargets(data.y).Apply(data.y);
  const Eigen::Index n = ys.size();
  for (Eigen::Index i = 0; i < n; ++i) {
    Eigen::MatrixXd Z_rest(n - 1, Z.cols());
    Eigen::VectorXd y_rest(n - 1);
    for (Eigen::Index j = 0, r = 0; j < n; ++j) {
      if (j == i) continue;
      Z_rest.row(r) = Z.row(j);
      y_rest[r++] = ys[j];
    }
    METAOPT_ASSERT_OK_AND_ASSIGN(
        gp::GpPosterior rest,
        gp::GpPosterior::Create(model.gp(), Z_rest, y_rest,
                                gp::Standardization()));
    METAOPT_ASSERT_OK_AND_ASSIGN(gp::Prediction p, rest.Predict(Z.row(i)));
    EXPECT_NEAR(loo.mean[i], p.mean[0], 1e-6) << i;
    EXPECT_NEAR(loo.variance[i], p.variance[0] + rest.noise_variance(), 1e-6)
        << i;
  }
}

// A "meta-learned" network that maps every configuration to the same
// embedding cannot tell configurations apart, so it ranks the study's
// observations worse than an unlearned GP: the ensemble hands the weight to
// that GP, Suggest maximises EI under the ensemble, and with the ensemble off
// under the deep kernel. The plain GP's fit is persisted.
TEST(DeepPipeEnsembleTest, BlindKernelHandsItsWeightToThePlainGp) {
  const v1::StudySpec spec = CatalogueSpec();
  auto space = space::SearchSpace::Create(spec.search_space());
  auto random_model = MetaModel(spec);
  // A copy: the registry's decoded model stays as it is.
  surrogate::DeepPipeModel blind = *random_model->servable.deeppipe;
  Eigen::VectorXd params = blind.parameters();
  params.head(blind.num_network_parameters()).setZero();
  METAOPT_ASSERT_OK(blind.set_parameters(params));
  v1::ModelArtifact artifact = random_model->artifact;
  blind.ToArtifact(&artifact);
  auto model =
      registry::LoadedModel::Create("dp", 1, artifact, v1::ModelManifest(),
                                    *space, absl::UnixEpoch())
          .value();

  std::vector<v1::Trial> trials;
  for (int i = 0; i < 15; ++i)
    trials.push_back(Completed(i + 1, spec.candidates(i)));
  StudyView view{&spec, &*space, &trials};
  const TrainingData data = CollectTrainingData(view, blind.encoder());
  DeepPipePolicyOptions options;
  options.plain_gp_ensemble = DeepPipePolicyOptions::PlainGpEnsemble::kAlways;
  // The base posterior without a fine-tune (the policy's, steps 0).
  options.suggest_steps = 0;
  METAOPT_ASSERT_OK_AND_ASSIGN(auto deep, blind.Posterior(data.X, data.y));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      PlainGpEnsembleFit weighed,
      EnsembleWithPlainGp(blind, deep, data, data, v1::GpPolicyState(),
                          options));
  EXPECT_GT(weighed.plain_gp_weight, 0.9);
  ASSERT_TRUE(weighed.refitted.has_value());  // the first fit is a full one
  EXPECT_EQ(weighed.refitted->full_fit_observations(), 15);

  // The ensemble's EI pick over the untried catalogue.
  METAOPT_ASSERT_OK_AND_ASSIGN(
      int row, CatalogueEiPick(*weighed.surrogate, spec, blind.encoder(), view,
                               data.y.minCoeff()));

  // The first suggestion of a policy with `o` (rng seed 4), and its update.
  std::optional<PolicyUpdate> update;
  auto pick = [&](const DeepPipePolicyOptions& o) -> std::string {
    auto policy = DeepPipePolicy::Create(spec, std::nullopt, model, o);
    if (!policy.ok()) return policy.status().ToString();
    space::Rng rng(4);
    auto result = (*policy)->Suggest(view, 1, rng);
    if (!result.ok() || result->configurations.size() != 1) return "no pick";
    update = result->update;
    return space::ConfigurationKey(result->configurations[0]);
  };
  const std::string ensemble_pick =
      space::ConfigurationKey(spec.candidates(row));
  EXPECT_EQ(pick(options), ensemble_pick);
  // The plain GP's hyperparameters are the policy state.
  ASSERT_TRUE(update.has_value());
  v1::PolicyState state;
  ASSERT_TRUE(state.ParseFromString(update->state));
  EXPECT_EQ(state.deeppipe().plain_gp().fitted_observations(), 15);
  EXPECT_EQ(state.deeppipe().plain_gp().hyperparameters_size(),
            weighed.refitted->hyperparameters_size());
  // Without the ensemble the blind kernel's posterior is flat: its pick is
  // not the ensemble's, and nothing is persisted (an update only keeps the
  // scheduled kernel fine-tune in its policy, the state unchanged).
  DeepPipePolicyOptions deep_only;
  deep_only.plain_gp_ensemble = DeepPipePolicyOptions::PlainGpEnsemble::kNever;
  update.reset();
  EXPECT_NE(pick(deep_only), ensemble_pick);
  v1::PolicyState unchanged;
  unchanged.mutable_deeppipe();
  if (update.has_value()) {
    EXPECT_EQ(update->state, unchanged.SerializeAsString());
  }
  // By default only studies with new algorithms weigh: this exact binding
  // follows the deep kernel.
  EXPECT_EQ(pick(DeepPipePolicyOptions()), pick(deep_only));
}

}  // namespace
}  // namespace metaopt::policy
