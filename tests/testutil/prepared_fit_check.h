// Test helper: a policy's Suggest with a fit prepared ahead
// (Policy::PrepareFit, Policy::SuggestPrepared) against the same Suggest
// fitting inline.
#ifndef METAOPT_TESTS_TESTUTIL_PREPARED_FIT_CHECK_H_
#define METAOPT_TESTS_TESTUTIL_PREPARED_FIT_CHECK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/policy/policy.h"
#include "core/space/search_space.h"
#include "gtest/gtest.h"

namespace metaopt::policy::prepared_fit_test {

// Runs a study of `trials` sequential Suggests of `count` under `policy` (its
// updates applied, each suggestion completed by `complete(id, config)`),
// computing each Suggest both inline and with a fit prepared ahead from the
// Suggest's starting random stream, and expects them identical:
// configurations, source, stored state and the random stream after. A fit
// prepared before the history changed must then not be used. Returns how
// many Suggests used their prepared fit.
inline int ExpectPreparedEqualsInline(
    std::shared_ptr<const Policy> policy, const v1::StudySpec& spec, int trials,
    int count,
    const std::function<v1::Trial(int64_t, const v1::Configuration&)>&
        complete) {
  auto space = space::SearchSpace::Create(spec.search_space());
  std::vector<v1::Trial> history;
  const StudyView view{&spec, &*space, &history};
  int used = 0;
  for (int step = 0; static_cast<int>(history.size()) < trials; ++step) {
    const space::Rng start(1000 + step);
    space::Rng inline_rng = start;
    auto inline_result = policy->Suggest(view, count, inline_rng);
    EXPECT_TRUE(inline_result.ok()) << inline_result.status();
    if (!inline_result.ok()) return used;
    auto prepared = policy->PrepareFit(view, start);
    EXPECT_TRUE(prepared.ok()) << prepared.status();
    if (!prepared.ok()) return used;
    space::Rng prepared_rng = start;
    auto prepared_result =
        policy->SuggestPrepared(view, count, prepared_rng, *prepared);
    EXPECT_TRUE(prepared_result.ok()) << prepared_result.status();
    if (!prepared_result.ok()) return used;
    if (prepared_result->used_prepared_fit) ++used;
    EXPECT_EQ(prepared_result->source, inline_result->source) << step;
    EXPECT_TRUE(prepared_rng == inline_rng) << step;
    EXPECT_EQ(prepared_result->update.has_value(),
              inline_result->update.has_value());
    if (prepared_result->update.has_value() &&
        inline_result->update.has_value()) {
      EXPECT_EQ(prepared_result->update->state, inline_result->update->state);
    }
    EXPECT_EQ(prepared_result->configurations.size(),
              inline_result->configurations.size());
    for (size_t i = 0; i < inline_result->configurations.size() &&
                       i < prepared_result->configurations.size();
         ++i) {
      EXPECT_EQ(space::ConfigurationKey(prepared_result->configurations[i]),
                space::ConfigurationKey(inline_result->configurations[i]))
          << "step " << step << " pick " << i;
    }
    for (const v1::Configuration& c : inline_result->configurations) {
      history.push_back(complete(static_cast<int64_t>(history.size()) + 1, c));
    }
    // Stale now (more observations): never used.
    if (*prepared != nullptr) {
      space::Rng stale_rng = start;
      auto stale = policy->SuggestPrepared(view, count, stale_rng, *prepared);
      EXPECT_TRUE(stale.ok());
      if (stale.ok()) EXPECT_FALSE(stale->used_prepared_fit) << step;
    }
    if (inline_result->update.has_value()) {
      policy = inline_result->update->policy;
    }
  }
  return used;
}

// Runs a study of `trials` sequential Suggests of `count` under `policy` (its
// updates applied: the running instance and what it keeps between Suggests,
// e.g. its catalogue's kernel cache), and expects each Suggest equal to that
// of a policy restored from the last stored state by `restore` (a restarted
// server: nothing kept): configurations, source, the random stream after,
// and the stored state whenever the running policy updates it.
inline void ExpectRestoredEqualsRunning(
    std::shared_ptr<const Policy> policy, const v1::StudySpec& spec, int trials,
    int count,
    const std::function<v1::Trial(int64_t, const v1::Configuration&)>& complete,
    const std::function<std::shared_ptr<const Policy>(
        const std::optional<std::string>& state)>& restore) {
  auto space = space::SearchSpace::Create(spec.search_space());
  std::vector<v1::Trial> history;
  const StudyView view{&spec, &*space, &history};
  std::optional<std::string> state;
  for (int step = 0; static_cast<int>(history.size()) < trials; ++step) {
    const space::Rng start(2000 + step);
    space::Rng running_rng = start;
    auto running = policy->Suggest(view, count, running_rng);
    ASSERT_TRUE(running.ok()) << running.status();
    space::Rng restored_rng = start;
    auto restored = restore(state)->Suggest(view, count, restored_rng);
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_EQ(restored->source, running->source) << step;
    EXPECT_TRUE(restored_rng == running_rng) << step;
    // A restored policy may refit what the running one kept (DeepPipe's
    // scheduled fine-tune): then only the running one has no update.
    if (running->update.has_value()) {
      ASSERT_TRUE(restored->update.has_value()) << step;
      EXPECT_EQ(restored->update->state, running->update->state) << step;
    }
    ASSERT_EQ(restored->configurations.size(), running->configurations.size());
    for (size_t i = 0; i < running->configurations.size(); ++i) {
      EXPECT_EQ(space::ConfigurationKey(restored->configurations[i]),
                space::ConfigurationKey(running->configurations[i]))
          << "step " << step << " pick " << i;
    }
    for (const v1::Configuration& c : running->configurations) {
      history.push_back(complete(static_cast<int64_t>(history.size()) + 1, c));
    }
    if (running->update.has_value()) {
      policy = running->update->policy;
      state = running->update->state;
    }
  }
}

}  // namespace metaopt::policy::prepared_fit_test

#endif  // METAOPT_TESTS_TESTUTIL_PREPARED_FIT_CHECK_H_
