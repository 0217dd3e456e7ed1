// A small HTTP/1.1 listener (civetweb) that hands every request to one
// handler function: the transport under /metrics, the JSON API and the
// dashboard's files.
#ifndef METAOPT_SERVER_HTTP_HTTP_LISTENER_H_
#define METAOPT_SERVER_HTTP_HTTP_LISTENER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

struct mg_connection;
struct mg_context;

namespace metaopt::http {

struct HttpRequest {
  std::string method;  // "GET", "HEAD", ...
  std::string path;    // decoded by civetweb, without the query
  std::string query;   // raw (still percent-encoded), without '?'
  // The Authorization header, absent when not sent (the first one when sent
  // more than once: see authorization_headers).
  std::optional<std::string> authorization;
  // How many Authorization headers the request carried.
  int authorization_headers = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Further headers (name, value); Content-Type and Content-Length are added.
  std::vector<std::pair<std::string, std::string>> headers;
};

// A plain-text response (a trailing newline is added).
HttpResponse TextResponse(int status, std::string text);

// The bounds of a listener. Each connection carries one request
// (no keep-alive) and holds one worker thread while it is read, handled and
// written, so a client that connects and sends nothing, or sends or reads
// slowly, holds a worker for at most about read_timeout + write_timeout.
struct HttpListenerOptions {
  // Worker threads: connections served at once.
  int threads = 2;
  // Accepted connections that wait for a worker; beyond them new connections
  // wait in the kernel's listen backlog (`backlog`), then are refused.
  int queue = 32;
  int backlog = 64;
  // Time a connection has to send its whole request (headers), and the
  // longest a single write may make no progress.
  absl::Duration read_timeout = absl::Seconds(5);
  // Time the whole response may take to be written; a client that reads more
  // slowly is disconnected.
  absl::Duration write_timeout = absl::Seconds(10);
  // Largest response body; a handler's larger body is replaced by a 500
  // saying so (handlers page their answers to stay below it).
  int64_t max_response_bytes = int64_t{64} << 20;
  // Non-empty: the Host header must name one of these hosts (compared
  // without the port, case-insensitively), "localhost" or an IP address,
  // else the answer is 403 (a DNS-rebinding page reaches the listener under
  // its own name); "*" allows any.
  std::vector<std::string> allowed_hosts;
};

// Whether `host_header` (a Host header: "name", "name:port", "[v6]:port")
// names "localhost", an IP address or one of `allowed` (see
// HttpListenerOptions::allowed_hosts). Pure function.
bool HostAllowed(std::string_view host_header,
                 const std::vector<std::string>& allowed);

// Listens on HOST:PORT and answers each request with what the handler returns
// (for HEAD, without the body), adding X-Content-Type-Options: nosniff.
// Thread-safe: the handler runs on civetweb's worker threads, possibly
// concurrently, until destruction stops the listener.
class HttpListener {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  // `listen` as for CivetwebListeningPort (errors name `flag`); UNAVAILABLE
  // when it cannot be bound. `handler` must stay callable until destruction.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(
      const std::string& listen, const std::string& flag, Handler handler,
      HttpListenerOptions options = {});
  ~HttpListener();

  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // The port actually bound.
  int port() const { return port_; }

 private:
  HttpListener(std::string flag, Handler handler, HttpListenerOptions options)
      : flag_(std::move(flag)),
        handler_(std::move(handler)),
        options_(std::move(options)) {}
  // Writes `data` within `deadline`; false once the client is gone or slow.
  static bool WriteAll(::mg_connection* connection, std::string_view data,
                       absl::Time deadline);
  static int HandleRequest(::mg_connection* connection, void* self);
  static int LogMessage(const ::mg_connection* connection, const char* message);

  const std::string flag_;
  const Handler handler_;
  const HttpListenerOptions options_;
  mg_context* context_ = nullptr;
  int port_ = 0;
};

}  // namespace metaopt::http

#endif  // METAOPT_SERVER_HTTP_HTTP_LISTENER_H_
