// Serves a metrics Registry at GET /metrics over HTTP (civetweb; see
// metrics_registry.h for why not prometheus-cpp).
#ifndef METAOPT_SERVER_METRICS_METRICS_HTTP_SERVER_H_
#define METAOPT_SERVER_METRICS_METRICS_HTTP_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/metrics/metrics_registry.h"

struct mg_connection;
struct mg_context;

namespace metaopt::metrics {

// An HTTP listener answering GET (and HEAD) /metrics with the registry's text
// exposition (Content-Type text/plain; version=0.0.4); any other path is 404,
// any other method 405. Thread-safe; requests are served on civetweb's own
// threads until destruction, which stops the listener.
class MetricsHttpServer {
 public:
  // Listens on `listen`, "HOST:PORT": HOST an IPv4 address, "[IPv6]" or
  // "localhost"; PORT 0..65535, 0 picking a free port (see port()).
  // INVALID_ARGUMENT for a malformed address (naming `flag`, the value and
  // the rule), UNAVAILABLE if it cannot be bound. `registry` must outlive the
  // server.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& listen, Registry* registry,
      const std::string& flag = "--metrics-listen");
  ~MetricsHttpServer();

  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // The port actually bound.
  int port() const { return port_; }

 private:
  explicit MetricsHttpServer(Registry* registry) : registry_(registry) {}
  static int HandleRequest(::mg_connection* connection, void* self);

  Registry* const registry_;
  mg_context* context_ = nullptr;
  int port_ = 0;
};

}  // namespace metaopt::metrics

#endif  // METAOPT_SERVER_METRICS_METRICS_HTTP_SERVER_H_
