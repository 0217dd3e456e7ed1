#include "core/policy/pmf_policy.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "tests/testutil/synthetic_pmf.h"
#include "core/policy/policy_factory.h"
#include "core/space/search_space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::policy {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// One trained synthetic model shared by every test (training takes ~0.3 s).
class PmfPolicyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    data_ = new meta::MetaDataset(train::testing::SyntheticPmfDataset());
    auto artifact = train::testing::TrainSyntheticPmfArtifact();
    ASSERT_TRUE(artifact.ok()) << artifact.status();
    auto space = space::SearchSpace::Create(artifact->search_space());
    ASSERT_TRUE(space.ok()) << space.status();
    model_ = new std::shared_ptr<const registry::LoadedModel>(
        registry::LoadedModel::Create("synthetic-pmf", 1, *artifact,
                                      v1::ModelManifest(), *space, absl::Now())
            .value());
  }
  static void TearDownTestSuite() {
    delete data_;
    delete model_;
  }

  static const v1::ModelArtifact& artifact() { return (*model_)->artifact; }

  v1::StudySpec Spec(const meta::Task* features_of = nullptr) const {
    v1::StudySpec spec;
    *spec.mutable_search_space() = data_->space;
    *spec.mutable_objective() = data_->objective;
    spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_PMF);
    if (features_of != nullptr) {
      for (const auto& [name, value] : features_of->metafeatures) {
        (*spec.mutable_dataset_features())[name] = value;
      }
    }
    return spec;
  }

  const meta::Task& TestTask(int i) const {
    return *(*data_->TasksOfSplit("test"))[i];
  }

  // y of `config` on `task` (which evaluates every catalogue entry).
  static double ValueOn(const meta::Task& task,
                        const v1::Configuration& config) {
    const std::string key = space::ConfigurationKey(config);
    for (size_t i = 0; i < task.configurations.size(); ++i) {
      if (space::ConfigurationKey(task.configurations[i]) == key) {
        return task.y[i];
      }
    }
    ADD_FAILURE() << "not in the task: " << config.ShortDebugString();
    return 0;
  }

  static meta::MetaDataset* data_;
  static std::shared_ptr<const registry::LoadedModel>* model_;
};

meta::MetaDataset* PmfPolicyTest::data_ = nullptr;
std::shared_ptr<const registry::LoadedModel>* PmfPolicyTest::model_ = nullptr;

// Drives a policy like the engine: suggests `batch` at a time, observes the
// suggestions on `task`, until `trials` trials or the catalogue runs out.
struct Replay {
  std::vector<v1::Trial> trials;
  std::vector<std::string> sources;
};

Replay ReplayOf(const Policy& policy, const v1::StudySpec& spec,
                const meta::Task& task, int trials, int batch) {
  auto space = space::SearchSpace::Create(spec.search_space());
  Replay replay;
  space::Rng rng(3);
  while (static_cast<int>(replay.trials.size()) < trials) {
    StudyView view{&spec, &*space, &replay.trials};
    auto result = policy.Suggest(view, batch, rng);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok() || result->configurations.empty()) break;
    for (const v1::Configuration& c : result->configurations) {
      v1::Trial trial;
      trial.set_id(static_cast<int64_t>(replay.trials.size()) + 1);
      *trial.mutable_configuration() = c;
      trial.set_state(v1::TRIAL_STATE_ACTIVE);
      replay.trials.push_back(trial);
      replay.sources.push_back(result->source);
    }
    for (v1::Trial& trial : replay.trials) {
      if (trial.state() != v1::TRIAL_STATE_ACTIVE) continue;
      const std::string key = space::ConfigurationKey(trial.configuration());
      for (size_t i = 0; i < task.configurations.size(); ++i) {
        if (space::ConfigurationKey(task.configurations[i]) == key) {
          trial.set_state(v1::TRIAL_STATE_COMPLETED);
          trial.set_value(task.y[i]);
        }
      }
    }
  }
  return replay;
}

TEST_F(PmfPolicyTest, NeedsAPmfModel) {
  EXPECT_THAT(PmfPolicy::Create(Spec(), std::nullopt, nullptr).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("PMF needs a registry model over this space; "
                                 "none matches")));
  EXPECT_THAT(CreatePolicy(Spec(), std::nullopt, nullptr).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("PMF needs a registry model")));
  v1::ModelArtifact portfolio = artifact();
  portfolio.set_kind(v1::MODEL_KIND_PORTFOLIO);
  auto other =
      registry::LoadedModel::Create("other", 2, portfolio, v1::ModelManifest(),
                                    (*model_)->space, absl::Now())
          .value();
  EXPECT_THAT(PmfPolicy::Create(Spec(), std::nullopt, other).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("other@2 is MODEL_KIND_PORTFOLIO")));
}

TEST_F(PmfPolicyTest, CandidatesMustBeASubsetOfTheCatalogue) {
  v1::StudySpec spec = Spec();
  *spec.add_candidates() = artifact().catalogue(3);
  *spec.add_candidates() = artifact().catalogue(0);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const PmfPolicy> policy,
                               PmfPolicy::Create(spec, std::nullopt, *model_));
  EXPECT_EQ(policy->candidates(), (std::vector<int>{3, 0}));
  v1::Configuration outside = artifact().catalogue(1);
  outside.mutable_assignments(0)->mutable_parameters()->at("x").set_number(
      0.123456);
  *spec.add_candidates() = outside;
  EXPECT_THAT(PmfPolicy::Create(spec, std::nullopt, *model_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.candidates[2]: {assignments { stage: "
                                 "\"model\" algorithm: \"m\"")));
  EXPECT_THAT(PmfPolicy::Create(spec, std::nullopt, *model_).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not in the catalogue of model "
                                 "synthetic-pmf@1 (40 entries)")));
}

TEST_F(PmfPolicyTest, NearestTrainingDatasetsByStandardisedL1) {
  // A training task's own features: it is the nearest.
  const v1::DatasetFeatures& seventh = artifact().training_features(7);
  EXPECT_EQ(NearestTrainingDatasets(artifact(), seventh.features(), 3)[0], 7);
  // Brute force over the standardised features.
  google::protobuf::Map<std::string, double> query;
  query["w0"] = 0.3;
  query["w1"] = -1.2;
  query["n"] = 1000 + 500 * 0.3;
  query["unknown"] = 5.0;  // not in the training data: ignored
  std::vector<std::pair<double, int>> expected;
  const auto& norm = artifact().normalization();
  for (int t = 0; t < artifact().training_features_size(); ++t) {
    double d = 0;
    for (const std::string name : {"w0", "w1", "n"}) {
      const double sd = norm.at("feature_std/" + name);
      const double mean = norm.at("feature_mean/" + name);
      d += std::abs(
          (artifact().training_features(t).features().at(name) - mean) / sd -
          (query.at(name) - mean) / sd);
    }
    expected.emplace_back(d, t);
  }
  std::sort(expected.begin(), expected.end());
  const std::vector<int> nearest =
      NearestTrainingDatasets(artifact(), query, 5);
  ASSERT_EQ(nearest.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(nearest[i], expected[i].second);
  // Only an unknown feature: no neighbours.
  google::protobuf::Map<std::string, double> unknown;
  unknown["unknown"] = 1.0;
  EXPECT_TRUE(NearestTrainingDatasets(artifact(), unknown, 5).empty());
}

TEST_F(PmfPolicyTest, WarmStartFromTheNearestDatasetsOrThePortfolio) {
  const meta::Task& test0 = TestTask(0);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const PmfPolicy> with_features,
      PmfPolicy::Create(Spec(&test0), std::nullopt, *model_));
  EXPECT_EQ(with_features->warm_start_source(), "warm-start-l1");
  ASSERT_EQ(with_features->warm_start().size(), 40u);  // a full order
  // The first warm-start entry is the one with the best mean position on the
  // 5 nearest training datasets.
  const std::vector<int> nearest =
      NearestTrainingDatasets(artifact(), Spec(&test0).dataset_features(), 5);
  ASSERT_NE((*model_)->servable.pmf_ranks, nullptr);
  const std::vector<int> order =
      RankOrder(*(*model_)->servable.pmf_ranks, nearest);
  EXPECT_EQ(with_features->warm_start()[0], order[0]);
  const v1::Tensor& top = artifact().tensors(artifact().tensors_size() - 2);
  ASSERT_EQ(top.name(), "training_top_entries");
  bool on_a_list = false;
  for (int t : nearest) {
    for (int k = 0; k < top.shape(1); ++k) {
      on_a_list |= top.values(t * top.shape(1) + k) == order[0];
    }
  }
  EXPECT_TRUE(on_a_list);

  // Without features: the portfolio first.
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const PmfPolicy> without,
      PmfPolicy::Create(Spec(), std::nullopt, *model_));
  EXPECT_EQ(without->warm_start_source(), "portfolio");
  for (int i = 0; i < artifact().portfolio_size(); ++i) {
    EXPECT_EQ(
        space::ConfigurationKey(artifact().catalogue(without->warm_start()[i])),
        space::ConfigurationKey(artifact().portfolio(i)));
  }

  const Replay replay = ReplayOf(*with_features, Spec(&test0), test0, 8, 1);
  ASSERT_EQ(replay.trials.size(), 8u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(replay.sources[i], "pmf/warm-start-l1");
    EXPECT_EQ(space::ConfigurationKey(replay.trials[i].configuration()),
              space::ConfigurationKey(
                  artifact().catalogue(with_features->warm_start()[i])));
  }
  EXPECT_EQ(replay.sources[5], "pmf/ei");
  EXPECT_EQ(replay.sources[7], "pmf/ei");
}

TEST_F(PmfPolicyTest,
       SuggestionsAreUntriedCatalogueEntriesUnderBatchesAndPending) {
  const meta::Task& task = TestTask(1);
  for (int batch : {1, 3, 7}) {
    v1::StudySpec spec = Spec(&task);
    METAOPT_ASSERT_OK_AND_ASSIGN(
        std::shared_ptr<const PmfPolicy> policy,
        PmfPolicy::Create(spec, std::nullopt, *model_));
    const Replay replay = ReplayOf(*policy, spec, task, 100, batch);
    // Every catalogue entry exactly once, then nothing.
    ASSERT_EQ(replay.trials.size(), 40u) << "batch " << batch;
    std::set<std::string> keys;
    for (const v1::Trial& trial : replay.trials) {
      keys.insert(space::ConfigurationKey(trial.configuration()));
    }
    EXPECT_EQ(keys.size(), 40u);
  }
  // Pending (ACTIVE) and failed trials hold their entries: a batch after
  // them avoids them, and its members differ.
  v1::StudySpec spec = Spec(&task);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const PmfPolicy> policy,
                               PmfPolicy::Create(spec, std::nullopt, *model_));
  std::vector<v1::Trial> trials;
  for (int n : {0, 1, 2, 3, 4, 5}) {
    v1::Trial trial;
    *trial.mutable_configuration() = artifact().catalogue(n);
    trial.set_state(n < 3   ? v1::TRIAL_STATE_COMPLETED
                    : n < 5 ? v1::TRIAL_STATE_ACTIVE
                            : v1::TRIAL_STATE_FAILED);
    if (n < 3) trial.set_value(ValueOn(task, trial.configuration()));
    trials.push_back(trial);
  }
  auto space = space::SearchSpace::Create(spec.search_space());
  StudyView view{&spec, &*space, &trials};
  space::Rng rng(1);
  METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult result,
                               policy->Suggest(view, 10, rng));
  EXPECT_EQ(result.source, "pmf/ei");
  ASSERT_EQ(result.configurations.size(), 10u);
  std::set<std::string> keys;
  for (int n = 0; n < 6; ++n) {
    keys.insert(space::ConfigurationKey(artifact().catalogue(n)));
  }
  for (const v1::Configuration& c : result.configurations) {
    EXPECT_TRUE(keys.insert(space::ConfigurationKey(c)).second)
        << c.ShortDebugString();
  }
  // A candidate subset: only those are suggested.
  v1::StudySpec subset = Spec();
  for (int n : {10, 20, 30}) *subset.add_candidates() = artifact().catalogue(n);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      policy, PmfPolicy::Create(subset, std::nullopt, *model_));
  const Replay replay = ReplayOf(*policy, subset, task, 10, 2);
  ASSERT_EQ(replay.trials.size(), 3u);
}

TEST_F(PmfPolicyTest, FindsGoodEntriesFasterThanTheirAverage) {
  // Over the test tasks, the best of 8 PMF picks is far better than the
  // expected best of 8 random picks.
  double pmf_regret = 0, random_regret = 0;
  int tasks = 0;
  const std::vector<const meta::Task*> test = *data_->TasksOfSplit("test");
  for (const meta::Task* task : test) {
    v1::StudySpec spec = Spec(task);
    METAOPT_ASSERT_OK_AND_ASSIGN(
        std::shared_ptr<const PmfPolicy> policy,
        PmfPolicy::Create(spec, std::nullopt, *model_));
    const Replay replay = ReplayOf(*policy, spec, *task, 8, 1);
    std::vector<double> y = task->y;
    std::sort(y.begin(), y.end());
    double best = 1e9;
    for (const v1::Trial& t : replay.trials) best = std::min(best, t.value());
    const double range = y.back() - y.front();
    pmf_regret += (best - y.front()) / range;
    // E[min of 8 draws without replacement] from the sorted values.
    const int n = static_cast<int>(y.size());
    double expected = 0, p_rest = 1;
    for (int i = 0; i < n && p_rest > 0; ++i) {
      // P(min is y[i]) = P(all 8 from [i, n)) - P(all 8 from [i + 1, n)).
      auto all_from = [&](int j) {
        double p = 1;
        for (int k = 0; k < 8; ++k)
          p *= std::max(0.0, double(n - j - k) / (n - k));
        return p;
      };
      expected += (all_from(i) - all_from(i + 1)) * y[i];
      p_rest = all_from(i + 1);
    }
    random_regret += (expected - y.front()) / range;
    ++tasks;
  }
  EXPECT_LT(pmf_regret / tasks, 0.5 * random_regret / tasks);
}

// With a second objective (here a made-up cost that grows with the entry's
// value: a trade-off) and a constraint, PMF suggests by EHVI over its latent
// rows: distinct untried entries, the sources say so.
TEST_F(PmfPolicyTest, SeveralObjectivesSuggestByHypervolumeImprovement) {
  const meta::Task& task = TestTask(0);
  v1::StudySpec spec = Spec();
  *spec.add_objectives() = spec.objective();
  v1::Objective* cost = spec.add_objectives();
  cost->set_name("cost");
  cost->set_goal(v1::GOAL_MINIMIZE);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      std::shared_ptr<const PmfPolicy> policy,
      PmfPolicy::Create(spec, std::nullopt, *model_));
  auto space = space::SearchSpace::Create(spec.search_space());
  ASSERT_TRUE(space.ok());
  std::vector<v1::Trial> trials;
  space::Rng rng(5);
  std::vector<std::string> sources;
  for (int step = 0; step < 8; ++step) {
    StudyView view{&spec, &*space, &trials};
    METAOPT_ASSERT_OK_AND_ASSIGN(SuggestResult result,
                                 policy->Suggest(view, 2, rng));
    ASSERT_EQ(result.configurations.size(), 2u);
    sources.push_back(result.source);
    for (const v1::Configuration& c : result.configurations) {
      v1::Trial trial;
      trial.set_id(static_cast<int64_t>(trials.size()) + 1);
      *trial.mutable_configuration() = c;
      trial.set_state(v1::TRIAL_STATE_COMPLETED);
      const double y = ValueOn(task, c);
      trial.set_value(y);
      (*trial.mutable_metrics())[spec.objective().name()] = y;
      (*trial.mutable_metrics())["cost"] = std::exp(3 * y);
      trials.push_back(trial);
    }
  }
  EXPECT_THAT(sources.back(), ::testing::EndsWith("/ehvi"))
      << sources.back();
  std::set<std::string> keys;
  for (const v1::Trial& t : trials) {
    EXPECT_TRUE(keys.insert(space::ConfigurationKey(t.configuration())).second);
  }
}

TEST_F(PmfPolicyTest, FineTuneRefitsTheKernelAndIsPersisted) {
  const meta::Task& task = TestTask(2);
  v1::StudySpec spec = Spec(&task);
  METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const PmfPolicy> policy,
                               PmfPolicy::Create(spec, std::nullopt, *model_));
  auto space = space::SearchSpace::Create(spec.search_space());
  const Replay one = ReplayOf(*policy, spec, task, 1, 1);
  StudyView view{&spec, &*space, &one.trials};
  EXPECT_THAT(policy->FineTune(view, FineTuneOptions()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("at least 2 completed trials")));
  const Replay replay = ReplayOf(*policy, spec, task, 12, 1);
  view.trials = &replay.trials;
  METAOPT_ASSERT_OK_AND_ASSIGN(FineTuneResult tuned,
                               policy->FineTune(view, FineTuneOptions()));
  EXPECT_LT(tuned.loss_after, tuned.loss_before);
  EXPECT_GT(tuned.steps_run, 0);
  v1::PolicyState state;
  ASSERT_TRUE(state.ParseFromString(tuned.update.state));
  ASSERT_TRUE(state.has_pmf());
  EXPECT_EQ(state.pmf().log_kernel_params_size(), 3 + 2);
  EXPECT_EQ(state.pmf().fitted_observations(), 12);
  // The stored state restores the fine-tuned policy (through the factory).
  METAOPT_ASSERT_OK_AND_ASSIGN(std::shared_ptr<const Policy> restored,
                               CreatePolicy(spec, tuned.update.state, *model_));
  const auto* pmf = dynamic_cast<const PmfPolicy*>(restored.get());
  ASSERT_NE(pmf, nullptr);
  EXPECT_EQ(pmf->state().log_kernel_params_size(), 5);
  EXPECT_DOUBLE_EQ(pmf->state().log_kernel_params(0),
                   state.pmf().log_kernel_params(0));
  // Fine-tuning again from the tuned policy starts where it ended.
  METAOPT_ASSERT_OK_AND_ASSIGN(FineTuneResult again,
                               pmf->FineTune(view, FineTuneOptions()));
  EXPECT_NEAR(again.loss_before, tuned.loss_after, 1e-9);
  // A state that does not fit the model is DATA_LOSS.
  v1::PmfPolicyState bad;
  bad.add_log_kernel_params(0.0);
  EXPECT_THAT(PmfPolicy::Create(spec, bad, *model_).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("needs 5")));
}

}  // namespace
}  // namespace metaopt::policy
