#include "server/metrics/metrics_http_server.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/http_get.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::metrics {
namespace {

using ::metaopt::testing::HttpGet;
using ::metaopt::testing::HttpRequest;
using ::metaopt::testing::HttpResponse;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kText[] =
    "# HELP hits_total Hits.\n"
    "# TYPE hits_total counter\n"
    "hits_total{path=\"/a\"} 7\n";

class MetricsHttpServerTest : public ::testing::Test {
 protected:
  const MetricsHttpServer::Exposition exposition_ = [] {
    return std::string(kText);
  };
};

TEST_F(MetricsHttpServerTest, ServesTextExpositionOnAnyFreePort) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto server, MetricsHttpServer::Start("127.0.0.1:0", exposition_));
  ASSERT_GT(server->port(), 0);
  METAOPT_ASSERT_OK_AND_ASSIGN(HttpResponse response,
                               HttpGet(server->port(), "/metrics"));
  EXPECT_EQ(response.status, 200);
  EXPECT_THAT(response.headers,
              HasSubstr("Content-Type: text/plain; version=0.0.4; "
                        "charset=utf-8"));
  EXPECT_EQ(response.body, kText);
  EXPECT_THAT(response.body, HasSubstr("hits_total{path=\"/a\"} 7\n"));
}

TEST_F(MetricsHttpServerTest, HeadHasNoBody) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto server, MetricsHttpServer::Start("localhost:0", exposition_));
  METAOPT_ASSERT_OK_AND_ASSIGN(HttpResponse response,
                               HttpRequest(server->port(), "/metrics", "HEAD"));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "");
}

TEST_F(MetricsHttpServerTest, OtherPathsAndMethodsAreRefused) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto server, MetricsHttpServer::Start("127.0.0.1:0", exposition_));
  METAOPT_ASSERT_OK_AND_ASSIGN(HttpResponse root, HttpGet(server->port(), "/"));
  EXPECT_EQ(root.status, 404);
  METAOPT_ASSERT_OK_AND_ASSIGN(HttpResponse sub,
                               HttpGet(server->port(), "/metrics/x"));
  EXPECT_EQ(sub.status, 404);
  METAOPT_ASSERT_OK_AND_ASSIGN(HttpResponse post,
                               HttpRequest(server->port(), "/metrics", "POST"));
  EXPECT_EQ(post.status, 405);
}

TEST_F(MetricsHttpServerTest, RejectsMalformedAddresses) {
  for (const char* listen :
       {"9090", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
        "127.0.0.1:90s", "host.example:9090", "1.2.3:80", "256.0.0.1:80",
        "[::1:80", ":9090"}) {
    EXPECT_THAT(
        MetricsHttpServer::Start(listen, exposition_),
        StatusIs(absl::StatusCode::kInvalidArgument,
                 HasSubstr("--metrics-listen: \"" + std::string(listen) +
                           "\" must be HOST:PORT")))
        << listen;
  }
}

TEST_F(MetricsHttpServerTest, PortInUseIsUnavailable) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      auto first, MetricsHttpServer::Start("127.0.0.1:0", exposition_));
  const std::string taken = "127.0.0.1:" + std::to_string(first->port());
  EXPECT_THAT(MetricsHttpServer::Start(taken, exposition_),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("cannot listen on " + taken)));
}

TEST_F(MetricsHttpServerTest, StopsListeningWhenDestroyed) {
  int port = 0;
  {
    METAOPT_ASSERT_OK_AND_ASSIGN(
        auto server, MetricsHttpServer::Start("127.0.0.1:0", exposition_));
    port = server->port();
  }
  EXPECT_THAT(HttpGet(port, "/metrics"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("connect")));
}

}  // namespace
}  // namespace metaopt::metrics
