#include "server/http/http_listener.h"

#include <arpa/inet.h>
#include <civetweb.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string_view>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/common/logging.h"
#include "core/common/strings.h"
#include "server/http/listen_address.h"

namespace metaopt::http {

HttpResponse TextResponse(int status, std::string text) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(text);
  response.body += '\n';
  return response;
}

bool HostAllowed(std::string_view host_header,
                 const std::vector<std::string>& allowed) {
  // Without a Host header the request does not come from a browser.
  if (host_header.empty()) return true;
  std::string host;
  if (host_header.front() == '[') {
    const size_t end = host_header.find(']');
    if (end == std::string_view::npos) return false;
    host = std::string(host_header.substr(1, end - 1));
    in6_addr v6;
    if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return true;
  } else {
    host = std::string(host_header.substr(0, host_header.rfind(':')));
    in_addr v4;
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return true;
  }
  absl::AsciiStrToLower(&host);
  if (host == "localhost") return true;
  for (const std::string& name : allowed) {
    if (name == "*" || absl::EqualsIgnoreCase(name, host)) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    const std::string& listen, const std::string& flag, Handler handler,
    HttpListenerOptions options) {
  absl::StatusOr<std::string> ports = CivetwebListeningPort(listen, flag);
  if (!ports.ok()) return ports.status();
  static std::once_flag init_library;
  std::call_once(init_library, [] { mg_init_library(0); });

  const std::string threads = absl::StrCat(options.threads);
  const std::string queue = absl::StrCat(options.queue);
  const std::string backlog = absl::StrCat(options.backlog);
  const std::string timeout_ms =
      absl::StrCat(absl::ToInt64Milliseconds(options.read_timeout));
  std::unique_ptr<HttpListener> server(
      new HttpListener(flag, std::move(handler), std::move(options)));
  // One request per connection (keep-alive off, civetweb's default), so a
  // connection holds a worker only while it sends, waits and reads.
  const char* configuration[] = {"listening_ports",
                                 ports->c_str(),
                                 "num_threads",
                                 threads.c_str(),
                                 "connection_queue",
                                 queue.c_str(),
                                 "listen_backlog",
                                 backlog.c_str(),
                                 "request_timeout_ms",
                                 timeout_ms.c_str(),
                                 "enable_keep_alive",
                                 "no",
                                 nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  callbacks.log_message = &LogMessage;
  mg_init_data init;
  init.callbacks = &callbacks;
  init.user_data = server.get();
  init.configuration_options = configuration;
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

HttpListener::~HttpListener() {
  if (context_ != nullptr) mg_stop(context_);
}

int HttpListener::LogMessage(const ::mg_connection* connection,
                             const char* message) {
  const mg_context* context = mg_get_context(connection);
  const auto* self =
      context == nullptr
          ? nullptr
          : static_cast<const HttpListener*>(mg_get_user_data(context));
  LogWarning(absl::StrCat(self == nullptr ? "http" : self->flag_,
                          " listener: ", message));
  return 1;  // handled: civetweb writes nothing itself
}

bool HttpListener::WriteAll(::mg_connection* connection,
                            std::string_view data, absl::Time deadline) {
  // In pieces, so that a client reading slowly is cut off at the deadline
  // (each mg_write gives up after read_timeout without progress).
  constexpr size_t kPiece = 64 << 10;
  for (size_t at = 0; at < data.size(); at += kPiece) {
    if (absl::Now() > deadline) return false;
    const size_t size = std::min(kPiece, data.size() - at);
    if (mg_write(connection, data.data() + at, size) !=
        static_cast<int>(size)) {
      return false;
    }
  }
  return true;
}

int HttpListener::HandleRequest(::mg_connection* connection, void* self) {
  const auto* listener = static_cast<const HttpListener*>(self);
  const mg_request_info* info = mg_get_request_info(connection);
  HttpRequest request;
  request.method = info->request_method ? info->request_method : "";
  request.path = info->local_uri ? info->local_uri : "";
  request.query = info->query_string ? info->query_string : "";
  std::string_view host;
  for (int i = 0; i < info->num_headers; ++i) {
    const mg_header& header = info->http_headers[i];
    if (header.name == nullptr || header.value == nullptr) continue;
    if (absl::EqualsIgnoreCase(header.name, "Authorization")) {
      if (request.authorization_headers++ == 0) {
        request.authorization = header.value;
      }
    } else if (absl::EqualsIgnoreCase(header.name, "Host")) {
      host = header.value;
    }
  }
  HttpResponse response;
  if (!listener->options_.allowed_hosts.empty() &&
      !HostAllowed(host, listener->options_.allowed_hosts)) {
    response = TextResponse(
        403, absl::StrCat("Host ", Quote(ToAbsl(host)),
                          " is not this server's: without tokens the "
                          "listener answers only requests for localhost, an "
                          "IP address or a name in --http-allowed-hosts"));
  } else {
    response = listener->handler_(request);
  }
  if (static_cast<int64_t>(response.body.size()) >
      listener->options_.max_response_bytes) {
    LogWarning(absl::StrCat(listener->flag_, " listener: a response of ",
                            response.body.size(), " bytes to ",
                            Quote(request.path), " exceeds the limit of ",
                            listener->options_.max_response_bytes));
    response = TextResponse(
        500, absl::StrCat("the response (", response.body.size(),
                          " bytes) exceeds this server's limit of ",
                          listener->options_.max_response_bytes,
                          " bytes; ask for a smaller page (page_size)"));
  }
  std::string head =
      absl::StrCat("HTTP/1.1 ", response.status, " ",
                   mg_get_response_code_text(connection, response.status),
                   "\r\nContent-Type: ", response.content_type,
                   "\r\nContent-Length: ", response.body.size(),
                   "\r\nX-Content-Type-Options: nosniff\r\n");
  for (const auto& [name, value] : response.headers) {
    absl::StrAppend(&head, name, ": ", value, "\r\n");
  }
  head += "\r\n";
  const absl::Time deadline = absl::Now() + listener->options_.write_timeout;
  if (WriteAll(connection, head, deadline) && request.method != "HEAD") {
    WriteAll(connection, response.body, deadline);
  }
  return response.status;
}

}  // namespace metaopt::http
