// Serves a Prometheus text exposition at GET /metrics over HTTP (civetweb).
//
// prometheus-cpp's own pull server (prometheus::Exposer, also on civetweb) is
// not used: it answers only GET (HEAD and POST get 404), serves every path
// under /metrics/, sends Content-Type without "version=0.0.4" and adds its own
// exposer_* metrics to every scrape.
#ifndef METAOPT_SERVER_METRICS_METRICS_HTTP_SERVER_H_
#define METAOPT_SERVER_METRICS_METRICS_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "server/http/http_listener.h"

namespace metaopt::metrics {

// An HTTP listener answering GET (and HEAD) /metrics with the text an
// exposition function returns (Content-Type text/plain; version=0.0.4); any
// other path is 404, any other method 405. Thread-safe; requests are served on
// civetweb's own threads, which may call the function concurrently, until
// destruction, which stops the listener.
class MetricsHttpServer {
 public:
  // The Prometheus text format 0.0.4 of every metric, at the time of the call.
  using Exposition = std::function<std::string()>;

  // Listens on `listen`, "HOST:PORT": HOST an IPv4 address, "[IPv6]" or
  // "localhost"; PORT 0..65535, 0 picking a free port (see port()).
  // INVALID_ARGUMENT for a malformed address (naming `flag`, the value and
  // the rule), UNAVAILABLE if it cannot be bound. `exposition` must stay
  // callable until the server is destroyed.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen, Exposition exposition,
      const std::string& flag = "--metrics-listen");

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The port actually bound.
  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;

  std::unique_ptr<http::HttpListener> listener_;
  int port_ = 0;
};

}  // namespace metaopt::metrics

#endif  // METAOPT_SERVER_METRICS_METRICS_HTTP_SERVER_H_
