// Parsing of the HOST:PORT flags of the server's HTTP listeners.
#ifndef METAOPT_SERVER_HTTP_LISTEN_ADDRESS_H_
#define METAOPT_SERVER_HTTP_LISTEN_ADDRESS_H_

#include <string>

#include "absl/status/statusor.h"

namespace metaopt::http {

// civetweb's `listening_ports` value for `listen`, "HOST:PORT": HOST an IPv4
// address, "[IPv6]" or "localhost"; PORT 0..65535. INVALID_ARGUMENT naming
// `flag`, the value and the rule otherwise. Pure function.
absl::StatusOr<std::string> CivetwebListeningPort(const std::string& listen,
                                                  const std::string& flag);

}  // namespace metaopt::http

#endif  // METAOPT_SERVER_HTTP_LISTEN_ADDRESS_H_
