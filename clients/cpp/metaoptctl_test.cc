// End-to-end test of metaoptctl: starts the real metaopt-server on 127.0.0.1:0
// with a temporary database and model directory, reads the port from its
// "listening on HOST:PORT" log line, and runs metaoptctl commands, checking
// their JSON output, stderr and exit codes.

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/storage/sqlite_util.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/test_specs.h"

namespace metaopt {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Json = nlohmann::json;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string SourceDir() {
  const char* dir = std::getenv("METAOPT_SOURCE_DIR");
  return dir != nullptr ? dir : METAOPT_SOURCE_DIR_DEFAULT;
}

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
  Json json;  // stdout parsed, when it is JSON
};

class MetaoptctlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/metaoptctl_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = new fs::path(tmpl);
    fs::create_directory(*dir_ / "models");
    const fs::path log = *dir_ / "server.log";
    SeedDamagedStudy(*dir_ / "metaopt.db");

    server_pid_ = fork();
    ASSERT_GE(server_pid_, 0);
    if (server_pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the test
      FILE* out = std::freopen(log.c_str(), "w", stdout);
      if (out == nullptr || dup2(fileno(stdout), STDERR_FILENO) < 0) _exit(127);
      const std::string listen = "--listen=127.0.0.1:0";
      const std::string db = "--db=" + (*dir_ / "metaopt.db").string();
      const std::string models = "--models=" + (*dir_ / "models").string();
      execl(METAOPT_SERVER_PATH, METAOPT_SERVER_PATH, listen.c_str(),
            db.c_str(), models.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }

    // Wait for "listening on 127.0.0.1:<port>".
    const std::regex listening("listening on 127\\.0\\.0\\.1:([0-9]+)");
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    std::smatch match;
    std::string text;
    while (std::chrono::steady_clock::now() < give_up) {
      text = ReadAll(log);
      if (std::regex_search(text, match, listening)) break;
      int status = 0;
      if (waitpid(server_pid_, &status, WNOHANG) == server_pid_) {
        server_pid_ = -1;
        FAIL() << "metaopt-server exited during start-up:\n" << text;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_FALSE(match.empty())
        << "no 'listening on' line from metaopt-server:\n"
        << text;
    address_ = new std::string("127.0.0.1:" + match[1].str());
  }

  // Stores study "zz-damaged" (two trials) in the database the server will
  // open, with one trial's row overwritten by bytes that do not parse (the
  // file itself stays sound, so the server starts).
  static void SeedDamagedStudy(const fs::path& db) {
    auto storage = storage::OpenSqliteStorage(db.string());
    ASSERT_TRUE(storage.ok()) << storage.status();
    {
      study::StudyEngine engine(storage->get(), nullptr);
      v1::CreateStudyRequest create;
      create.set_study_id("zz-damaged");
      *create.mutable_spec() = ::metaopt::testing::CatalogueSpec(5);
      ASSERT_TRUE(engine.CreateStudy(create).ok());
      v1::SuggestRequest suggest;
      suggest.set_study_id("zz-damaged");
      suggest.set_count(2);
      ASSERT_TRUE(engine.Suggest(suggest).ok());
    }
    auto raw = storage::Database::Open(db.string());
    ASSERT_TRUE(raw.ok()) << raw.status();
    ASSERT_TRUE(raw->Exec("UPDATE trials SET trial = x'ffffffff' WHERE "
                          "study_id = 'zz-damaged' AND trial_id = 2")
                    .ok());
  }

  static void TearDownTestSuite() {
    if (server_pid_ > 0) {
      kill(server_pid_, SIGTERM);
      int status = 0;
      waitpid(server_pid_, &status, 0);
      server_pid_ = -1;
    }
    if (dir_ != nullptr) {
      std::error_code ignored;
      fs::remove_all(*dir_, ignored);
      delete dir_;
      dir_ = nullptr;
    }
    delete address_;
    address_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(address_, nullptr) << "the server did not start";
  }

  // Runs `metaoptctl --server=<test server> <args>`; each arg is single-quoted
  // for the shell.
  static Result Ctl(const std::vector<std::string>& args,
                    bool with_server = true) {
    static int counter = 0;
    const fs::path out = *dir_ / ("out" + std::to_string(counter));
    const fs::path err = *dir_ / ("err" + std::to_string(counter++));
    std::string command = std::string("'") + METAOPTCTL_PATH + "'";
    if (with_server) command += " --server=" + *address_;
    for (const std::string& arg : args) command += " '" + arg + "'";
    command += " </dev/null >'" + out.string() + "' 2>'" + err.string() + "'";
    const int status = std::system(command.c_str());
    Result result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = ReadAll(out);
    result.err = ReadAll(err);
    result.json = Json::parse(result.out, nullptr, /*allow_exceptions=*/false);
    return result;
  }

  static std::string Example(const std::string& name) {
    return SourceDir() + "/docs/examples/" + name;
  }

  // Creates study `id` from docs/examples/study_spec.json.
  static Result CreateExampleStudy(const std::string& id) {
    return Ctl(
        {"create-study", "--id", id, "--spec", Example("study_spec.json")});
  }

  static pid_t server_pid_;
  static fs::path* dir_;
  static std::string* address_;
};

pid_t MetaoptctlTest::server_pid_ = -1;
fs::path* MetaoptctlTest::dir_ = nullptr;
std::string* MetaoptctlTest::address_ = nullptr;

// Evaluates `expr` (a Result) once; expects exit code 0, nothing on stderr and
// JSON on stdout.
#define EXPECT_OK_RESULT(expr)                                          \
  do {                                                                  \
    const Result& ok_result_ = (expr);                                  \
    EXPECT_EQ(ok_result_.exit_code, 0) << "stderr: " << ok_result_.err; \
    EXPECT_EQ(ok_result_.err, "");                                      \
    EXPECT_FALSE(ok_result_.json.is_discarded())                        \
        << "not JSON: " << ok_result_.out;                              \
  } while (false)

// A DeepPipe study that no served model binds to (this registry is empty)
// says so in its metadata, and create-study warns on stderr.
TEST_F(MetaoptctlTest, CreateStudyWarnsWhenAMetaLearnedKindBindsNoModel) {
  const fs::path spec = *dir_ / "deeppipe_spec.json";
  {
    std::ifstream in(Example("study_spec.json"));
    Json json = Json::parse(in);
    json["algorithm"] = {{"kind", "ALGORITHM_KIND_DEEPPIPE"}};
    std::ofstream(spec) << json.dump();
  }
  Result created = Ctl(
      {"create-study", "--id", "unbound-deeppipe", "--spec", spec.string()});
  EXPECT_EQ(created.exit_code, 0) << created.err;
  const Json& metadata = created.json["study"]["metadata"];
  EXPECT_EQ(metadata["binding"], "none") << created.out;
  EXPECT_THAT(metadata["binding_reason"].get<std::string>(),
              HasSubstr("no model that ALGORITHM_KIND_DEEPPIPE binds to"));
  EXPECT_THAT(created.err,
              HasSubstr("warning: study \"unbound-deeppipe\" is bound to no "
                        "model: the registry serves no model"));
  // A RANDOM study learns from no model: nothing to warn about.
  Result random = CreateExampleStudy("random-no-warning");
  EXPECT_OK_RESULT(random);
  EXPECT_FALSE(random.json["study"].contains("metadata")) << random.out;
}

TEST_F(MetaoptctlTest, AskTellRoundTrip) {
  Result created = CreateExampleStudy("roundtrip");
  EXPECT_OK_RESULT(created);
  EXPECT_EQ(created.json["study"]["studyId"], "roundtrip");
  EXPECT_EQ(created.json["created"], true);
  EXPECT_EQ(created.json["study"]["spec"]["objective"]["goal"],
            "GOAL_MAXIMIZE");
  EXPECT_EQ(created.json["study"]["spec"]["algorithm"]["kind"],
            "ALGORITHM_KIND_RANDOM");

  // Create-or-get: the same spec again returns the study with created = false.
  Result again = Ctl({"--print-defaults", "create-study", "--id", "roundtrip",
                      "--spec", Example("study_spec.json")});
  EXPECT_OK_RESULT(again);
  EXPECT_EQ(again.json["created"], false);

  Result suggested =
      Ctl({"suggest", "roundtrip", "--count", "2", "--client-id", "w1"});
  EXPECT_OK_RESULT(suggested);
  ASSERT_EQ(suggested.json["trials"].size(), 2u) << suggested.out;
  const Json& first = suggested.json["trials"][0];
  const Json& second = suggested.json["trials"][1];
  EXPECT_EQ(first["state"], "TRIAL_STATE_ACTIVE");
  EXPECT_EQ(first["clientId"], "w1");
  ASSERT_TRUE(first["id"].is_string())
      << "int64 ids are JSON strings: " << first;
  EXPECT_EQ(first["configuration"]["assignments"].size(), 2u);
  const std::string id1 = first["id"];
  const std::string id2 = second["id"];
  EXPECT_NE(id1, id2);

  // The same client gets its ACTIVE trials back.
  Result retried =
      Ctl({"suggest", "roundtrip", "--count", "2", "--client-id", "w1"});
  EXPECT_OK_RESULT(retried);
  ASSERT_EQ(retried.json["trials"].size(), 2u) << retried.out;
  std::vector<std::string> retried_ids = {retried.json["trials"][0]["id"],
                                          retried.json["trials"][1]["id"]};
  EXPECT_THAT(retried_ids, ::testing::UnorderedElementsAre(id1, id2));

  // Heartbeat renews the leases of both ACTIVE trials.
  Result beat = Ctl({"heartbeat", "roundtrip", id1, id2});
  EXPECT_OK_RESULT(beat);
  ASSERT_EQ(beat.json["trials"].size(), 2u) << beat.out;
  EXPECT_EQ(beat.json["trials"][0]["id"], id1);
  EXPECT_TRUE(beat.json["trials"][1]["leaseExpireTime"].is_string())
      << beat.out;

  Result observed = Ctl({"observe", "roundtrip", "--trial", id1, "--value",
                         "0.75", "--metric", "fit_seconds=1.5"});
  EXPECT_OK_RESULT(observed);
  EXPECT_EQ(observed.json["trial"]["id"], id1);
  EXPECT_EQ(observed.json["trial"]["state"], "TRIAL_STATE_COMPLETED");
  EXPECT_DOUBLE_EQ(observed.json["trial"]["value"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(
      observed.json["trial"]["metrics"]["fit_seconds"].get<double>(), 1.5);

  Result failed = Ctl(
      {"observe", "roundtrip", "--trial", id2, "--failed", "out of memory"});
  EXPECT_OK_RESULT(failed);
  EXPECT_EQ(failed.json["trial"]["state"], "TRIAL_STATE_FAILED");
  EXPECT_EQ(failed.json["trial"]["failureReason"], "out of memory");
  EXPECT_FALSE(failed.json["trial"].contains("value"));

  // An externally evaluated configuration becomes a new completed trial.
  Result external = Ctl({"observe", "roundtrip", "--configuration",
                         Example("configuration.json"), "--value", "0.9"});
  EXPECT_OK_RESULT(external);
  EXPECT_EQ(external.json["trial"]["state"], "TRIAL_STATE_COMPLETED");
  const std::string id3 = external.json["trial"]["id"];

  Result study = Ctl({"get-study", "roundtrip"});
  EXPECT_OK_RESULT(study);
  EXPECT_EQ(study.json["study"]["trialCount"], "3");
  EXPECT_EQ(study.json["study"]["bestTrial"]["id"],
            id3);  // 0.9 > 0.75, goal maximize

  Result trial = Ctl({"get-trial", "roundtrip", id1});
  EXPECT_OK_RESULT(trial);
  EXPECT_EQ(trial.json["trial"]["state"], "TRIAL_STATE_COMPLETED");

  Result completed = Ctl({"list-trials", "roundtrip", "--state", "completed"});
  EXPECT_OK_RESULT(completed);
  ASSERT_EQ(completed.json["trials"].size(), 2u) << completed.out;
  EXPECT_EQ(completed.json["trials"][0]["id"], id1);  // by increasing id
  EXPECT_EQ(completed.json["trials"][1]["id"], id3);

  Result page = Ctl({"list-trials", "roundtrip", "--page-size", "1"});
  EXPECT_OK_RESULT(page);
  EXPECT_EQ(page.json["trials"].size(), 1u);
  EXPECT_TRUE(page.json.contains("nextPageToken")) << page.out;

  Result all = Ctl({"list-trials", "roundtrip", "--page-size", "1", "--all"});
  EXPECT_OK_RESULT(all);
  ASSERT_EQ(all.json["trials"].size(), 3u) << all.out;
  EXPECT_EQ(all.json["trials"][0]["id"], id1);
  EXPECT_EQ(all.json["trials"][2]["id"], id3);
  EXPECT_FALSE(all.json.contains("nextPageToken"));
}

// Two objectives and a constraint: create-study's --objective and
// --constraint, observe with every value as --metric, and pareto-front.
TEST_F(MetaoptctlTest, SeveralObjectivesAndAConstraint) {
  Result created =
      Ctl({"create-study", "--id", "pareto", "--spec",
           Example("study_spec.json"), "--objective", "accuracy:maximize",
           "--objective", "fit_seconds:min", "--constraint", "memory_mb<=300"});
  EXPECT_OK_RESULT(created);
  const Json& spec = created.json["study"]["spec"];
  ASSERT_EQ(spec["objectives"].size(), 2u) << created.out;
  EXPECT_EQ(spec["objectives"][1]["name"], "fit_seconds");
  EXPECT_EQ(spec["objectives"][1]["goal"], "GOAL_MINIMIZE");
  EXPECT_EQ(spec["objective"]["name"], "accuracy");
  EXPECT_EQ(spec["constraints"][0]["metric"], "memory_mb");
  EXPECT_EQ(spec["constraints"][0]["sense"], "CONSTRAINT_SENSE_AT_MOST");
  // Create-or-get with the same flags.
  Result again =
      Ctl({"--print-defaults", "create-study", "--id", "pareto", "--spec",
           Example("study_spec.json"), "--objective", "accuracy:maximize",
           "--objective", "fit_seconds:minimize", "--constraint",
           "memory_mb<=300"});
  EXPECT_OK_RESULT(again);
  EXPECT_EQ(again.json["created"], false) << again.out;

  Result suggested = Ctl({"suggest", "pareto", "--count", "6"});
  EXPECT_OK_RESULT(suggested);
  ASSERT_EQ(suggested.json["trials"].size(), 6u) << suggested.out;
  std::vector<std::string> ids;
  for (const Json& trial : suggested.json["trials"]) ids.push_back(trial["id"]);
  // (accuracy, fit_seconds, memory_mb): the third would dominate the second
  // and fourth but breaks the memory limit; the fourth is dominated by the
  // second. The front: trials 1, 2, 5 and 6.
  const double outcomes[6][3] = {{0.6, 1, 100},   {0.7, 2, 100},
                                 {0.9, 1.5, 400}, {0.65, 3, 100},
                                 {0.8, 4, 100},   {0.5, 0.5, 100}};
  for (int i = 0; i < 6; ++i) {
    Result observed =
        Ctl({"observe", "pareto", "--trial", ids[i], "--metric",
             "accuracy=" + std::to_string(outcomes[i][0]), "--metric",
             "fit_seconds=" + std::to_string(outcomes[i][1]), "--metric",
             "memory_mb=" + std::to_string(outcomes[i][2])});
    EXPECT_OK_RESULT(observed);
    EXPECT_EQ(observed.json["trial"]["state"], "TRIAL_STATE_COMPLETED");
    EXPECT_DOUBLE_EQ(observed.json["trial"]["value"].get<double>(),
                     outcomes[i][0]);
    EXPECT_EQ(observed.json["trial"]["feasible"], i != 2) << observed.out;
  }
  Result front = Ctl({"pareto-front", "pareto", "--page-size", "1", "--all"});
  EXPECT_OK_RESULT(front);
  std::vector<std::string> front_ids;
  for (const Json& trial : front.json["trials"]) {
    front_ids.push_back(trial["id"]);
  }
  EXPECT_EQ(front_ids,
            (std::vector<std::string>{ids[0], ids[1], ids[4], ids[5]}))
      << front.out;
  EXPECT_FALSE(front.json.contains("nextPageToken"));
  const Json& summary = front.json["summary"];
  EXPECT_EQ(summary["size"], "4") << front.out;
  // The default reference: the worst feasible values, a tenth of the range
  // further; the hypervolume of the four points against it.
  ASSERT_EQ(summary["referencePoint"].size(), 2u) << front.out;
  EXPECT_NEAR(summary["referencePoint"][0].get<double>(), 0.47, 1e-12);
  EXPECT_NEAR(summary["referencePoint"][1].get<double>(), 4.35, 1e-12);
  EXPECT_NEAR(summary["hypervolume"].get<double>(),
              0.5 * 0.03 + 1 * 0.13 + 2 * 0.23 + 0.35 * 0.33, 1e-9);
  Result one_page = Ctl({"pareto-front", "pareto", "--page-size", "3"});
  EXPECT_OK_RESULT(one_page);
  EXPECT_EQ(one_page.json["trials"].size(), 3u);
  EXPECT_TRUE(one_page.json.contains("nextPageToken")) << one_page.out;
  Result study = Ctl({"get-study", "pareto"});
  EXPECT_OK_RESULT(study);
  EXPECT_EQ(study.json["study"]["paretoFront"]["size"], "4");
  EXPECT_EQ(study.json["study"]["bestTrial"]["id"], ids[4]);

  // A missing objective value names the metric.
  Result next = Ctl({"suggest", "pareto"});
  EXPECT_OK_RESULT(next);
  const std::string id = next.json["trials"][0]["id"];
  Result missing = Ctl({"observe", "pareto", "--trial", id, "--value", "0.5",
                        "--metric", "memory_mb=1"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, StartsWith("metaoptctl: INVALID_ARGUMENT: "));
  EXPECT_THAT(missing.err, HasSubstr("metrics[\"fit_seconds\"]: missing"));
  // Malformed flags are usage errors.
  EXPECT_EQ(Ctl({"create-study", "--id", "x", "--spec",
                 Example("study_spec.json"), "--objective", "a:upward"})
                .exit_code,
            2);
  EXPECT_EQ(Ctl({"create-study", "--id", "x", "--spec",
                 Example("study_spec.json"), "--constraint", "m<300"})
                .exit_code,
            2);
  EXPECT_EQ(Ctl({"observe", "pareto", "--trial", id}).exit_code, 2);
}

TEST_F(MetaoptctlTest, ReportStopReasonStopsATrialWithoutARule) {
  EXPECT_OK_RESULT(Ctl({"create-study", "--id", "pruned", "--spec",
                        Example("study_spec.json")}));
  Result suggested = Ctl({"suggest", "pruned"});
  EXPECT_OK_RESULT(suggested);
  ASSERT_EQ(suggested.json["trials"].size(), 1u) << suggested.out;
  const std::string id = suggested.json["trials"][0]["id"];
  Result going = Ctl({"report", "pruned", id, "1", "0.7"});
  EXPECT_OK_RESULT(going);
  EXPECT_EQ(going.json.value("shouldStop", false), false) << going.out;
  Result stop = Ctl({"report", "pruned", id, "2", "0.6", "--stop-reason",
                     "median pruner of the caller"});
  EXPECT_OK_RESULT(stop);
  EXPECT_EQ(stop.json["shouldStop"], true) << stop.out;
  EXPECT_THAT(stop.json["reason"].get<std::string>(),
              ::testing::HasSubstr("median pruner of the caller"));
  Result observed = Ctl({"observe", "pruned", "--trial", id, "--value", "0.6"});
  EXPECT_OK_RESULT(observed);
  EXPECT_EQ(observed.json["trial"]["state"], "TRIAL_STATE_STOPPED");
}

TEST_F(MetaoptctlTest, ReportStopsATrialThatEndsStopped) {
  // The example spec with a threshold rule: accuracy below 0.5 stops.
  std::string spec = ReadAll(Example("study_spec.json"));
  const size_t brace = spec.rfind('}');
  ASSERT_NE(brace, std::string::npos);
  spec.insert(brace,
              R"(, "earlyStopping": { "threshold": { "threshold": 0.5 } })");
  const fs::path spec_path = *dir_ / "early_stopping_spec.json";
  {
    std::ofstream out(spec_path);
    out << spec;
  }
  EXPECT_OK_RESULT(
      Ctl({"create-study", "--id", "reports", "--spec", spec_path.string()}));
  Result suggested = Ctl({"suggest", "reports"});
  EXPECT_OK_RESULT(suggested);
  ASSERT_EQ(suggested.json["trials"].size(), 1u) << suggested.out;
  const std::string id = suggested.json["trials"][0]["id"];

  Result going = Ctl({"--print-defaults", "report", "reports", id, "1", "0.7",
                      "--metric", "loss=0.4"});
  EXPECT_OK_RESULT(going);
  EXPECT_EQ(going.json["shouldStop"], false) << going.out;
  EXPECT_EQ(going.json["trial"]["intermediateValues"][0]["step"], "1");
  EXPECT_DOUBLE_EQ(
      going.json["trial"]["intermediateValues"][0]["metrics"]["loss"]
          .get<double>(),
      0.4);
  Result stop = Ctl({"report", "reports", id, "2", "0.3"});
  EXPECT_OK_RESULT(stop);
  EXPECT_EQ(stop.json["shouldStop"], true) << stop.out;
  EXPECT_THAT(stop.json["reason"].get<std::string>(),
              ::testing::HasSubstr("threshold 0.5"));
  Result observed =
      Ctl({"observe", "reports", "--trial", id, "--value", "0.3"});
  EXPECT_OK_RESULT(observed);
  EXPECT_EQ(observed.json["trial"]["state"], "TRIAL_STATE_STOPPED");
  Result listed = Ctl({"list-trials", "reports", "--state", "stopped"});
  EXPECT_OK_RESULT(listed);
  ASSERT_EQ(listed.json["trials"].size(), 1u) << listed.out;

  Result negative = Ctl({"report", "reports", id, "--", "-1", "0.3"});
  EXPECT_EQ(negative.exit_code, 1) << negative.out << negative.err;
  EXPECT_THAT(negative.err, ::testing::HasSubstr("INVALID_ARGUMENT: step: -1"));
  Result bad_metric =
      Ctl({"report", "reports", id, "3", "0.3", "--metric", "loss"});
  EXPECT_EQ(bad_metric.exit_code, 2);
}

TEST_F(MetaoptctlTest, ExportWritesMetaDatasetFolders) {
  for (const std::string id : {"export-a", "export-b"}) {
    EXPECT_OK_RESULT(CreateExampleStudy(id));
    EXPECT_OK_RESULT(Ctl({"observe", id, "--configuration",
                          Example("configuration.json"), "--value", "0.5"}));
    Result suggested = Ctl({"suggest", id});
    ASSERT_EQ(suggested.json["trials"].size(), 1u) << suggested.out;
    const std::string trial = suggested.json["trials"][0]["id"];
    EXPECT_OK_RESULT(Ctl({"observe", id, "--trial", trial, "--value", "0.7"}));
  }
  const fs::path out = *dir_ / "export";
  Result exported = Ctl({"export", "--out", out.string(), "--space-of",
                         "export-a", "--min-completed-trials", "2"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::string folder = exported.out;
  while (!folder.empty() && folder.back() == '\n') folder.pop_back();
  EXPECT_THAT(folder, StartsWith((out / "history-").string()));
  const std::string tasks = ReadAll(fs::path(folder) / "tasks.csv");
  EXPECT_THAT(tasks, StartsWith("task,name,split,n_rows,n_features,"));
  EXPECT_THAT(tasks, HasSubstr("\nexport-a,,"));
  EXPECT_THAT(tasks, HasSubstr("\nexport-b,,"));
  EXPECT_THAT(ReadAll(fs::path(folder) / "evaluations.csv"),
              HasSubstr(",y,state,trial\n"));
  EXPECT_TRUE(fs::exists(fs::path(folder) / "space.json"));
  EXPECT_TRUE(fs::exists(fs::path(folder) / "README.md"));

  // A selection is required, and only one.
  EXPECT_EQ(Ctl({"export", "--out", out.string()}).exit_code, 2);
  EXPECT_EQ(Ctl({"export", "--out", out.string(), "--space-of", "export-a",
                 "--all-compatible"})
                .exit_code,
            2);
  Result missing = Ctl({"export", "--out", out.string(), "--space-of", "nope"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("NOT_FOUND"));
}

TEST_F(MetaoptctlTest, HealthAsksTheGrpcHealthService) {
  Result serving = Ctl({"health"});
  EXPECT_EQ(serving.exit_code, 0) << serving.err;
  EXPECT_EQ(serving.out, "SERVING\n");
  EXPECT_EQ(serving.err, "");
  Result unknown = Ctl({"health", "--service", "no.such.Service"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, StartsWith("metaoptctl: NOT_FOUND: "));

  Result unreachable =
      Ctl({"--server=127.0.0.1:1", "--timeout=2", "health"}, false);
  EXPECT_EQ(unreachable.exit_code, 1);
  EXPECT_THAT(unreachable.err, StartsWith("metaoptctl: UNAVAILABLE: "));
}

TEST_F(MetaoptctlTest, ServerErrorsGoToStderrWithExitCode1) {
  Result missing = Ctl({"get-study", "no-such-study"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.out, "");
  EXPECT_THAT(missing.err, StartsWith("metaoptctl: NOT_FOUND: "));
  EXPECT_THAT(missing.err, HasSubstr("no-such-study"));

  EXPECT_OK_RESULT(CreateExampleStudy("errors"));
  Result suggested = Ctl({"suggest", "errors"});
  EXPECT_OK_RESULT(suggested);
  ASSERT_EQ(suggested.json["trials"].size(), 1u);
  const std::string id = suggested.json["trials"][0]["id"];
  EXPECT_OK_RESULT(Ctl({"observe", "errors", "--trial", id, "--value", "0.5"}));

  Result twice = Ctl({"observe", "errors", "--trial", id, "--value", "0.5"});
  EXPECT_EQ(twice.exit_code, 1);
  // A trial is observed once: the second Observe is FAILED_PRECONDITION (the
  // trial's state, not a duplicate resource, is what forbids it).
  EXPECT_THAT(twice.err, StartsWith("metaoptctl: FAILED_PRECONDITION: "));
  EXPECT_THAT(twice.err, HasSubstr(id));

  Result not_finite = Ctl({"observe", "errors", "--configuration",
                           Example("configuration.json"), "--value", "nan"});
  EXPECT_EQ(not_finite.exit_code, 1) << not_finite.out;
  EXPECT_THAT(not_finite.err, StartsWith("metaoptctl: INVALID_ARGUMENT: "));

  // Same id, another spec.
  const fs::path other = *dir_ / "other_spec.json";
  std::ofstream(other)
      << R"({"searchSpace": {"stages": [{"name": "s", "algorithms": [{"name": "a",
      "parameters": [{"name": "x", "floatDomain": {"low": 0, "high": 1}}]}]}]},
      "objective": {"name": "loss", "goal": "GOAL_MINIMIZE"},
      "algorithm": {"kind": "ALGORITHM_KIND_RANDOM"}})";
  Result taken =
      Ctl({"create-study", "--id", "errors", "--spec", other.string()});
  EXPECT_EQ(taken.exit_code, 1);
  EXPECT_THAT(taken.err, StartsWith("metaoptctl: ALREADY_EXISTS: "));

  Result invalid =
      Ctl({"create-study", "--id", "bad id!", "--spec", other.string()});
  EXPECT_EQ(invalid.exit_code, 1);
  EXPECT_THAT(invalid.err, StartsWith("metaoptctl: INVALID_ARGUMENT: "));
}

TEST_F(MetaoptctlTest, LocalErrors) {
  const fs::path bad = *dir_ / "bad_spec.json";
  std::ofstream(bad) << R"({"searchSpace": {"stages": [{"nmae": "typo"}]}})";
  Result parse = Ctl({"create-study", "--id", "x", "--spec", bad.string()});
  EXPECT_EQ(parse.exit_code, 1);
  EXPECT_THAT(
      parse.err,
      StartsWith("metaoptctl: INVALID_ARGUMENT: " + bad.string() + ": "));
  EXPECT_THAT(parse.err, HasSubstr("nmae"));

  Result absent = Ctl({"create-study", "--id", "x", "--spec",
                       (*dir_ / "absent.json").string()});
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_THAT(absent.err, HasSubstr("absent.json"));

  // Usage errors exit with 2.
  EXPECT_EQ(Ctl({"observe", "x", "--value", "1"}).exit_code,
            2);  // no --trial/--configuration
  EXPECT_EQ(
      Ctl({"observe", "x", "--trial", "1", "--value", "1", "--failed", "r"})
          .exit_code,
      2);
  EXPECT_EQ(Ctl({"list-trials", "x", "--state", "bogus"}).exit_code, 2);
  EXPECT_EQ(Ctl({"no-such-command"}).exit_code, 2);
  EXPECT_EQ(Ctl({}).exit_code, 2);
  EXPECT_EQ(Ctl({"--help"}).exit_code, 0);

  // Nothing listens on port 1.
  Result down = Ctl({"--server=127.0.0.1:1", "--timeout=5", "list-studies"},
                    /*with_server=*/false);
  EXPECT_EQ(down.exit_code, 1);
  EXPECT_THAT(down.err, StartsWith("metaoptctl: UNAVAILABLE: "));
}

TEST_F(MetaoptctlTest, CreateStudyMergesDatasetFeatures) {
  const fs::path spec = *dir_ / "spec_with_features.json";
  std::ofstream(spec)
      << R"({"searchSpace": {"stages": [{"name": "s", "algorithms": [{"name": "a",
      "parameters": [{"name": "x", "floatDomain": {"low": 0, "high": 1}}]}]}]},
      "objective": {"name": "loss", "goal": "GOAL_MINIMIZE"},
      "algorithm": {"kind": "ALGORITHM_KIND_RANDOM"},
      "datasetFeatures": {"NumberOfClasses": 2, "NumberOfFeatures": 4}})";
  const fs::path features = *dir_ / "features.json";
  std::ofstream(features)
      << R"({"NumberOfClasses": 3, "ClassEntropy": 1.584962500721156})";
  Result created =
      Ctl({"create-study", "--id", "with-features", "--spec", spec.string(),
           "--dataset-features", features.string()});
  EXPECT_OK_RESULT(created);
  // The file's names are added, and a name in both takes the file's value.
  const Json expected = {{"NumberOfClasses", 3},
                         {"NumberOfFeatures", 4},
                         {"ClassEntropy", 1.584962500721156}};
  EXPECT_EQ(created.json["study"]["spec"]["datasetFeatures"], expected);
  Result got = Ctl({"get-study", "with-features"});
  EXPECT_OK_RESULT(got);
  EXPECT_EQ(got.json["study"]["spec"]["datasetFeatures"], expected);

  const auto create_with = [&](const std::string& name,
                               const std::string& text) {
    const fs::path path = *dir_ / name;
    std::ofstream(path) << text;
    return Ctl({"create-study", "--id", "bad-features", "--spec", spec.string(),
                "--dataset-features", path.string()});
  };
  const Result text_value =
      create_with("text_value.json", R"({"NumberOfClasses": "three"})");
  EXPECT_EQ(text_value.exit_code, 1);
  EXPECT_THAT(text_value.err,
              StartsWith("metaoptctl: INVALID_ARGUMENT: --dataset-features " +
                         (*dir_ / "text_value.json").string() +
                         ": key \"NumberOfClasses\": the value must be a "
                         "finite number"));
  const Result null_value =
      create_with("null_value.json", R"({"Landmark1NN": null})");
  EXPECT_EQ(null_value.exit_code, 1);
  EXPECT_THAT(null_value.err, HasSubstr("key \"Landmark1NN\""));
  const Result array = create_with("array.json", "[1, 2]");
  EXPECT_EQ(array.exit_code, 1);
  EXPECT_THAT(array.err,
              HasSubstr("array.json: not a JSON object of name -> number"));
  const Result absent =
      Ctl({"create-study", "--id", "bad-features", "--spec", spec.string(),
           "--dataset-features", (*dir_ / "absent.json").string()});
  EXPECT_EQ(absent.exit_code, 1);
  EXPECT_THAT(absent.err, StartsWith("metaoptctl: NOT_FOUND: "
                                     "--dataset-features "));
  EXPECT_THAT(absent.err, HasSubstr("absent.json"));
  EXPECT_EQ(Ctl({"get-study", "bad-features"}).exit_code, 1);
}

TEST_F(MetaoptctlTest, CreateStudySetsTheDatasetSample) {
  const fs::path spec = *dir_ / "spec_for_sample.json";
  std::ofstream(spec)
      << R"({"searchSpace": {"stages": [{"name": "s", "algorithms": [{"name": "a",
      "parameters": [{"name": "x", "floatDomain": {"low": 0, "high": 1}}]}]}]},
      "objective": {"name": "loss", "goal": "GOAL_MINIMIZE"},
      "algorithm": {"kind": "ALGORITHM_KIND_RANDOM"}})";
  const auto create_with = [&](const std::string& id, const std::string& name,
                               const std::string& text) {
    const fs::path path = *dir_ / name;
    std::ofstream(path) << text;
    return Ctl({"create-study", "--id", id, "--spec", spec.string(),
                "--dataset-sample", path.string()});
  };
  // The field names of export_samples.py (proto names) and of proto3 JSON.
  Result created = create_with(
      "with-sample", "sample.json",
      R"({"column_kinds": ["COLUMN_KIND_NUMERIC", "COLUMN_KIND_CATEGORICAL"],
      "values": [0.5, -1, 1.5, 0], "num_targets": 1, "targets": [1, 0]})");
  EXPECT_OK_RESULT(created);
  const Json expected = {
      {"columnKinds", {"COLUMN_KIND_NUMERIC", "COLUMN_KIND_CATEGORICAL"}},
      {"values", {0.5, -1, 1.5, 0}},
      {"numTargets", 1},
      {"targets", {1, 0}}};
  EXPECT_EQ(created.json["study"]["spec"]["datasetSample"], expected);
  Result got = Ctl({"get-study", "with-sample"});
  EXPECT_OK_RESULT(got);
  EXPECT_EQ(got.json["study"]["spec"]["datasetSample"], expected);

  // The server validates the sample; a file that is no DatasetSample fails
  // before any call.
  const Result ragged = create_with(
      "ragged", "ragged.json",
      R"({"columnKinds": ["COLUMN_KIND_NUMERIC"], "values": [1, 2, 3],
      "numTargets": 1, "targets": [1, 0]})");
  EXPECT_EQ(ragged.exit_code, 1);
  EXPECT_THAT(ragged.err,
              HasSubstr("INVALID_ARGUMENT: spec.dataset_sample.targets: 2 "
                        "values; need rows (3) x num_targets (1) = 3"));
  const Result unknown =
      create_with("unknown", "unknown.json", R"({"rows": [[1, 2]]})");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err,
              StartsWith("metaoptctl: INVALID_ARGUMENT: --dataset-sample "));
  EXPECT_THAT(unknown.err, HasSubstr("metaopt.v1.DatasetSample"));
  EXPECT_EQ(Ctl({"get-study", "ragged"}).exit_code, 1);
  EXPECT_EQ(Ctl({"get-study", "unknown"}).exit_code, 1);
}

TEST_F(MetaoptctlTest, ListAndDeleteStudies) {
  EXPECT_OK_RESULT(CreateExampleStudy("list-a"));
  EXPECT_OK_RESULT(CreateExampleStudy("list-b"));

  Result all = Ctl({"list-studies", "--page-size", "1", "--all"});
  EXPECT_OK_RESULT(all);
  std::vector<std::string> ids;
  for (const Json& study : all.json["studies"]) ids.push_back(study["studyId"]);
  EXPECT_THAT(ids, ::testing::IsSupersetOf({"list-a", "list-b"}));
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));

  Result deleted = Ctl({"delete-study", "list-a"});
  EXPECT_OK_RESULT(deleted);
  EXPECT_EQ(deleted.json, Json::object());
  Result gone = Ctl({"get-study", "list-a"});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_THAT(gone.err, StartsWith("metaoptctl: NOT_FOUND: "));

  Result models = Ctl({"list-models"});
  EXPECT_OK_RESULT(models);
}

TEST_F(MetaoptctlTest, StudyIncarnationRefusesTrialsOfADeletedStudy) {
  EXPECT_OK_RESULT(CreateExampleStudy("reborn"));
  Result old = Ctl({"suggest", "reborn"});
  EXPECT_OK_RESULT(old);
  const std::string incarnation = old.json["trials"][0]["studyIncarnation"];
  EXPECT_OK_RESULT(Ctl({"delete-study", "reborn"}));
  EXPECT_OK_RESULT(CreateExampleStudy("reborn"));
  Result fresh = Ctl({"suggest", "reborn"});
  EXPECT_OK_RESULT(fresh);
  EXPECT_EQ(fresh.json["trials"][0]["id"], old.json["trials"][0]["id"]);
  EXPECT_NE(fresh.json["trials"][0]["studyIncarnation"], incarnation);

  Result beat =
      Ctl({"heartbeat", "reborn", "1", "--study-incarnation", incarnation});
  EXPECT_EQ(beat.exit_code, 1);
  EXPECT_THAT(beat.err, StartsWith("metaoptctl: NOT_FOUND: "));
  Result refused = Ctl({"observe", "reborn", "--trial", "1", "--value", "0.5",
                        "--study-incarnation", incarnation});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.err, HasSubstr("is not the incarnation of study"));
  // Without it, as before incarnations existed, the id alone counts.
  EXPECT_OK_RESULT(
      Ctl({"observe", "reborn", "--trial", "1", "--value", "0.5"}));
}

TEST_F(MetaoptctlTest, DamagedStudiesAreFoundAndDeleted) {
  EXPECT_OK_RESULT(CreateExampleStudy("healthy"));
  Result found = Ctl({"damaged-studies"});
  EXPECT_OK_RESULT(found);
  ASSERT_EQ(found.json["damagedStudies"].size(), 1u) << found.out;
  const Json& entry = found.json["damagedStudies"][0];
  EXPECT_EQ(entry["studyId"], "zz-damaged");
  EXPECT_THAT(entry["error"].get<std::string>(), StartsWith("DATA_LOSS: "));
  EXPECT_FALSE(entry.contains("deleted"));

  Result deleted = Ctl({"damaged-studies", "--delete"});
  EXPECT_OK_RESULT(deleted);
  ASSERT_EQ(deleted.json["damagedStudies"].size(), 1u);
  EXPECT_EQ(deleted.json["damagedStudies"][0]["deleted"], true);
  Result after = Ctl({"damaged-studies"});
  EXPECT_OK_RESULT(after);
  EXPECT_TRUE(after.json["damagedStudies"].empty()) << after.out;
  Result gone = Ctl({"get-study", "zz-damaged"});
  EXPECT_THAT(gone.err, StartsWith("metaoptctl: NOT_FOUND: "));
  EXPECT_OK_RESULT(Ctl({"get-study", "healthy"}));
}

}  // namespace
}  // namespace metaopt
