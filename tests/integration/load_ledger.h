// What load-test clients were told (a ledger of returned and acknowledged
// trials), and the check of a study's stored trials against it. Shared by the
// crash and replica tests.
#ifndef METAOPT_TESTS_INTEGRATION_LOAD_LEDGER_H_
#define METAOPT_TESTS_INTEGRATION_LOAD_LEDGER_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/cpp/metaopt_client.h"
#include "core/common/mutex.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tools/loadgen/load_generator.h"

namespace metaopt::testing {

using google::protobuf::util::MessageDifferencer;

// One study of the test: its id and the options that give its spec.
struct StudyPlan {
  std::string id;
  loadgen::LoadOptions options;
};

// What the clients were told, per (study, trial id). Thread-safe.
class Ledger {
 public:
  struct Record {
    v1::Configuration configuration;
    bool acknowledged = false;  // Observe returned OK
    double value = 0;           // the acknowledged value
  };
  using Key = std::pair<std::string, int64_t>;

  // A trial the server returned (Suggest) or stored (Observe by
  // configuration). A known id must come back with the same configuration.
  void Returned(const std::string& study, const v1::Trial& trial) {
    MutexLock lock(&mu_);
    auto [it, inserted] = records_.try_emplace(Key(study, trial.id()));
    if (inserted) {
      it->second.configuration = trial.configuration();
    } else if (!MessageDifferencer::Equals(it->second.configuration,
                                           trial.configuration())) {
      errors_.push_back(absl::StrCat(study, " trial ", trial.id(),
                                     " returned with another configuration"));
    }
  }
  void Acknowledged(const std::string& study, const v1::Trial& trial) {
    Returned(study, trial);
    MutexLock lock(&mu_);
    Record& record = records_[Key(study, trial.id())];
    if (record.acknowledged) {
      errors_.push_back(
          absl::StrCat(study, " trial ", trial.id(), " acknowledged twice"));
    }
    record.acknowledged = true;
    record.value = trial.value();
    ++acknowledged_;
  }
  std::map<Key, Record> Snapshot() const {
    MutexLock lock(&mu_);
    return records_;
  }
  int64_t acknowledged() const {
    MutexLock lock(&mu_);
    return acknowledged_;
  }
  std::vector<std::string> errors() const {
    MutexLock lock(&mu_);
    return errors_;
  }

 private:
  mutable Mutex mu_;
  std::map<Key, Record> records_ ABSL_GUARDED_BY(mu_);
  int64_t acknowledged_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> errors_ ABSL_GUARDED_BY(mu_);
};

// Per-study figures of one check.
struct Checked {
  int64_t trials = 0;
  int64_t completed = 0;
  // Acknowledged observations missing or changed.
  int64_t lost = 0;
};

// Reads every trial of `plan` through paged ListTrials and checks the rows
// and the ledger against them: trial ids 1..n, valid rows (a COMPLETED value
// is the test function's), no catalogue entry held twice, every returned
// trial with its configuration, every acknowledged value stored. Returns the
// figures; failures are reported through gtest.
inline Checked CheckStudy(MetaoptClient& client, const StudyPlan& plan,
                          const std::map<Ledger::Key, Ledger::Record>& ledger,
                          const std::string& when) {
  SCOPED_TRACE(absl::StrCat(plan.id, " ", when));
  const int kDimensions = plan.options.dimensions;
  Checked checked;
  std::vector<v1::Trial> trials;
  v1::ListTrialsRequest list;
  list.set_study_id(plan.id);
  list.set_page_size(37);
  for (int page = 0;; ++page) {
    absl::StatusOr<v1::ListTrialsResponse> listed = client.ListTrials(list);
    if (!listed.ok()) {
      ADD_FAILURE() << "ListTrials page " << page << ": " << listed.status();
      return checked;
    }
    trials.insert(trials.end(), listed->trials().begin(),
                  listed->trials().end());
    if (listed->next_page_token().empty()) break;
    list.set_page_token(listed->next_page_token());
  }
  v1::GetStudyRequest get;
  get.set_study_id(plan.id);
  absl::StatusOr<v1::GetStudyResponse> study = client.GetStudy(get);
  if (!study.ok()) {
    ADD_FAILURE() << "GetStudy: " << study.status();
    return checked;
  }
  EXPECT_EQ(study->study().trial_count(), static_cast<int64_t>(trials.size()));

  const bool is_catalogue =
      plan.options.space == loadgen::SpaceKind::kCatalogue;
  std::set<std::vector<double>> catalogue;
  const v1::StudySpec spec = loadgen::MakeStudySpec(plan.options, 0);
  for (const v1::Configuration& c : spec.candidates()) {
    std::vector<double> key;
    for (int d = 0; d < kDimensions; ++d) {
      key.push_back(
          c.assignments(0).parameters().at(absl::StrCat("x", d)).number());
    }
    catalogue.insert(std::move(key));
  }
  std::set<std::vector<double>> held;
  for (size_t i = 0; i < trials.size(); ++i) {
    const v1::Trial& trial = trials[i];
    // Ids are 1..n in order: none lost, duplicated or out of order.
    EXPECT_EQ(trial.id(), static_cast<int64_t>(i) + 1);
    absl::StatusOr<double> value =
        loadgen::TestFunction(trial.configuration(), kDimensions);
    EXPECT_TRUE(value.ok()) << "trial " << trial.id() << ": " << value.status();
    switch (trial.state()) {
      case v1::TRIAL_STATE_COMPLETED:
        ++checked.completed;
        EXPECT_TRUE(trial.has_value()) << "trial " << trial.id();
        if (value.ok()) {
          EXPECT_EQ(trial.value(), *value) << "trial " << trial.id();
        }
        break;
      case v1::TRIAL_STATE_ACTIVE:
      case v1::TRIAL_STATE_STALE:
        EXPECT_FALSE(trial.has_value()) << "trial " << trial.id();
        break;
      default:
        ADD_FAILURE() << "trial " << trial.id() << " has state "
                      << v1::TrialState_Name(trial.state());
    }
    // A catalogue entry is held by at most one live trial.
    if (is_catalogue && value.ok() &&
        (trial.state() == v1::TRIAL_STATE_ACTIVE ||
         trial.state() == v1::TRIAL_STATE_COMPLETED)) {
      const auto& parameters =
          trial.configuration().assignments(0).parameters();
      std::vector<double> key;
      for (int d = 0; d < kDimensions; ++d) {
        key.push_back(parameters.at(absl::StrCat("x", d)).number());
      }
      EXPECT_TRUE(catalogue.count(key))
          << "trial " << trial.id() << " is not a catalogue entry";
      EXPECT_TRUE(held.insert(key).second)
          << "trial " << trial.id() << " holds a catalogue entry twice";
    }
  }
  checked.trials = static_cast<int64_t>(trials.size());

  for (const auto& [key, record] : ledger) {
    if (key.first != plan.id) continue;
    const int64_t id = key.second;
    if (id < 1 || id > checked.trials) {
      if (record.acknowledged) ++checked.lost;
      ADD_FAILURE() << "trial " << id << " returned to a client is missing ("
                    << checked.trials << " trials stored)";
      continue;
    }
    const v1::Trial& trial = trials[id - 1];
    EXPECT_TRUE(
        MessageDifferencer::Equals(trial.configuration(), record.configuration))
        << "trial " << id << " changed its configuration";
    if (record.acknowledged) {
      if (trial.state() != v1::TRIAL_STATE_COMPLETED ||
          trial.value() != record.value) {
        ++checked.lost;
      }
      EXPECT_EQ(trial.state(), v1::TRIAL_STATE_COMPLETED)
          << "acknowledged observation of trial " << id << " lost";
      EXPECT_EQ(trial.value(), record.value) << "trial " << id;
    }
  }
  return checked;
}

}  // namespace metaopt::testing

#endif  // METAOPT_TESTS_INTEGRATION_LOAD_LEDGER_H_
