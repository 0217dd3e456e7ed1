#include "server/metrics/metrics_http_server.h"

#include <civetweb.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/common/logging.h"

namespace metaopt::metrics {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

bool IsIpv4(const std::string& host) {
  int parts = 0;
  size_t start = 0;
  while (start <= host.size()) {
    size_t dot = host.find('.', start);
    if (dot == std::string::npos) dot = host.size();
    const std::string part = host.substr(start, dot - start);
    int value = 0;
    if (part.empty() || part.size() > 3 || !absl::SimpleAtoi(part, &value) ||
        value > 255 ||
        !absl::ascii_isdigit(static_cast<unsigned char>(part[0]))) {
      return false;
    }
    ++parts;
    start = dot + 1;
  }
  return parts == 4;
}

bool IsIpv6Literal(std::string_view host) {
  if (host.size() < 4 || host.front() != '[' || host.back() != ']') {
    return false;
  }
  for (char c : host.substr(1, host.size() - 2)) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c)) && c != ':' &&
        c != '.') {
      return false;
    }
  }
  return true;
}

// civetweb's listening_ports value for "HOST:PORT".
absl::StatusOr<std::string> ListeningPort(const std::string& listen,
                                          const std::string& flag) {
  const size_t colon = listen.rfind(':');
  const std::string rule =
      "must be HOST:PORT with HOST an IPv4 address, [IPv6 address] or "
      "localhost and PORT in 0..65535";
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", listen, "\" ", rule));
  }
  std::string host = listen.substr(0, colon);
  const std::string port_text = listen.substr(colon + 1);
  int port = -1;
  const bool port_ok =
      !port_text.empty() && port_text.size() <= 5 &&
      std::all_of(port_text.begin(), port_text.end(),
                  [](char c) {
                    return absl::ascii_isdigit(static_cast<unsigned char>(c));
                  }) &&
      absl::SimpleAtoi(port_text, &port) && port <= 65535;
  if (host == "localhost") host = "127.0.0.1";
  if (!port_ok || (!IsIpv4(host) && !IsIpv6Literal(host))) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": \"", listen, "\" ", rule));
  }
  return absl::StrCat(host, ":", port);
}

int LogCivetwebMessage(const ::mg_connection*, const char* message) {
  LogWarning(absl::StrCat("metrics endpoint: ", message));
  return 1;  // handled: civetweb writes nothing itself
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& listen, Exposition exposition, const std::string& flag) {
  absl::StatusOr<std::string> ports = ListeningPort(listen, flag);
  if (!ports.ok()) return ports.status();
  static std::once_flag init_library;
  std::call_once(init_library, [] { mg_init_library(0); });

  std::unique_ptr<MetricsHttpServer> server(
      new MetricsHttpServer(std::move(exposition)));
  const char* options[] = {
      "listening_ports",    ports->c_str(), "num_threads", "2",
      "request_timeout_ms", "10000",        nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  callbacks.log_message = &LogCivetwebMessage;
  mg_init_data init;
  init.callbacks = &callbacks;
  init.user_data = nullptr;
  init.configuration_options = options;
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error;
  error.code = &error_code;
  error.text = error_text;
  error.text_buffer_size = sizeof(error_text);
  server->context_ = mg_start2(&init, &error);
  if (server->context_ == nullptr) {
    return absl::UnavailableError(absl::StrCat(
        flag, ": cannot listen on ", listen, ": ",
        error_text[0] != '\0' ? error_text : "civetweb failed to start"));
  }
  mg_server_port bound[4];
  const int count = mg_get_server_ports(server->context_, 4, bound);
  if (count < 1 || bound[0].port <= 0) {
    return absl::UnavailableError(
        absl::StrCat(flag, ": no port bound for ", listen));
  }
  server->port_ = bound[0].port;
  mg_set_request_handler(server->context_, "/", &HandleRequest, server.get());
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (context_ != nullptr) mg_stop(context_);
}

int MetricsHttpServer::HandleRequest(::mg_connection* connection, void* self) {
  const mg_request_info* info = mg_get_request_info(connection);
  const std::string_view uri = info->local_uri ? info->local_uri : "";
  const std::string_view method =
      info->request_method ? info->request_method : "";
  if (uri != "/metrics") {
    mg_send_http_error(connection, 404, "%s",
                       "not found: metrics are at /metrics\n");
    return 404;
  }
  if (method != "GET" && method != "HEAD") {
    mg_send_http_error(connection, 405, "%s",
                       "method not allowed: use GET /metrics\n");
    return 405;
  }
  const std::string body = static_cast<MetricsHttpServer*>(self)->exposition_();
  mg_send_http_ok(connection, kContentType,
                  static_cast<long long>(body.size()));
  if (method == "GET") mg_write(connection, body.data(), body.size());
  return 200;
}

}  // namespace metaopt::metrics
