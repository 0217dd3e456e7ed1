// A minimal HTTP/1.0 client for tests of the metrics and dashboard endpoints.
#ifndef METAOPT_TESTS_TESTUTIL_HTTP_GET_H_
#define METAOPT_TESTS_TESTUTIL_HTTP_GET_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace metaopt::testing {

struct HttpResponse {
  int status = 0;
  std::string headers;  // the header block, lines as sent
  std::string body;
};

// A TCP socket connected to 127.0.0.1:`port`, or -1; with `receive_buffer` >
// 0 its receive buffer is set that small first (a client that reads slowly).
inline int ConnectLoopback(int port, int receive_buffer = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  if (receive_buffer > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer,
               sizeof(receive_buffer));
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
      0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `method` `path` to 127.0.0.1:`port` with `extra_headers` (complete
// "Name: value\r\n" lines) and a Host header naming `host`, and reads the
// whole response (the server closes the connection after an HTTP/1.0
// request). Socket operations time out after 10 s. Thread-compatible.
inline absl::StatusOr<HttpResponse> HttpRequest(
    int port, const std::string& path, const std::string& method,
    const std::string& extra_headers = "",
    const std::string& host = "127.0.0.1") {
  const int fd = ConnectLoopback(port);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot connect to ", port));
  }
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  const std::string request =
      absl::StrCat(method, " ", path, " HTTP/1.0\r\nHost: ", host, "\r\n",
                   extra_headers, "\r\n");
  if (send(fd, request.data(), request.size(), 0) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::UnavailableError("short send");
  }
  std::string raw;
  char buffer[4096];
  ssize_t n;
  while ((n = recv(fd, buffer, sizeof(buffer), 0)) > 0) raw.append(buffer, n);
  close(fd);
  const size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || end == std::string::npos ||
      raw.size() < 12) {
    return absl::DataLossError(absl::StrCat("not an HTTP response: ", raw));
  }
  HttpResponse response;
  response.status = std::atoi(raw.substr(9, 3).c_str());
  response.headers = raw.substr(0, end);
  response.body = raw.substr(end + 4);
  return response;
}

inline absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path) {
  return HttpRequest(port, path, "GET");
}

}  // namespace metaopt::testing

#endif  // METAOPT_TESTS_TESTUTIL_HTTP_GET_H_
