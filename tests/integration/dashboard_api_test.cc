// The dashboard's JSON API (/api/v1/) of the real server on 127.0.0.1: the
// same data as the gRPC API, in proto3 JSON; paging, the state filter, bad
// parameters, bearer tokens and owner namespaces; the page's static files.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testutil/http_get.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kAliceToken[] = "alice-token-0123456789abcdef";
constexpr char kBobToken[] = "bob-token-fedcba9876543210";

std::string Bearer(const std::string& token) {
  return absl::StrCat("Authorization: Bearer ", token, "\r\n");
}

// Seconds until the server closes `fd` (reading and dropping what it sends),
// or a negative value if it is still open after `limit` seconds.
double SecondsUntilClosed(int fd, double limit) {
  const absl::Time start = absl::Now();
  char buffer[4096];
  while (absl::ToDoubleSeconds(absl::Now() - start) < limit) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) > 0) {
      const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
      if (n <= 0) return absl::ToDoubleSeconds(absl::Now() - start);
    }
  }
  return -1;
}

class DashboardApiTest : public ::testing::Test {
 protected:
  // A server with the dashboard listener; with `tokens`, alice and bob.
  std::unique_ptr<TestServer> StartServer(
      bool tokens,
      const std::function<void(server::ServerOptions&)>& edit = nullptr) {
    server::ServerOptions options;
    options.db_path = dir_.File("metaopt.db");
    options.models_dir = dir_.File("models");
    options.models_poll_interval = absl::ZeroDuration();
    options.http_listen = "127.0.0.1:0";
    options.dashboard_dir = dir_.File("dashboard");
    if (tokens) {
      options.tokens_file = dir_.File("tokens");
      std::ofstream(options.tokens_file)
          << "alice:" << kAliceToken << "\nbob:" << kBobToken << "\n";
    }
    if (edit) edit(options);
    return std::make_unique<TestServer>(options);
  }

  // Creates `study_id` and runs `trials` trials: every fifth FAILED, every
  // seventh INFEASIBLE, the rest COMPLETED.
  void RunStudy(TestServer& server, const std::string& study_id, int trials,
                const std::string& token = "") {
    auto with_token = [&token] {
      auto context = ContextWithDeadline();
      if (!token.empty()) {
        context->AddMetadata("authorization", absl::StrCat("Bearer ", token));
      }
      return context;
    };
    v1::CreateStudyRequest create;
    create.set_study_id(study_id);
    *create.mutable_spec() = PipelineSpec();
    v1::CreateStudyResponse created;
    ASSERT_TRUE(
        server.stub().CreateStudy(with_token().get(), create, &created).ok());
    for (int i = 1; i <= trials; ++i) {
      v1::SuggestRequest suggest;
      suggest.set_study_id(study_id);
      v1::SuggestResponse suggested;
      ASSERT_TRUE(
          server.stub().Suggest(with_token().get(), suggest, &suggested).ok());
      v1::ObserveRequest observe;
      observe.set_study_id(study_id);
      observe.set_trial_id(suggested.trials(0).id());
      if (i % 5 == 0) {
        observe.mutable_failure()->set_state(v1::TRIAL_STATE_FAILED);
        observe.mutable_failure()->set_reason("out of memory");
      } else if (i % 7 == 0) {
        observe.mutable_failure()->set_state(v1::TRIAL_STATE_INFEASIBLE);
        observe.mutable_failure()->set_reason("no such kernel");
      } else {
        observe.set_value(
            PipelineAccuracy(suggested.trials(0).configuration()));
      }
      v1::ObserveResponse observed;
      ASSERT_TRUE(
          server.stub().Observe(with_token().get(), observe, &observed).ok());
    }
  }

  static HttpResponse Get(TestServer& server, const std::string& path,
                          const std::string& headers = "") {
    auto response =
        HttpRequest(server.server().http_port(), path, "GET", headers);
    EXPECT_TRUE(response.ok()) << response.status();
    return response.ok() ? *response : HttpResponse{};
  }

  static nlohmann::json Json(const HttpResponse& response) {
    return nlohmann::json::parse(response.body, nullptr, false);
  }

  ScopedTempDir dir_;
};

TEST_F(DashboardApiTest, OffByDefault) {
  server::ServerOptions options;
  options.db_path = dir_.File("metaopt.db");
  options.models_dir = dir_.File("models");
  TestServer server(options);
  EXPECT_EQ(server.server().http_port(), 0);
}

TEST_F(DashboardApiTest, StudyAndTrialsMatchTheGrpcApi) {
  auto server = StartServer(/*tokens=*/false);
  ASSERT_GT(server->server().http_port(), 0);
  RunStudy(*server, "pipeline-a", 12);

  const HttpResponse study = Get(*server, "/api/v1/studies/pipeline-a");
  EXPECT_EQ(study.status, 200) << study.body;
  EXPECT_THAT(study.headers, HasSubstr("Content-Type: application/json"));
  // The body is the gRPC GetStudyResponse in proto3 JSON.
  v1::GetStudyRequest get;
  get.set_study_id("pipeline-a");
  v1::GetStudyResponse expected;
  ASSERT_TRUE(server->stub()
                  .GetStudy(ContextWithDeadline().get(), get, &expected)
                  .ok());
  std::string expected_json;
  ASSERT_TRUE(
      google::protobuf::util::MessageToJsonString(expected, &expected_json)
          .ok());
  EXPECT_EQ(Json(study), nlohmann::json::parse(expected_json));
  EXPECT_EQ(Json(study)["study"]["trialCount"], "12");  // int64 as a string
  EXPECT_EQ(Json(study)["study"]["studyId"], "pipeline-a");

  // Paging: 12 trials in pages of 5.
  int seen = 0;
  std::string token;
  int pages = 0;
  do {
    const HttpResponse page = Get(
        *server, absl::StrCat("/api/v1/studies/pipeline-a/trials?page_size=5",
                              token.empty() ? "" : "&page_token=", token));
    ASSERT_EQ(page.status, 200) << page.body;
    const nlohmann::json json = Json(page);
    seen += json["trials"].size();
    token = json.value("nextPageToken", "");
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(seen, 12);
  EXPECT_EQ(pages, 3);

  // The state filter, by short name and by enum name.
  const nlohmann::json failed =
      Json(Get(*server, "/api/v1/studies/pipeline-a/trials?state=failed"));
  ASSERT_EQ(failed["trials"].size(), 2u);  // trials 5 and 10
  EXPECT_EQ(failed["trials"][0]["state"], "TRIAL_STATE_FAILED");
  EXPECT_EQ(failed["trials"][0]["failureReason"], "out of memory");
  const nlohmann::json infeasible = Json(
      Get(*server,
          "/api/v1/studies/pipeline-a/trials?state=TRIAL_STATE_INFEASIBLE"));
  EXPECT_EQ(infeasible["trials"].size(), 1u);  // trial 7
}

TEST_F(DashboardApiTest, ListsStudiesWithPagingAndModels) {
  auto server = StartServer(/*tokens=*/false);
  for (int i = 0; i < 3; ++i) RunStudy(*server, absl::StrCat("s", i), 1);
  const nlohmann::json first =
      Json(Get(*server, "/api/v1/studies?page_size=2"));
  ASSERT_EQ(first["studies"].size(), 2u);
  ASSERT_TRUE(first.contains("nextPageToken"));
  const nlohmann::json second = Json(
      Get(*server, absl::StrCat("/api/v1/studies?page_size=2&page_token=",
                                first["nextPageToken"].get<std::string>())));
  EXPECT_EQ(second["studies"].size(), 1u);
  const HttpResponse models = Get(*server, "/api/v1/models");
  EXPECT_EQ(models.status, 200);
  EXPECT_TRUE(Json(models).is_object());  // no registry models: {}
}

TEST_F(DashboardApiTest, BadRequestsNameTheParameterValueAndRule) {
  auto server = StartServer(/*tokens=*/false);
  RunStudy(*server, "s", 1);
  struct Case {
    std::string path;
    int status;
    std::string message;
  };
  const Case cases[] = {
      {"/api/v1/studies?page_size=abc", 400,
       "page_size: \"abc\" must be a whole number"},
      {"/api/v1/studies?page_size=5000", 400, "page_size: 5000 is outside"},
      {"/api/v1/studies?page_size=-1", 400, "page_size: \"-1\""},
      {"/api/v1/studies?page_token=nonsense", 400, "page_token"},
      {"/api/v1/studies?colour=red", 400,
       "query parameter \"colour\" is unknown here (known: page_size, "
       "page_token)"},
      {"/api/v1/studies?page_size=1&page_size=2", 400,
       "page_size: given more than once"},
      {"/api/v1/studies/s/trials?state=done", 400,
       "state: \"done\" must be one of active, completed"},
      {"/api/v1/studies/s/trials?state=%zz", 400, "two hex digits"},
      {"/api/v1/studies/absent", 404, "absent"},
      {"/api/v1/studies/absent/trials", 404, "absent"},
      {"/api/v1/nothing", 404, "no API at /api/v1/nothing"},
      {"/api/v1/studies/a/b/trials", 404, "no API at"},
  };
  for (const Case& c : cases) {
    const HttpResponse response = Get(*server, c.path);
    EXPECT_EQ(response.status, c.status) << c.path << ": " << response.body;
    const nlohmann::json json = Json(response);
    EXPECT_EQ(json["error"]["code"], c.status) << c.path;
    EXPECT_THAT(json["error"]["message"].get<std::string>(),
                HasSubstr(c.message))
        << c.path;
  }
  auto post =
      HttpRequest(server->server().http_port(), "/api/v1/studies", "POST");
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->status, 405);
  EXPECT_THAT(post->headers, HasSubstr("Allow: GET, HEAD"));
  const nlohmann::json not_allowed = Json(*post);
  EXPECT_EQ(not_allowed["error"]["code"], 405);
  EXPECT_EQ(not_allowed["error"]["status"], "UNIMPLEMENTED");
  EXPECT_THAT(not_allowed["error"]["message"].get<std::string>(),
              HasSubstr("method \"POST\" not allowed"));
  // Browsers must not sniff JSON (or anything else) into another type.
  for (const char* path : {"/api/v1/studies", "/api/v1/nothing", "/"}) {
    EXPECT_THAT(Get(*server, path).headers,
                HasSubstr("X-Content-Type-Options: nosniff"))
        << path;
  }
}

// Two Authorization headers are ambiguous: refused like the gRPC service
// refuses them, whichever comes first.
TEST_F(DashboardApiTest, TwoAuthorizationHeadersAreRefused) {
  auto server = StartServer(/*tokens=*/true);
  const HttpResponse twice = Get(*server, "/api/v1/studies",
                                 Bearer(kAliceToken) + Bearer(kBobToken));
  EXPECT_EQ(twice.status, 401);
  EXPECT_EQ(Json(twice)["error"]["status"], "UNAUTHENTICATED");
  EXPECT_THAT(Json(twice)["error"]["message"].get<std::string>(),
              HasSubstr("sent 2 times"));
  EXPECT_EQ(Get(*server, "/api/v1/studies", Bearer(kAliceToken)).status, 200);
}

// Without tokens the listener answers only requests for localhost, an IP
// address or a name in --http-allowed-hosts (a DNS-rebinding page sends its
// own name); with tokens the token is the guard.
TEST_F(DashboardApiTest, OpenDashboardChecksTheHostHeader) {
  auto server = StartServer(/*tokens=*/false, [](server::ServerOptions& o) {
    o.http_allowed_hosts = {"metaopt.lan"};
  });
  const int port = server->server().http_port();
  struct Case {
    const char* host;
    int status;
  };
  for (const Case& c : std::vector<Case>{{"127.0.0.1", 200},
                                         {"127.0.0.1:8080", 200},
                                         {"localhost:8080", 200},
                                         {"LOCALHOST", 200},
                                         {"[::1]:8080", 200},
                                         {"metaopt.lan:8080", 200},
                                         {"rebind.attacker.example", 403},
                                         {"rebind.attacker.example:8080", 403},
                                         {"localhost.attacker.example", 403},
                                         {"[not-an-address]", 403}}) {
    auto response = HttpRequest(port, "/api/v1/studies", "GET", "", c.host);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, c.status) << c.host << ": " << response->body;
    if (c.status == 403) {
      EXPECT_THAT(response->body, HasSubstr("--http-allowed-hosts"));
    }
  }
  server.reset();
  auto guarded = StartServer(/*tokens=*/true);
  auto response =
      HttpRequest(guarded->server().http_port(), "/api/v1/studies", "GET",
                  Bearer(kAliceToken), "metaopt.example.com");
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->status, 200);
}

TEST_F(DashboardApiTest, TokensGateTheApiAndOwnersSeeOnlyTheirStudies) {
  auto server = StartServer(/*tokens=*/true);
  RunStudy(*server, "alice-study", 2, kAliceToken);
  RunStudy(*server, "bob-study", 3, kBobToken);

  const HttpResponse anonymous = Get(*server, "/api/v1/studies");
  EXPECT_EQ(anonymous.status, 401);
  EXPECT_THAT(anonymous.headers, HasSubstr("WWW-Authenticate: Bearer"));
  EXPECT_EQ(Json(anonymous)["error"]["status"], "UNAUTHENTICATED");
  EXPECT_EQ(Get(*server, "/api/v1/studies", Bearer("wrong-token-000000000000"))
                .status,
            401);
  EXPECT_EQ(Get(*server, "/api/v1/models").status, 401);

  const nlohmann::json alice =
      Json(Get(*server, "/api/v1/studies", Bearer(kAliceToken)));
  ASSERT_EQ(alice["studies"].size(), 1u);
  EXPECT_EQ(alice["studies"][0]["studyId"], "alice-study");
  EXPECT_EQ(alice["studies"][0]["owner"], "alice");
  // Bob's study does not exist for alice.
  EXPECT_EQ(
      Get(*server, "/api/v1/studies/bob-study/trials", Bearer(kAliceToken))
          .status,
      404);
  const nlohmann::json bob =
      Json(Get(*server, "/api/v1/studies/bob-study/trials", Bearer(kBobToken)));
  EXPECT_EQ(bob["trials"].size(), 3u);
  // The page's files need no token (they hold no data).
  EXPECT_NE(Get(*server, "/").status, 401);
}

// Clients that connect and send nothing, send their request slowly, or never
// read a large response hold a worker each for a bounded time and keep no
// one else waiting: with fewer of them than threads, every other request is
// answered within a second; the server closes them after its timeouts.
TEST_F(DashboardApiTest, SlowClientsDoNotKeepOthersWaiting) {
  auto server = StartServer(/*tokens=*/false, [](server::ServerOptions& o) {
    o.http_threads = 8;
    o.http_read_timeout = absl::Seconds(2);
    o.http_write_timeout = absl::Seconds(3);
  });
  // A study whose trials page is several MB of JSON.
  RunStudy(*server, "big", 0);
  v1::SuggestRequest suggest;
  suggest.set_study_id("big");
  suggest.set_count(4);
  v1::SuggestResponse suggested;
  ASSERT_TRUE(server->stub()
                  .Suggest(ContextWithDeadline().get(), suggest, &suggested)
                  .ok());
  for (const v1::Trial& trial : suggested.trials()) {
    for (int step = 0; step < 25; ++step) {
      v1::ReportIntermediateRequest report;
      report.set_study_id("big");
      report.set_trial_id(trial.id());
      report.set_step(step);
      report.set_value(0.5);
      for (int m = 0; m < 256; ++m) {
        (*report.mutable_metrics())[absl::StrCat(std::string(120, 'm'), m)] =
            m;
      }
      v1::ReportIntermediateResponse reported;
      ASSERT_TRUE(server->stub()
                      .ReportIntermediate(ContextWithDeadline().get(), report,
                                          &reported)
                      .ok());
    }
  }
  const int port = server->server().http_port();
  std::vector<int> idle;
  for (int i = 0; i < 3; ++i) idle.push_back(ConnectLoopback(port));
  std::vector<int> slow_readers;
  for (int i = 0; i < 2; ++i) {
    const int fd = ConnectLoopback(port, /*receive_buffer=*/4096);
    const std::string request =
        "GET /api/v1/studies/big/trials HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(request.size()));
    slow_readers.push_back(fd);
  }
  // Two clients send a header line every 200 ms and never finish.
  std::vector<double> writer_closed(2, -1);
  std::vector<std::thread> slow_writers;
  for (int i = 0; i < 2; ++i) {
    slow_writers.emplace_back([port, &closed = writer_closed[i]] {
      const int fd = ConnectLoopback(port);
      const absl::Time start = absl::Now();
      std::string line = "GET /api/v1/studies HTTP/1.0\r\n";
      while (absl::Now() - start < absl::Seconds(8)) {
        if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) < 0) break;
        line = "X-Slow: yes\r\n";
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, 200) > 0) {
          char buffer[256];
          if (recv(fd, buffer, sizeof(buffer), 0) <= 0) break;
        }
      }
      closed = absl::ToDoubleSeconds(absl::Now() - start);
      close(fd);
    });
  }
  absl::SleepFor(absl::Milliseconds(300));
  double slowest = 0;
  for (int i = 0; i < 10; ++i) {
    const absl::Time start = absl::Now();
    const HttpResponse response = Get(*server, "/api/v1/studies");
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    EXPECT_EQ(response.status, 200);
    slowest = std::max(slowest, seconds);
  }
  EXPECT_LT(slowest, 1.0);
  std::cout << "slowest of 10 requests beside 7 slow clients: " << slowest
            << " s\n";
  // The server closes idle connections after its read timeout.
  for (int fd : idle) {
    const double closed = SecondsUntilClosed(fd, 6);
    EXPECT_GE(closed, 0) << "an idle connection is still open";
    EXPECT_LT(closed, 4);
    close(fd);
  }
  for (std::thread& writer : slow_writers) writer.join();
  for (double closed : writer_closed) {
    EXPECT_LT(closed, 5) << "a slow writer was not cut off";
  }
  for (int fd : slow_readers) close(fd);
}

TEST_F(DashboardApiTest, ServesThePageFiles) {
  std::filesystem::create_directories(dir_.File("dashboard/assets"));
  std::ofstream(dir_.File("dashboard/index.html")) << "<!doctype html>hi";
  std::ofstream(dir_.File("dashboard/assets/app.js")) << "export {};";
  auto server = StartServer(/*tokens=*/false);
  const HttpResponse index = Get(*server, "/");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.body, "<!doctype html>hi");
  EXPECT_THAT(index.headers, HasSubstr("Content-Type: text/html"));
  EXPECT_THAT(index.headers,
              HasSubstr("Content-Security-Policy: default-src 'self'"));
  const HttpResponse script = Get(*server, "/assets/app.js");
  EXPECT_EQ(script.status, 200);
  EXPECT_THAT(script.headers, HasSubstr("Content-Type: text/javascript"));
  EXPECT_EQ(Get(*server, "/assets/missing.js").status, 404);
  EXPECT_EQ(Get(*server, "/../metaopt.db").status, 404);
  // civetweb removes dot segments before the handler sees the path.
  EXPECT_EQ(Get(*server, "/assets/../index.html").body, "<!doctype html>hi");
  std::ofstream(dir_.File("dashboard/.secret")) << "x";
  EXPECT_EQ(Get(*server, "/.secret").status, 404);
  EXPECT_EQ(Get(*server, "/assets").status, 404);
}

TEST_F(DashboardApiTest, SaysHowToBuildAMissingPage) {
  auto server = StartServer(/*tokens=*/false);
  const HttpResponse index = Get(*server, "/");
  EXPECT_EQ(index.status, 404);
  EXPECT_THAT(index.body, HasSubstr("the dashboard is not built"));
}

TEST_F(DashboardApiTest, BadListenAddressNamesTheFlag) {
  server::ServerOptions options;
  options.db_path = dir_.File("metaopt.db");
  options.models_dir = dir_.File("models");
  options.listen = "127.0.0.1:0";
  options.http_listen = "nowhere";
  EXPECT_THAT(server::Server::BuildAndStart(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--http-listen: \"nowhere\"")));
}

}  // namespace
}  // namespace metaopt::testing
