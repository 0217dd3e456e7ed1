#include "core/policy/deeppipe_policy.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/policy/policy_factory.h"
#include "core/policy/prepared_fit_test_util.h"
#include "core/registry/model_binding.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::policy {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Two stages over a 60-entry catalogue.
v1::StudySpec CatalogueSpec() {
  v1::StudySpec spec;
  google::protobuf::TextFormat::ParseFromString(
      R"pb(
        search_space {
          stages {
            name: "scaler"
            algorithms { name: "none" }
            algorithms { name: "standard" }
          }
          stages {
            name: "model"
            algorithms {
              name: "svm"
              parameters {
                name: "C"
                float_domain { low: 0.01 high: 100 log: true }
              }
            }
            algorithms {
              name: "knn"
              parameters {
                name: "k"
                int_domain { low: 1 high: 30 }
              }
            }
          }
        }
        objective { goal: GOAL_MINIMIZE }
        algorithm { kind: ALGORITHM_KIND_DEEPPIPE }
        seed: 3
      )pb",
      &spec);
  auto space = space::SearchSpace::Create(spec.search_space());
  space::Rng rng(1);
  absl::flat_hash_set<std::string> keys;
  while (spec.candidates_size() < 60) {
    v1::Configuration c = space->Sample(rng);
    if (keys.insert(space::ConfigurationKey(c)).second) {
      *spec.add_candidates() = c;
    }
  }
  return spec;
}

double Objective(const v1::Configuration& c) {
  double v = c.assignments(0).algorithm() == "standard" ? 0.0 : 0.3;
  const auto& m = c.assignments(1);
  if (m.algorithm() == "svm") {
    v += std::pow(std::log10(m.parameters().at("C").number()) - 0.5, 2);
  } else {
    v += 0.5 + 0.01 * m.parameters().at("k").number();
  }
  return v;
}

v1::Trial Completed(int64_t id, const v1::Configuration& c) {
  v1::Trial t;
  t.set_id(id);
  *t.mutable_configuration() = c;
  t.set_state(v1::TRIAL_STATE_COMPLETED);
  t.set_value(Objective(c));
  return t;
}

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
          [&](const std::string& key) { return held.contains(key); }, best, 1));
  if (rows.size() != 1) return absl::InternalError("no catalogue pick");
  return rows[0];
}

// A "meta-learned" registry model: a seeded network with a portfolio of the
// first three catalogue entries; task-conditioned on `task_features` when
// given (with a non-zero mean head).
std::shared_ptr<const registry::LoadedModel> MetaModel(
    const v1::StudySpec& spec,
    surrogate::FeatureScaler task_features = surrogate::FeatureScaler(),
    const surrogate::DeepPipeArchitecture& architecture =
        surrogate::DeepPipeArchitecture()) {
  auto network = surrogate::DeepPipeModel::Create(
      spec.search_space(), architecture, 11, std::move(task_features));
  if (network.ok() && network->conditioned()) {
    Eigen::VectorXd params = network->parameters();
    const int z = network->embedding_dim();
    // A mean head that dominates the posterior (a strong meta-learned prior).
    for (int i = 0; i < z; ++i) {
      params[network->num_network_parameters() - z + i] = i % 2 ? 40.0 : -40.0;
    }
    EXPECT_TRUE(network->set_parameters(params).ok());
  }
  EXPECT_TRUE(network.ok()) << network.status();
  v1::ModelArtifact artifact;
  artifact.set_format_version(1);
  *artifact.mutable_search_space() = spec.search_space();
  network->ToArtifact(&artifact);
  for (int i = 0; i < 3; ++i) {
    if (i < spec.candidates_size())
      *artifact.add_portfolio() = spec.candidates(i);
  }
  auto space = space::SearchSpace::Create(spec.search_space());
  return registry::LoadedModel::Create("dp", 1, artifact, v1::ModelManifest(),
                                       *std::move(space), absl::UnixEpoch())
      .value();
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
  EXPECT_THAT(registry::CheckModelKind(algorithm, v1::MODEL_KIND_PMF),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("MODEL_KIND_PMF")));
  EXPECT_TRUE(
      registry::CheckModelKind(algorithm, v1::MODEL_KIND_DEEPPIPE).ok());
  EXPECT_TRUE(registry::AutoBindsModel(algorithm, v1::MODEL_KIND_DEEPPIPE));
  EXPECT_FALSE(registry::AutoBindsModel(algorithm, v1::MODEL_KIND_PORTFOLIO));
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

// ---- Partial binding ----

// The catalogue spec's space with C and k narrowed, C on a linear scale and
// its catalogue restricted to the entries inside the narrowed ranges.
v1::StudySpec NarrowedSpec(const v1::StudySpec& full) {
  v1::StudySpec spec = full;
  v1::SearchSpace& space = *spec.mutable_search_space();
  v1::FloatDomain* c = space.mutable_stages(1)
                           ->mutable_algorithms(0)
                           ->mutable_parameters(0)
                           ->mutable_float_domain();
  c->set_low(0.1);
  c->set_high(50);
  c->set_log(false);
  space.mutable_stages(1)
      ->mutable_algorithms(1)
      ->mutable_parameters(0)
      ->mutable_int_domain()
      ->set_high(25);
  auto narrowed = space::SearchSpace::Create(space);
  EXPECT_TRUE(narrowed.ok()) << narrowed.status();
  spec.clear_candidates();
  for (const v1::Configuration& entry : full.candidates()) {
    if (narrowed->Canonicalize(entry, "c").ok()) *spec.add_candidates() = entry;
  }
  return spec;
}

// The keys of `trials` configurations a study of `spec` bound to `model`
// suggests one at a time, each observed at Objective, applying policy updates.
std::vector<std::string> RunKeys(
    const v1::StudySpec& spec,
    std::shared_ptr<const registry::LoadedModel> model, int trials_to_run) {
  auto space = space::SearchSpace::Create(spec.search_space());
  auto created = CreatePolicy(spec, std::nullopt, model);
  EXPECT_TRUE(created.ok()) << created.status();
  if (!created.ok()) return {};
  std::shared_ptr<const Policy> policy = *created;
  std::vector<v1::Trial> trials;
  StudyView view{&spec, &*space, &trials};
  std::vector<std::string> keys;
  space::Rng rng(spec.seed());
  for (int t = 0; t < trials_to_run; ++t) {
    auto result = policy->Suggest(view, 1, rng);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok() || result->configurations.empty()) break;
    if (result->update.has_value()) policy = result->update->policy;
    keys.push_back(space::ConfigurationKey(result->configurations[0]));
    trials.push_back(Completed(t + 1, result->configurations[0]));
  }
  return keys;
}

// Narrowed ranges and another log flag change nothing where the catalogue is
// the same: the network reads every value in the model's own scale. The
// same for Mosaic's DeepPipe surrogate, which used to feed the study's
// encoding to the model's network.
TEST(DeepPipePartialBindingTest, NarrowedRangesSuggestAsTheModelsOwnSpace) {
  const v1::StudySpec narrowed = NarrowedSpec(CatalogueSpec());
  v1::StudySpec same = narrowed;
  *same.mutable_search_space() = CatalogueSpec().search_space();
  ASSERT_GT(narrowed.candidates_size(), 30);
  auto model = MetaModel(same);
  for (bool mosaic : {false, true}) {
    v1::StudySpec a = same;
    v1::StudySpec b = narrowed;
    if (mosaic) {
      for (v1::StudySpec* spec : {&a, &b}) {
        spec->mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_MOSAIC);
        spec->mutable_algorithm()->mutable_mosaic()->set_surrogate(
            v1::MOSAIC_SURROGATE_DEEPPIPE);
      }
    }
    const std::vector<std::string> keys_a = RunKeys(a, model, 14);
    const std::vector<std::string> keys_b = RunKeys(b, model, 14);
    ASSERT_EQ(keys_a.size(), 14u) << "mosaic " << mosaic;
    EXPECT_EQ(keys_a, keys_b) << "mosaic " << mosaic;
  }
}

// A study stored before partial binding checked ranges may be wider than its
// model; it still loads, reading its values in the model's space.
TEST(DeepPipePartialBindingTest, StoredStudyWiderThanItsModelStillLoads) {
  v1::StudySpec spec = CatalogueSpec();
  auto model = MetaModel(NarrowedSpec(spec));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto policy, DeepPipePolicy::Create(spec, std::nullopt, model));
  EXPECT_TRUE(policy->meta_learned());
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_MOSAIC);
  spec.mutable_algorithm()->mutable_mosaic()->set_surrogate(
      v1::MOSAIC_SURROGATE_DEEPPIPE);
  METAOPT_EXPECT_OK(CreatePolicy(spec, std::nullopt, model).status());
}

// The catalogue spec without knn: the model a study adding knn back binds
// to. One encoder layer, so the new algorithm gets its own encoder.
std::shared_ptr<const registry::LoadedModel> ModelWithoutKnn() {
  v1::StudySpec without = CatalogueSpec();
  without.mutable_search_space()
      ->mutable_stages(1)
      ->mutable_algorithms()
      ->RemoveLast();
  without.clear_candidates();
  const v1::StudySpec full = CatalogueSpec();
  for (const v1::Configuration& c : full.candidates()) {
    if (c.assignments(1).algorithm() == "svm") *without.add_candidates() = c;
  }
  surrogate::DeepPipeArchitecture architecture;
  architecture.encoder_layers = 1;
  architecture.width_factor = 4;
  return MetaModel(without, surrogate::FeatureScaler(), architecture);
}

TEST(DeepPipePartialBindingTest, NewAlgorithmGetsAnEncoderTrainedOnTheStudy) {
  const v1::StudySpec spec = CatalogueSpec();
  auto space = space::SearchSpace::Create(spec.search_space());
  auto model = ModelWithoutKnn();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto created, DeepPipePolicy::Create(spec, std::nullopt, model));
  std::shared_ptr<const DeepPipePolicy> policy = created;
  EXPECT_TRUE(policy->meta_learned());
  EXPECT_EQ(policy->model().num_new_encoders(), 1);
  const Eigen::VectorXd base = policy->model().parameters();
  std::vector<v1::Trial> trials;
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(2);
  // The initial design (5 trials): 2 portfolio entries (svm only), the
  // pairwise covering part (new_algorithm_covering_design = 2), then one knn
  // probe.
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult design,
                               policy->Suggest(view, 5, rng));
  // The first n suggestions of `result` are the portfolio's first n.
  auto expect_portfolio_start = [&](const SuggestResult& result, int n) {
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(space::ConfigurationKey(result.configurations[i]),
                space::ConfigurationKey(model->artifact.portfolio(i)));
    }
  };
  ASSERT_EQ(design.configurations.size(), 5u);
  expect_portfolio_start(design, 2);
  EXPECT_EQ(design.configurations[4].assignments(1).algorithm(), "knn");
  const std::vector<v1::Configuration> covering =
      PairCoveringPicks(spec, *space,
                        {design.configurations[0], design.configurations[1],
                         design.configurations[4]},
                        2, spec.seed() + 7);
  ASSERT_EQ(covering.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(space::ConfigurationKey(design.configurations[2 + i]),
              space::ConfigurationKey(covering[i]));
  }
  EXPECT_EQ(design.source, "deeppipe/portfolio");
  // Without the covering part: the whole portfolio (3 entries), then the
  // probe (and a random fill: the study has no observation yet).
  DeepPipePolicyOptions portfolio_only;
  portfolio_only.new_algorithm_covering_design = 0;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto without_covering,
      DeepPipePolicy::Create(spec, std::nullopt, model, portfolio_only));
  space::Rng unused(2);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult portfolio_design,
                               without_covering->Suggest(view, 5, unused));
  ASSERT_GE(portfolio_design.configurations.size(), 4u);
  expect_portfolio_start(portfolio_design, 3);
  EXPECT_EQ(portfolio_design.configurations[3].assignments(1).algorithm(),
            "knn");
  for (const v1::Configuration& c : design.configurations) {
    trials.push_back(Completed(trials.size() + 1, c));
  }
  // The first EI step trains the new encoder and persists it.
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult next,
                               policy->Suggest(view, 1, rng));
  ASSERT_TRUE(next.update.has_value());
  v1::PolicyState stored;
  ASSERT_TRUE(stored.ParseFromString(next.update->state));
  EXPECT_EQ(stored.deeppipe().network_parameters_size(),
            policy->model().num_network_parameters());
  EXPECT_EQ(stored.deeppipe().fitted_observations(),
            static_cast<int64_t>(trials.size()));
  auto updated =
      std::dynamic_pointer_cast<const DeepPipePolicy>(next.update->policy);
  ASSERT_NE(updated, nullptr);
  const Eigen::VectorXd fitted = updated->model().parameters();
  EXPECT_NE(fitted, base);
  // A reopened study has the same surrogate and suggests the same.
  METAOPT_ASSERT_OK_AND_ASSIGN(auto reopened,
                               CreatePolicy(spec, next.update->state, model));
  auto reopened_deeppipe =
      std::dynamic_pointer_cast<const DeepPipePolicy>(reopened);
  ASSERT_NE(reopened_deeppipe, nullptr);
  EXPECT_EQ(reopened_deeppipe->model().parameters(), fitted);
  trials.push_back(Completed(trials.size() + 1, next.configurations[0]));
  space::Rng a(8), b(8);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult from_updated,
                               updated->Suggest(view, 1, a));
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult from_reopened,
                               reopened->Suggest(view, 1, b));
  EXPECT_EQ(space::ConfigurationKey(from_updated.configurations[0]),
            space::ConfigurationKey(from_reopened.configurations[0]));
}

// The default ensemble (PlainGpEnsemble::kNewAlgorithms) applies to a study
// that adds an algorithm to its model: with a network that cannot tell
// pipelines apart, it suggests what kAlways suggests, not the deep kernel's
// pick.
TEST(DeepPipePartialBindingTest, NewAlgorithmStudyWeighsThePlainGpByDefault) {
  const v1::StudySpec spec = CatalogueSpec();
  auto space = space::SearchSpace::Create(spec.search_space());
  auto without_knn = ModelWithoutKnn();
  surrogate::DeepPipeModel blind = *without_knn->servable.deeppipe;
  Eigen::VectorXd params = blind.parameters();
  params.head(blind.num_network_parameters()).setZero();
  METAOPT_ASSERT_OK(blind.set_parameters(params));
  v1::ModelArtifact artifact = without_knn->artifact;
  blind.ToArtifact(&artifact);
  auto model_space =
      space::SearchSpace::Create(without_knn->artifact.search_space());
  ASSERT_TRUE(model_space.ok()) << model_space.status();
  auto model =
      registry::LoadedModel::Create("dp", 1, artifact, v1::ModelManifest(),
                                    *std::move(model_space), absl::UnixEpoch())
          .value();

  std::vector<v1::Trial> trials;
  for (int i = 0; i < 15; ++i)
    trials.push_back(Completed(i + 1, spec.candidates(i)));
  StudyView view{&spec, &*space, &trials};
  auto pick = [&](DeepPipePolicyOptions::PlainGpEnsemble ensemble) {
    DeepPipePolicyOptions options;
    options.plain_gp_ensemble = ensemble;
    auto policy = DeepPipePolicy::Create(spec, std::nullopt, model, options);
    if (!policy.ok()) return policy.status().ToString();
    EXPECT_EQ((*policy)->model().num_new_encoders(), 1);
    space::Rng rng(4);
    auto result = (*policy)->Suggest(view, 1, rng);
    if (!result.ok() || result->configurations.size() != 1) {
      return std::string("no pick");
    }
    return space::ConfigurationKey(result->configurations[0]);
  };
  using Ensemble = DeepPipePolicyOptions::PlainGpEnsemble;
  const std::string by_default =
      pick(DeepPipePolicyOptions().plain_gp_ensemble);
  EXPECT_EQ(by_default, pick(Ensemble::kAlways));
  EXPECT_NE(by_default, pick(Ensemble::kNever));
}

TEST(DeepPipePartialBindingTest, MosaicRefusesANewAlgorithm) {
  v1::StudySpec spec = CatalogueSpec();
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_MOSAIC);
  spec.mutable_algorithm()->mutable_mosaic()->set_surrogate(
      v1::MOSAIC_SURROGATE_DEEPPIPE);
  EXPECT_THAT(CreatePolicy(spec, std::nullopt, ModelWithoutKnn()),
              testing::StatusIs(absl::StatusCode::kFailedPrecondition,
                                HasSubstr("it adds algorithm model/knn")));
}

TEST(DeepPipePartialBindingTest, FullFineTuneTrainsOnlyTheNewEncoders) {
  const v1::StudySpec spec = CatalogueSpec();
  auto space = space::SearchSpace::Create(spec.search_space());
  auto model = ModelWithoutKnn();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto policy, DeepPipePolicy::Create(spec, std::nullopt, model));
  std::vector<v1::Trial> trials;
  for (int i = 0; i < 20; ++i)
    trials.push_back(Completed(i + 1, spec.candidates(i)));
  StudyView view{&spec, &*space, &trials};
  FineTuneOptions options;
  options.scope = v1::FINE_TUNE_SCOPE_FULL;
  options.steps = 40;
  METAOPT_ASSERT_OK_AND_ASSIGN(FineTuneResult tuned,
                               policy->FineTune(view, options));
  EXPECT_LT(tuned.loss_after, tuned.loss_before);
  auto after =
      std::dynamic_pointer_cast<const DeepPipePolicy>(tuned.update.policy);
  ASSERT_NE(after, nullptr);
  const surrogate::DeepPipeModel& before_model = policy->model();
  const Eigen::VectorXd before = before_model.parameters();
  const Eigen::VectorXd now = after->model().parameters();
  // Layout: encoders scaler/none, scaler/standard, model/svm, model/knn (new),
  // then the aggregator. Everything before knn's encoder and after it up to
  // the kernel is frozen.
  const space::EncodingLayout& layout = before_model.encoder().layout();
  ASSERT_EQ(layout.blocks.size(), 4u);
  // The aggregator and known encoders: compare through embeddings of svm
  // configurations (knn's encoder never sees them).
  std::vector<v1::Configuration> svm;
  for (const v1::Configuration& c : spec.candidates()) {
    if (c.assignments(1).algorithm() == "svm") svm.push_back(c);
  }
  const Eigen::MatrixXd X = before_model.encoder().EncodeBatch(svm);
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd z_before, before_model.Embed(X));
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd z_after,
                               after->model().Embed(X));
  EXPECT_EQ(z_before, z_after);
  const int net = before_model.num_network_parameters();
  EXPECT_NE(before.head(net), now.head(net));  // knn's encoder moved
}

int ExpectPreparedEqualsInline(std::shared_ptr<const Policy> policy,
                               const v1::StudySpec& spec, int trials,
                               int count) {
  return prepared_fit_test::ExpectPreparedEqualsInline(
      std::move(policy), spec, trials, count, Completed);
}

TEST(DeepPipePreparedFitTest, MetaLearnedCatalogue) {
  const v1::StudySpec spec = CatalogueSpec();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto policy, CreatePolicy(spec, std::nullopt, MetaModel(spec)));
  EXPECT_TRUE(policy->PreparesFits());
  EXPECT_GE(ExpectPreparedEqualsInline(policy, spec, 14, 1), 8);
  EXPECT_GE(ExpectPreparedEqualsInline(policy, spec, 14, 2), 4);
}

TEST(DeepPipePreparedFitTest, MetaLearnedContinuous) {
  v1::StudySpec spec = CatalogueSpec();
  const auto model = MetaModel(spec);
  spec.clear_candidates();
  METAOPT_ASSERT_OK_AND_ASSIGN(auto policy,
                               CreatePolicy(spec, std::nullopt, model));
  EXPECT_GE(ExpectPreparedEqualsInline(policy, spec, 10, 1), 4);
}

TEST(DeepPipePreparedFitTest, ScratchNetworkPersistsTheSameState) {
  const v1::StudySpec spec = CatalogueSpec();
  DeepPipePolicyOptions options;
  options.scratch_steps = 10;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const Policy> policy,
      DeepPipePolicy::Create(spec, std::nullopt, nullptr, options));
  EXPECT_GE(ExpectPreparedEqualsInline(policy, spec, 10, 1), 4);
}

// The schedule of kernel fine-tunes: every count up to 1 / growth, then
// geometric; every count for growth 0.
TEST(DeepPipeKernelScheduleTest, FineTuneCountsFollowTheSchedule) {
  EXPECT_EQ(KernelFineTuneCount(0, 0.1, 1), 0);
  EXPECT_EQ(KernelFineTuneCount(-3, 0.1, 1), 0);
  for (int64_t n = 1; n <= 60; ++n)
    EXPECT_EQ(KernelFineTuneCount(n, 0.0, 1), n);
  const std::vector<int64_t> points = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                       11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                                       22, 24, 26, 28, 30, 33, 36, 39, 42, 46,
                                       50, 55, 60, 66, 72, 79, 86, 94, 103};
  for (int64_t n = 1; n < 103; ++n) {
    const int64_t want =
        *std::prev(std::upper_bound(points.begin(), points.end(), n));
    EXPECT_EQ(KernelFineTuneCount(n, 0.1, 1), want) << n;
  }
  EXPECT_EQ(KernelFineTuneCount(103, 0.1, 1), 103);
  EXPECT_EQ(KernelFineTuneCount(27, 0.5, 1), 19);  // 1 2 3 4 6 9 13 19 28
  EXPECT_EQ(KernelFineTuneCount(28, 0.5, 1), 28);
  // From 64 observations on (the default): every count below.
  for (int64_t n = 1; n <= 64; ++n)
    EXPECT_EQ(KernelFineTuneCount(n, 0.1, 64), n);
  EXPECT_EQ(KernelFineTuneCount(69, 0.1, 64), 64);  // 64 70 77 84 92 101
  EXPECT_EQ(KernelFineTuneCount(70, 0.1, 64), 70);
  EXPECT_EQ(KernelFineTuneCount(100, 0.1, 64), 92);
  // Large studies: a few dozen fine-tunes, not one per observation.
  int fine_tunes = 0;
  for (int64_t n = 1; n <= 10000; ++n) {
    if (KernelFineTuneCount(n, 0.1, 1) == n) ++fine_tunes;
  }
  EXPECT_LT(fine_tunes, 90);
  for (const double growth : {-0.1, std::numeric_limits<double>::infinity(),
                              std::numeric_limits<double>::quiet_NaN()}) {
    DeepPipePolicyOptions options;
    options.kernel_fine_tune_growth = growth;
    const v1::StudySpec spec = CatalogueSpec();
    EXPECT_EQ(
        DeepPipePolicy::Create(spec, std::nullopt, MetaModel(spec), options)
            .status()
            .code(),
        absl::StatusCode::kInvalidArgument)
        << growth;
  }
  DeepPipePolicyOptions options;
  options.kernel_fine_tune_from = 0;
  const v1::StudySpec spec = CatalogueSpec();
  EXPECT_EQ(DeepPipePolicy::Create(spec, std::nullopt, MetaModel(spec), options)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// A schedule that small tests reach: fine-tunes at 1 2 3 4 6 9 13 19 28 ...
DeepPipePolicyOptions FineTuneOften() {
  DeepPipePolicyOptions options;
  options.kernel_fine_tune_growth = 0.5;
  options.kernel_fine_tune_from = 1;
  return options;
}

// A policy that keeps its scheduled fine-tune (its Suggests' updates applied)
// suggests exactly what a policy created from the stored state at every step
// does (a study unloaded and loaded again, or a restarted server): the fit
// reads the prefix its schedule names, whoever computes it. Only Suggests at
// a new scheduled count fine-tune (and return an update); the stored state
// never changes.
TEST(DeepPipeKernelScheduleTest, KeptFitsSuggestAsAReloadedStudy) {
  const v1::StudySpec spec = CatalogueSpec();
  auto space = space::SearchSpace::Create(spec.search_space());
  const auto model = MetaModel(spec);
  const DeepPipePolicyOptions options = FineTuneOften();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const Policy> kept,
      DeepPipePolicy::Create(spec, std::nullopt, model, options));
  v1::PolicyState initial;
  *initial.mutable_deeppipe() = v1::DeepPipePolicyState();
  std::vector<v1::Trial> trials;
  StudyView view{&spec, &*space, &trials};
  int64_t last_count = 0;
  int updates = 0;
  for (int step = 0; step < 22; ++step) {
    const int64_t n = static_cast<int64_t>(trials.size());
    METAOPT_ASSERT_OK_AND_ASSIGN(
        std::shared_ptr<const Policy> reloaded,
        DeepPipePolicy::Create(spec, initial.deeppipe(), model, options));
    space::Rng a(100 + step), b(100 + step);
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult got, kept->Suggest(view, 1, a));
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult want,
                                 reloaded->Suggest(view, 1, b));
    ASSERT_EQ(got.configurations.size(), 1u);
    ASSERT_EQ(want.configurations.size(), 1u);
    EXPECT_EQ(space::ConfigurationKey(got.configurations[0]),
              space::ConfigurationKey(want.configurations[0]))
        << "step " << step;
    EXPECT_EQ(got.source, want.source);
    if (got.source.find("ei") != std::string::npos) {
      const int64_t count = KernelFineTuneCount(n, 0.5, 1);
      EXPECT_EQ(got.update.has_value(), count != last_count) << "n " << n;
      last_count = count;
    }
    if (got.update.has_value()) {
      ++updates;
      EXPECT_EQ(got.update->state, initial.SerializeAsString());
      kept = got.update->policy;
    }
    trials.push_back(Completed(step + 1, got.configurations[0]));
  }
  // EI from n = 3 (the portfolio's three entries): fine-tunes at 3, 4, 6, 9,
  // 13 and 19 of 19 EI Suggests.
  EXPECT_EQ(updates, 6);
}

// An earlier observation that changed (a trial completed out of order comes
// before later ones) makes the kept fit stale: it is fine-tuned again on the
// new prefix, as a reloaded study would.
TEST(DeepPipeKernelScheduleTest, ChangedPrefixFineTunesAgain) {
  const v1::StudySpec spec = CatalogueSpec();
  auto space = space::SearchSpace::Create(spec.search_space());
  const auto model = MetaModel(spec);
  const DeepPipePolicyOptions options = FineTuneOften();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const Policy> fresh,
      DeepPipePolicy::Create(spec, std::nullopt, model, options));
  std::vector<v1::Trial> trials;
  for (int i = 0; i < 10; ++i) {
    trials.push_back(Completed(i + 1, spec.candidates(5 * i)));
  }
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(1);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult first,
                               fresh->Suggest(view, 1, rng));
  ASSERT_TRUE(first.update.has_value());
  const std::shared_ptr<const Policy> kept = first.update->policy;
  space::Rng same(2);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult reused,
                               kept->Suggest(view, 1, same));
  EXPECT_FALSE(reused.update.has_value());
  trials[0].set_value(trials[0].value() + 5.0);
  space::Rng a(3), b(3);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult got, kept->Suggest(view, 1, a));
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult want, fresh->Suggest(view, 1, b));
  EXPECT_TRUE(got.update.has_value());
  EXPECT_EQ(space::ConfigurationKey(got.configurations[0]),
            space::ConfigurationKey(want.configurations[0]));
}

// The running policy's embedded catalogue keeps the screen's kernel between
// Suggests (gp::CatalogueKernelCache); a restarted server recomputes it. Past
// surrogate::kScreeningMinPoints observations, across the scheduled
// fine-tunes (a new embedded catalogue each), sequential and in pairs, both
// suggest the same.
TEST(DeepPipeKernelScheduleTest, RestoredPolicySuggestsWhatTheRunningOneDoes) {
  v1::StudySpec spec = CatalogueSpec();
  const auto model = MetaModel(spec);
  auto space = space::SearchSpace::Create(spec.search_space());
  space::Rng rng(9);
  absl::flat_hash_set<std::string> keys;
  for (const v1::Configuration& c : spec.candidates()) {
    keys.insert(space::ConfigurationKey(c));
  }
  while (spec.candidates_size() < 300) {
    v1::Configuration c = space->Sample(rng);
    if (keys.insert(space::ConfigurationKey(c)).second) {
      *spec.add_candidates() = c;
    }
  }
  auto restore = [&](const std::optional<std::string>& state) {
    return *CreatePolicy(spec, state, model);
  };
  for (int count : {1, 2}) {
    METAOPT_ASSERT_OK_AND_ASSIGN(auto policy,
                                 CreatePolicy(spec, std::nullopt, model));
    prepared_fit_test::ExpectRestoredEqualsRunning(policy, spec, 80, count,
                                                   Completed, restore);
  }
}

TEST(DeepPipePreparedFitTest, ScheduledFineTunesPrepareAsInline) {
  const v1::StudySpec spec = CatalogueSpec();
  const DeepPipePolicyOptions options = FineTuneOften();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const Policy> policy,
      DeepPipePolicy::Create(spec, std::nullopt, MetaModel(spec), options));
  EXPECT_GE(ExpectPreparedEqualsInline(policy, spec, 24, 1), 15);
  EXPECT_GE(ExpectPreparedEqualsInline(policy, spec, 24, 3), 5);
}

// Three stages of two parameterless algorithms (a, b), all 8 pipelines in the
// catalogue; the design holds (a, a, a). The first pick chooses b in at least
// two stages (the pipelines adding all three stage pairs); each later pick
// adds the most pairs still missing, and 5 picks cover all 12 pairs (greedy
// needs 4 or 5 here, depending on the ties). Equal seeds give equal picks.
TEST(PairCoveringPicksTest, GreedilyCoversTheCrossStagePairs) {
  v1::StudySpec spec;
  for (int s = 0; s < 3; ++s) {
    v1::Stage* stage = spec.mutable_search_space()->add_stages();
    stage->set_name(absl::StrCat("s", s));
    stage->add_algorithms()->set_name("a");
    stage->add_algorithms()->set_name("b");
  }
  auto pipeline = [](int bits) {
    v1::Configuration c;
    for (int s = 0; s < 3; ++s) {
      v1::Assignment* a = c.add_assignments();
      a->set_stage(absl::StrCat("s", s));
      a->set_algorithm((bits >> (2 - s)) & 1 ? "b" : "a");
    }
    return c;
  };
  for (int bits = 0; bits < 8; ++bits) *spec.add_candidates() = pipeline(bits);
  METAOPT_ASSERT_OK_AND_ASSIGN(space::SearchSpace space,
                               space::SearchSpace::Create(spec.search_space()));
  auto pairs = [](const v1::Configuration& c) {
    std::set<std::string> out;
    for (int s = 0; s < 3; ++s) {
      for (int t = s + 1; t < 3; ++t) {
        out.insert(absl::StrCat(s, c.assignments(s).algorithm(), t,
                                c.assignments(t).algorithm()));
      }
    }
    return out;
  };
  const std::vector<v1::Configuration> design = {pipeline(0)};
  const std::vector<v1::Configuration> picks =
      PairCoveringPicks(spec, space, design, 5, 11);
  ASSERT_EQ(picks.size(), 5u);
  int first_a = 0;
  for (const v1::Assignment& a : picks[0].assignments()) {
    first_a += a.algorithm() == "a";
  }
  EXPECT_LE(first_a, 1);
  std::set<std::string> covered = pairs(design[0]);
  for (const v1::Configuration& pick : picks) {
    // No pipeline adds more missing pairs than the pick.
    auto added = [&](const v1::Configuration& c) {
      int n = 0;
      for (const std::string& p : pairs(c)) n += !covered.count(p);
      return n;
    };
    for (const v1::Configuration& c : spec.candidates()) {
      EXPECT_LE(added(c), added(pick));
    }
    for (const std::string& p : pairs(pick)) covered.insert(p);
  }
  EXPECT_EQ(covered.size(), 12u);
  const std::vector<v1::Configuration> again =
      PairCoveringPicks(spec, space, design, 5, 11);
  for (size_t i = 0; i < picks.size(); ++i) {
    EXPECT_EQ(space::ConfigurationKey(again[i]),
              space::ConfigurationKey(picks[i]));
  }
}

}  // namespace
}  // namespace metaopt::policy
