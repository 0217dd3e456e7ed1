// Several metaopt-server replicas on one PostgreSQL database, as real
// processes: clients spread round-robin over the replicas must see one
// service. A catalogue study never hands out an entry twice, a Suggest
// retried on another replica returns the same trials, the study quota holds
// across replicas, and under load (the test's own ledger-keeping clients and
// metaopt-loadgen with every replica's address) kill -9 of replicas and
// crashes of PostgreSQL lose and duplicate no acknowledged observation.
#include <signal.h>
#include <sys/wait.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "clients/cpp/metaopt_client.h"
#include "core/space/search_space.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/integration/load_ledger.h"
#include "tests/integration/server_process.h"
#include "tests/testutil/postgres_server.h"
#include "tests/testutil/temp_dir.h"
#include "tools/loadgen/load_generator.h"

namespace metaopt::testing {
namespace {

constexpr int kReplicas = 3;
constexpr int kDimensions = 3;

class ReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string reason = PostgresServer::SkipReason();
        !reason.empty()) {
      GTEST_SKIP() << reason;
    }
    auto postgres = PostgresServer::Start();
    ASSERT_TRUE(postgres.ok()) << postgres.status();
    postgres_ = *std::move(postgres);
    auto uri = postgres_->CreateDatabase();
    ASSERT_TRUE(uri.ok()) << uri.status();
    uri_ = *uri;
    for (int i = 0; i < kReplicas; ++i) {
      ports_[i] = FreeLoopbackPort();
      ASSERT_GT(ports_[i], 0);
      StartReplica(i);
      ASSERT_TRUE(replicas_[i] != nullptr);
    }
  }

  // Starts (or restarts) replica `i` on its fixed port.
  void StartReplica(int i, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        absl::StrCat("--listen=127.0.0.1:", ports_[i]), "--db=" + uri_,
        "--models=" + dir_.File("models"), "--models-poll-interval=0",
        "--db-retry-seconds=30"};
    args.insert(args.end(), extra.begin(), extra.end());
    replicas_[i] = std::make_unique<ServerProcess>(
        METAOPT_SERVER_BINARY, args,
        dir_.File(absl::StrCat("replica-", i, ".log")));
    const int port = replicas_[i]->Start();
    ASSERT_EQ(port, ports_[i]) << replicas_[i]->Log();
  }

  std::string Address(int i) const {
    return absl::StrCat("127.0.0.1:", ports_[i]);
  }

  std::unique_ptr<MetaoptClient> Client(int i, int max_attempts = 1) {
    MetaoptClient::Options options;
    options.address = Address(i);
    options.timeout = absl::Seconds(60);
    options.max_attempts = max_attempts;
    auto client = MetaoptClient::Create(options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  void CreateStudy(const StudyPlan& plan) {
    v1::CreateStudyRequest create;
    create.set_study_id(plan.id);
    *create.mutable_spec() = loadgen::MakeStudySpec(plan.options, 0);
    auto created = Client(0)->CreateStudy(create);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  ScopedTempDir dir_;
  std::unique_ptr<PostgresServer> postgres_;
  std::string uri_;
  std::array<int, kReplicas> ports_{};
  std::array<std::unique_ptr<ServerProcess>, kReplicas> replicas_;
};

loadgen::LoadOptions Catalogue(int size) {
  loadgen::LoadOptions options;
  options.dimensions = kDimensions;
  options.space = loadgen::SpaceKind::kCatalogue;
  options.catalogue_size = size;
  return options;
}

std::string EntryKey(const v1::Trial& trial) {
  return space::ConfigurationKey(trial.configuration());
}

TEST_F(ReplicasTest, CatalogueEntriesAreNeverSuggestedTwiceAcrossReplicas) {
  constexpr int kEntries = 90;
  constexpr int kClients = 6;
  const StudyPlan plan{"catalogue", Catalogue(kEntries)};
  CreateStudy(plan);
  std::vector<std::vector<v1::Trial>> got(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::array<std::unique_ptr<MetaoptClient>, kReplicas> replicas;
      for (int i = 0; i < kReplicas; ++i) replicas[i] = Client(i, 3);
      for (int call = 0;; ++call) {
        v1::SuggestRequest ask;
        ask.set_study_id(plan.id);
        ask.set_count(2);
        // No client_id: every call gets new trials.
        auto suggested = replicas[(c + call) % kReplicas]->Suggest(ask);
        ASSERT_TRUE(suggested.ok()) << suggested.status();
        if (suggested->trials().empty()) return;  // exhausted
        for (const v1::Trial& trial : suggested->trials())
          got[c].push_back(trial);
      }
    });
  }
  for (std::thread& t : clients) t.join();
  std::set<std::string> entries;
  std::set<int64_t> ids;
  int total = 0;
  for (const auto& trials : got) {
    for (const v1::Trial& trial : trials) {
      ++total;
      EXPECT_TRUE(entries.insert(EntryKey(trial)).second)
          << "entry of trial " << trial.id() << " suggested twice";
      EXPECT_TRUE(ids.insert(trial.id()).second)
          << "trial id " << trial.id() << " handed out twice";
    }
  }
  EXPECT_EQ(total, kEntries);
  EXPECT_EQ(entries.size(), static_cast<size_t>(kEntries));
  // Every replica sees the study exhausted, with all trials.
  for (int i = 0; i < kReplicas; ++i) {
    v1::GetStudyRequest get;
    get.set_study_id(plan.id);
    auto study = Client(i)->GetStudy(get);
    ASSERT_TRUE(study.ok()) << study.status();
    EXPECT_EQ(study->study().trial_count(), kEntries) << "replica " << i;
    EXPECT_EQ(study->study().state(), v1::STUDY_STATE_EXHAUSTED);
  }
}

TEST_F(ReplicasTest, RetriedSuggestOnAnotherReplicaReturnsTheSameTrials) {
  const StudyPlan plan{"retried", Catalogue(50)};
  CreateStudy(plan);
  v1::SuggestRequest ask;
  ask.set_study_id(plan.id);
  ask.set_count(3);
  ask.set_client_id("worker-1");
  auto first = Client(0)->Suggest(ask);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->trials_size(), 3);
  for (int i : {1, 2, 0, 2}) {
    auto again = Client(i)->Suggest(ask);
    ASSERT_TRUE(again.ok()) << again.status();
    ASSERT_EQ(again->trials_size(), 3) << "replica " << i;
    for (int t = 0; t < 3; ++t) {
      EXPECT_EQ(again->trials(t).id(), first->trials(t).id())
          << "replica " << i;
      EXPECT_EQ(EntryKey(again->trials(t)), EntryKey(first->trials(t)));
    }
  }
  // Observed on replica 1, the trial is no longer held; replica 2 hands out
  // the two still held and one new trial.
  v1::ObserveRequest tell;
  tell.set_study_id(plan.id);
  tell.set_trial_id(first->trials(0).id());
  tell.set_value(0.5);
  auto observed = Client(1)->Observe(tell);
  ASSERT_TRUE(observed.ok()) << observed.status();
  auto after = Client(2)->Suggest(ask);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->trials_size(), 3);
  EXPECT_EQ(after->trials(0).id(), first->trials(1).id());
  EXPECT_EQ(after->trials(1).id(), first->trials(2).id());
  EXPECT_EQ(after->trials(2).id(), 4);
  // A second Observe of the same trial, on another replica, is refused.
  auto twice = Client(0)->Observe(tell);
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kFailedPrecondition)
      << twice.status();
}

TEST_F(ReplicasTest, StudyQuotaHoldsAcrossReplicas) {
  for (int i = 0; i < kReplicas; ++i) {
    replicas_[i]->Kill(SIGTERM);
    StartReplica(i, {"--max-studies-per-owner=4"});
  }
  constexpr int kCreates = 12;
  std::vector<absl::Status> results(kCreates);
  std::vector<std::thread> threads;
  for (int c = 0; c < kCreates; ++c) {
    threads.emplace_back([&, c] {
      v1::CreateStudyRequest create;
      create.set_study_id(absl::StrCat("quota-", c));
      *create.mutable_spec() = loadgen::MakeStudySpec(Catalogue(10), 0);
      results[c] = Client(c % kReplicas)->CreateStudy(create).status();
    });
  }
  for (std::thread& t : threads) t.join();
  int created = 0;
  for (const absl::Status& status : results) {
    if (status.ok()) {
      ++created;
    } else {
      EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
    }
  }
  EXPECT_EQ(created, 4);
}

// Readiness follows the database: while PostgreSQL is down a replica's
// optimizer service is NOT_SERVING (the server as a whole stays SERVING, for
// liveness), and SERVING again once it is back.
TEST_F(ReplicasTest, OptimizerServiceHealthFollowsTheDatabase) {
  std::unique_ptr<MetaoptClient> client = Client(0);
  const std::string service = "metaopt.v1.OptimizerService";
  auto wait_for = [&](bool serving) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      if (client->CheckHealth(service).ok() == serving) return true;
      absl::SleepFor(absl::Milliseconds(200));
    }
    return false;
  };
  ASSERT_TRUE(wait_for(true));
  postgres_->Stop();
  EXPECT_TRUE(wait_for(false)) << "still SERVING without its database";
  EXPECT_TRUE(client->CheckHealth("").ok()) << "liveness must not follow";
  ASSERT_TRUE(postgres_->Restart().ok());
  EXPECT_TRUE(wait_for(true)) << "not SERVING again with its database back";
}

// A client of the load below: Suggest on one replica, Observe on the next,
// moving on to the next replica when one fails. Keeps the ledger.
void Work(int index, const StudyPlan& plan,
          const std::array<std::string, kReplicas>& addresses, Ledger& ledger,
          const std::atomic<bool>& stop) {
  std::array<std::unique_ptr<MetaoptClient>, kReplicas> replicas;
  for (int i = 0; i < kReplicas; ++i) {
    MetaoptClient::Options options;
    options.address = addresses[i];
    options.timeout = absl::Seconds(60);
    options.max_attempts = 1;  // the worker moves on itself
    auto client = MetaoptClient::Create(options);
    ASSERT_TRUE(client.ok()) << client.status();
    replicas[i] = *std::move(client);
  }
  const std::string client_id = absl::StrCat("replica-worker-", index);
  for (int call = index; !stop.load(); ++call) {
    v1::SuggestRequest ask;
    ask.set_study_id(plan.id);
    ask.set_client_id(client_id);
    auto suggested = replicas[call % kReplicas]->Suggest(ask);
    if (!suggested.ok() || suggested->trials().empty()) {
      absl::SleepFor(absl::Milliseconds(20));
      continue;
    }
    const v1::Trial& trial = suggested->trials(0);
    ledger.Returned(plan.id, trial);
    auto value = loadgen::TestFunction(trial.configuration(), kDimensions);
    ASSERT_TRUE(value.ok()) << value.status();
    v1::ObserveRequest tell;
    tell.set_study_id(plan.id);
    tell.set_trial_id(trial.id());
    tell.set_value(*value);
    auto observed = replicas[(call + 1) % kReplicas]->Observe(tell);
    if (observed.ok()) ledger.Acknowledged(plan.id, observed->trial());
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_F(ReplicasTest, AcknowledgedWorkSurvivesReplicaKillsAndDatabaseCrashes) {
  constexpr int kCycles = 6;
  constexpr int kWorkers = 6;
  loadgen::LoadOptions random;
  random.dimensions = kDimensions;
  loadgen::LoadOptions gp = random;
  gp.algorithm = v1::ALGORITHM_KIND_GP;
  const std::vector<StudyPlan> plans = {{"load-random", random},
                                        {"load-catalogue", Catalogue(2000)},
                                        {"load-gp", gp}};
  for (const StudyPlan& plan : plans) CreateStudy(plan);
  std::array<std::string, kReplicas> addresses;
  for (int i = 0; i < kReplicas; ++i) addresses[i] = Address(i);

  // metaopt-loadgen over all replicas, alongside.
  const std::string report = dir_.File("loadgen.json");
  const pid_t loadgen = fork();
  if (loadgen == 0) {
    const std::string servers = absl::StrJoin(addresses, ",");
    execl(METAOPT_LOADGEN_PATH, METAOPT_LOADGEN_PATH,
          ("--server=" + servers).c_str(), "--clients=3", "--studies=2",
          "--duration=12", "--keep-studies", "--study-prefix=lg", "--quiet",
          "--timeout=60", ("--json-out=" + report).c_str(), nullptr);
    _exit(127);
  }

  Ledger ledger;
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back(Work, w, std::cref(plans[w % plans.size()]),
                         std::cref(addresses), std::ref(ledger),
                         std::cref(stop));
  }
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<int> pause_ms(300, 1200);
  int replica_kills = 0;
  int database_crashes = 0;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    absl::SleepFor(absl::Milliseconds(pause_ms(rng)));
    if (cycle % 2 == 0) {
      const int victim = (cycle / 2) % kReplicas;
      const int status = replicas_[victim]->Kill(SIGKILL);
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
      ++replica_kills;
      absl::SleepFor(absl::Milliseconds(300));
      StartReplica(victim);
    } else {
      postgres_->Crash();
      ++database_crashes;
      absl::SleepFor(absl::Milliseconds(800));
      ASSERT_TRUE(postgres_->Restart().ok());
    }
  }
  absl::SleepFor(absl::Seconds(1));
  stop = true;
  for (std::thread& t : workers) t.join();
  int loadgen_status = 0;
  waitpid(loadgen, &loadgen_status, 0);
  EXPECT_TRUE(WIFEXITED(loadgen_status) && WEXITSTATUS(loadgen_status) == 0)
      << "metaopt-loadgen status " << loadgen_status;

  // Nothing writes now; every replica must show the same, complete studies.
  for (const std::string& error : ledger.errors()) ADD_FAILURE() << error;
  const auto records = ledger.Snapshot();
  int64_t lost = 0;
  int64_t trials = 0;
  for (int i = 0; i < kReplicas; ++i) {
    std::unique_ptr<MetaoptClient> checker = Client(i, 3);
    for (const StudyPlan& plan : plans) {
      const Checked checked =
          CheckStudy(*checker, plan, records, absl::StrCat("on replica ", i));
      lost += checked.lost;
      if (i == 0) trials += checked.trials;
    }
  }
  EXPECT_EQ(lost, 0);
  EXPECT_GT(ledger.acknowledged(), 50);

  // metaopt-loadgen's acknowledged observations are all stored.
  const nlohmann::json json = nlohmann::json::parse(ReadFile(report), nullptr,
                                                    /*allow_exceptions=*/false);
  ASSERT_FALSE(json.is_discarded()) << ReadFile(report);
  const int64_t loadgen_acknowledged = json.value("observations", int64_t{-1});
  int64_t loadgen_stored = 0;
  std::unique_ptr<MetaoptClient> checker = Client(1, 3);
  for (int s = 0; s < 2; ++s) {
    v1::ListTrialsRequest list;
    list.set_study_id(absl::StrCat("lg-", s));
    list.set_page_size(1000);
    list.set_state(v1::TRIAL_STATE_COMPLETED);
    while (true) {
      auto listed = checker->ListTrials(list);
      ASSERT_TRUE(listed.ok()) << listed.status();
      loadgen_stored += listed->trials_size();
      if (listed->next_page_token().empty()) break;
      list.set_page_token(listed->next_page_token());
    }
  }
  EXPECT_GT(loadgen_acknowledged, 0);
  // A COMPLETED trial without acknowledgement is an Observe whose answer was
  // lost with its replica; the reverse would be a lost observation.
  EXPECT_GE(loadgen_stored, loadgen_acknowledged);

  RecordProperty("acknowledged_observations",
                 static_cast<int>(ledger.acknowledged()));
  RecordProperty("lost_observations", static_cast<int>(lost));
  std::cout << replica_kills << " replica kill(s), " << database_crashes
            << " PostgreSQL crash(es): " << ledger.acknowledged()
            << " acknowledged observations of the test's clients (" << trials
            << " trials), " << lost << " lost; metaopt-loadgen "
            << loadgen_acknowledged << " acknowledged, " << loadgen_stored
            << " stored\n";
}

}  // namespace
}  // namespace metaopt::testing
