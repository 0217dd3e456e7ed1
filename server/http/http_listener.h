// A small HTTP/1.1 listener (civetweb) that hands every request to one
// handler function: the transport under /metrics, the JSON API and the
// dashboard's files.
#ifndef METAOPT_SERVER_HTTP_HTTP_LISTENER_H_
#define METAOPT_SERVER_HTTP_HTTP_LISTENER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

struct mg_connection;
struct mg_context;

namespace metaopt::http {

struct HttpRequest {
  std::string method;  // "GET", "HEAD", ...
  std::string path;    // decoded by civetweb, without the query
  std::string query;   // raw (still percent-encoded), without '?'
  // The Authorization header, absent when not sent.
  std::optional<std::string> authorization;
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

// Listens on HOST:PORT and answers each request with what the handler returns
// (for HEAD, without the body). Thread-safe: the handler runs on civetweb's
// worker threads, possibly concurrently, until destruction stops the listener.
class HttpListener {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;

  // `listen` as for CivetwebListeningPort (errors name `flag`); UNAVAILABLE
  // when it cannot be bound. `handler` must stay callable until destruction.
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(
      const std::string& listen, const std::string& flag, Handler handler,
      int threads = 2);
  ~HttpListener();

  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // The port actually bound.
  int port() const { return port_; }

 private:
  explicit HttpListener(std::string flag, Handler handler)
      : flag_(std::move(flag)), handler_(std::move(handler)) {}
  static int HandleRequest(::mg_connection* connection, void* self);
  static int LogMessage(const ::mg_connection* connection, const char* message);

  const std::string flag_;
  const Handler handler_;
  mg_context* context_ = nullptr;
  int port_ = 0;
};

}  // namespace metaopt::http

#endif  // METAOPT_SERVER_HTTP_HTTP_LISTENER_H_
