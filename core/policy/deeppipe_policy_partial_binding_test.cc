// DeepPipe's partial binding: a study over a model's space with narrowed
// ranges, other log flags or new algorithms (fresh encoders trained on the
// study, the covering design of their pairs).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/policy/deeppipe_policy.h"
#include "tests/testutil/deeppipe_catalogue_study.h"
#include "core/policy/policy_factory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::policy {
namespace {

using deeppipe_test::CatalogueSpec;
using deeppipe_test::Completed;
using deeppipe_test::MetaModel;
using ::testing::HasSubstr;

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
