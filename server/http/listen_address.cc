#include "server/http/listen_address.h"

#include <algorithm>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace metaopt::http {
namespace {

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

}  // namespace

absl::StatusOr<std::string> CivetwebListeningPort(const std::string& listen,
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

}  // namespace metaopt::http
