#include "server/metrics/metrics_http_server.h"

#include <utility>

namespace metaopt::metrics {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen, Exposition exposition, const std::string& flag) {
  auto handler = [exposition =
                      std::move(exposition)](const http::HttpRequest& request) {
    if (request.path != "/metrics") {
      return http::TextResponse(404, "not found: metrics are at /metrics");
    }
    if (request.method != "GET" && request.method != "HEAD") {
      return http::TextResponse(405, "method not allowed: use GET /metrics");
    }
    http::HttpResponse response;
    response.content_type = kContentType;
    response.body = exposition();
    return response;
  };
  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer());
  auto listener = http::HttpListener::Start(listen, flag, std::move(handler));
  if (!listener.ok()) return listener.status();
  server->listener_ = *std::move(listener);
  server->port_ = server->listener_->port();
  return server;
}

}  // namespace metaopt::metrics
