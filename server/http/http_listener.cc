#include "server/http/http_listener.h"

#include <civetweb.h>

#include <cstring>
#include <mutex>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "server/http/listen_address.h"

namespace metaopt::http {

HttpResponse TextResponse(int status, std::string text) {
  HttpResponse response;
  response.status = status;
  response.body = std::move(text);
  response.body += '\n';
  return response;
}

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    const std::string& listen, const std::string& flag, Handler handler,
    int threads) {
  absl::StatusOr<std::string> ports = CivetwebListeningPort(listen, flag);
  if (!ports.ok()) return ports.status();
  static std::once_flag init_library;
  std::call_once(init_library, [] { mg_init_library(0); });

  std::unique_ptr<HttpListener> server(
      new HttpListener(flag, std::move(handler)));
  const std::string thread_count = absl::StrCat(threads);
  const char* options[] = {
      "listening_ports",    ports->c_str(), "num_threads", thread_count.c_str(),
      "request_timeout_ms", "10000",        nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  callbacks.log_message = &LogMessage;
  mg_init_data init;
  init.callbacks = &callbacks;
  init.user_data = server.get();
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

int HttpListener::HandleRequest(::mg_connection* connection, void* self) {
  const mg_request_info* info = mg_get_request_info(connection);
  HttpRequest request;
  request.method = info->request_method ? info->request_method : "";
  request.path = info->local_uri ? info->local_uri : "";
  request.query = info->query_string ? info->query_string : "";
  if (const char* authorization = mg_get_header(connection, "Authorization")) {
    request.authorization = authorization;
  }
  const HttpResponse response =
      static_cast<HttpListener*>(self)->handler_(request);
  std::string head =
      absl::StrCat("HTTP/1.1 ", response.status, " ",
                   mg_get_response_code_text(connection, response.status),
                   "\r\nContent-Type: ", response.content_type,
                   "\r\nContent-Length: ", response.body.size(), "\r\n");
  for (const auto& [name, value] : response.headers) {
    absl::StrAppend(&head, name, ": ", value, "\r\n");
  }
  head += "\r\n";
  mg_write(connection, head.data(), head.size());
  if (request.method != "HEAD") {
    mg_write(connection, response.body.data(), response.body.size());
  }
  return response.status;
}

}  // namespace metaopt::http
