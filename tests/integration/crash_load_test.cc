// Crash under load: the real metaopt-server binary is killed with SIGKILL at
// random moments while concurrent clients Suggest and Observe, restarted on the
// same database, and checked: every acknowledged Observe is present with its
// value, every acknowledged Suggest keeps its configuration, trial ids are
// 1..n in order with no duplicates, and every stored row reads back valid.
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "clients/cpp/metaopt_client.h"
#include "core/common/mutex.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/integration/load_ledger.h"
#include "tests/integration/server_process.h"
#include "tests/testutil/temp_dir.h"
#include "tools/loadgen/load_generator.h"

namespace metaopt::testing {
namespace {

constexpr int kCycles = 10;
constexpr int kWorkers = 6;
constexpr int kDimensions = 3;

std::vector<StudyPlan> Plans() {
  loadgen::LoadOptions random;
  random.dimensions = kDimensions;
  loadgen::LoadOptions catalogue = random;
  catalogue.space = loadgen::SpaceKind::kCatalogue;
  catalogue.catalogue_size = 3000;
  loadgen::LoadOptions gp = random;
  gp.algorithm = v1::ALGORITHM_KIND_GP;
  return {{"crash-random-0", random},
          {"crash-random-1", random},
          {"crash-catalogue", catalogue},
          {"crash-gp", gp}};
}

// The current connection to the server, shared by the workers. Pause() takes
// it away and waits until no worker is inside a call, so the test can check
// the database with no client writing. Thread-safe.
class Connection {
 public:
  // The client to use for one loop, or null while paused; Release() after.
  std::shared_ptr<MetaoptClient> Acquire() {
    MutexLock lock(&mu_);
    if (client_ == nullptr) return nullptr;
    ++in_flight_;
    return client_;
  }
  void Release() {
    MutexLock lock(&mu_);
    --in_flight_;
  }
  void Resume(int port) {
    MetaoptClient::Options options;
    options.address = absl::StrCat("127.0.0.1:", port);
    options.timeout = absl::Seconds(20);
    options.max_attempts = 1;  // the workers retry themselves
    auto client = MetaoptClient::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    MutexLock lock(&mu_);
    client_ = *std::move(client);
  }
  void Pause() {
    MutexLock lock(&mu_);
    client_ = nullptr;
    mu_.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &in_flight_));
  }

 private:
  Mutex mu_;
  std::shared_ptr<MetaoptClient> client_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
};

// One client: Suggest -> evaluate -> Observe on its study, and now and then
// an Observe of its own configuration (continuous studies), until `stop`.
void Work(int index, const StudyPlan& plan, Connection& connection,
          Ledger& ledger, const std::atomic<bool>& stop) {
  std::mt19937_64 rng(index + 1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::string client_id = absl::StrCat("crash-worker-", index);
  const bool continuous = plan.options.space == loadgen::SpaceKind::kContinuous;
  while (!stop.load()) {
    std::shared_ptr<MetaoptClient> client = connection.Acquire();
    if (client == nullptr) {
      absl::SleepFor(absl::Milliseconds(5));
      continue;
    }
    v1::ObserveRequest tell;
    tell.set_study_id(plan.id);
    if (continuous && unit(rng) < 0.15) {
      v1::Assignment* a = tell.mutable_configuration()->add_assignments();
      a->set_stage("f");
      for (int i = 0; i < kDimensions; ++i) {
        (*a->mutable_parameters())[absl::StrCat("x", i)].set_number(unit(rng));
      }
      tell.set_value(*loadgen::TestFunction(tell.configuration(), kDimensions));
    } else {
      v1::SuggestRequest ask;
      ask.set_study_id(plan.id);
      ask.set_client_id(client_id);
      absl::StatusOr<v1::SuggestResponse> suggested = client->Suggest(ask);
      if (!suggested.ok() || suggested->trials().empty()) {
        connection.Release();
        absl::SleepFor(absl::Milliseconds(10));
        continue;
      }
      const v1::Trial& trial = suggested->trials(0);
      ledger.Returned(plan.id, trial);
      absl::StatusOr<double> value =
          loadgen::TestFunction(trial.configuration(), kDimensions);
      if (!value.ok()) {
        ADD_FAILURE() << plan.id << " trial " << trial.id() << ": "
                      << value.status();
        connection.Release();
        return;
      }
      tell.set_trial_id(trial.id());
      tell.set_value(*value);
    }
    absl::StatusOr<v1::ObserveResponse> observed = client->Observe(tell);
    if (observed.ok()) ledger.Acknowledged(plan.id, observed->trial());
    connection.Release();
  }
}

class CrashLoadTest : public ::testing::Test {
 protected:
  ServerProcess MakeServer() {
    return ServerProcess(
        METAOPT_SERVER_BINARY,
        {"--listen=127.0.0.1:0", "--db=" + dir_.File("metaopt.db"),
         "--models=" + dir_.File("models"), "--models-poll-interval=0"},
        dir_.File("server.log"));
  }

  ScopedTempDir dir_;
};

TEST_F(CrashLoadTest, AcknowledgedWorkSurvivesRepeatedKill9UnderLoad) {
  uint64_t seed = std::random_device{}();
  if (const char* env = std::getenv("METAOPT_CRASH_SEED")) {
    ASSERT_TRUE(absl::SimpleAtoi(env, &seed)) << env;
  }
  std::cout << "crash seed " << seed << " (METAOPT_CRASH_SEED)\n";
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> kill_after_ms(300, 1500);

  const std::vector<StudyPlan> plans = Plans();
  Connection connection;
  Ledger ledger;
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back(Work, w, std::cref(plans[w % plans.size()]),
                         std::ref(connection), std::ref(ledger),
                         std::cref(stop));
  }

  int cycles_survived = 0;
  int64_t lost = 0;
  int64_t acknowledged_before_kill = 0;
  for (int cycle = 0; cycle <= kCycles; ++cycle) {
    ServerProcess server = MakeServer();
    const int port = server.Start();
    ASSERT_GT(port, 0) << server.Log();
    MetaoptClient::Options options;
    options.address = absl::StrCat("127.0.0.1:", port);
    auto checker = MetaoptClient::Create(options);
    ASSERT_TRUE(checker.ok());
    if (cycle == 0) {
      for (const StudyPlan& plan : plans) {
        v1::CreateStudyRequest create;
        create.set_study_id(plan.id);
        *create.mutable_spec() = loadgen::MakeStudySpec(plan.options, 0);
        ASSERT_TRUE((*checker)->CreateStudy(create).ok());
      }
    } else {
      // Nothing is writing: the workers are paused since the kill.
      const auto records = ledger.Snapshot();
      int64_t trials = 0;
      for (const StudyPlan& plan : plans) {
        const Checked checked = CheckStudy(
            **checker, plan, records, absl::StrCat("after restart ", cycle));
        trials += checked.trials;
        lost += checked.lost;
      }
      if (HasFailure()) break;
      ++cycles_survived;
      std::cout << "restart " << cycle << ": " << trials << " trials, "
                << ledger.acknowledged() << " acknowledged observations, "
                << lost << " lost\n";
    }
    if (cycle == kCycles) {
      const int status = server.Kill(SIGTERM);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << server.Log();
      break;
    }
    connection.Resume(port);
    absl::SleepFor(absl::Milliseconds(kill_after_ms(rng)));
    const int status = server.Kill(SIGKILL);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    connection.Pause();
    // The load really ran in this cycle.
    EXPECT_GT(ledger.acknowledged(), acknowledged_before_kill)
        << "no Observe acknowledged in cycle " << cycle;
    acknowledged_before_kill = ledger.acknowledged();
  }
  stop = true;
  for (std::thread& t : workers) t.join();
  for (const std::string& error : ledger.errors()) ADD_FAILURE() << error;
  EXPECT_EQ(cycles_survived, kCycles);
  EXPECT_EQ(lost, 0);
  RecordProperty("cycles_survived", cycles_survived);
  RecordProperty("lost_observations", static_cast<int>(lost));
  RecordProperty("acknowledged_observations",
                 static_cast<int>(ledger.acknowledged()));
  std::cout << "cycles survived " << cycles_survived << " of " << kCycles
            << ", acknowledged observations " << ledger.acknowledged()
            << ", lost " << lost << "\n";
}

}  // namespace
}  // namespace metaopt::testing
