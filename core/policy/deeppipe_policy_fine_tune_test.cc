// DeepPipe's kernel fine-tune schedule and prepared fits: a fit kept, prepared
// ahead or recomputed by a reloaded study suggests the same.
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "core/common/status_macros.h"
#include "core/policy/deeppipe_policy.h"
#include "tests/testutil/deeppipe_catalogue_study.h"
#include "core/policy/policy_factory.h"
#include "tests/testutil/prepared_fit_check.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::policy {
namespace {

using deeppipe_test::CatalogueSpec;
using deeppipe_test::Completed;
using deeppipe_test::MetaModel;

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

}  // namespace
}  // namespace metaopt::policy
