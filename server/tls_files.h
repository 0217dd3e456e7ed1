// Start-up checks of the server's TLS files, so that a wrong file stops the
// server with a message naming the flag, the file and the reason (gRPC alone
// fails to listen and says why only in its own log).
#ifndef METAOPT_SERVER_TLS_FILES_H_
#define METAOPT_SERVER_TLS_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace metaopt::server {

// The server certificate's subject and validity, for the start-up log.
struct CertificateInfo {
  std::string subject;  // one line, e.g. "CN = metaopt.example"
  absl::Time not_before;
  absl::Time not_after;
};

// Checks the PEM text `cert_pem` (read from --tls-cert `cert_file`: the leaf
// certificate first, then its chain) and `key_pem` (--tls-key `key_file`):
// INVALID_ARGUMENT when either does not parse, when the key is not the
// certificate's, or when the certificate expired before `now`. Thread-safe.
absl::StatusOr<CertificateInfo> CheckServerCertificate(
    const std::string& cert_pem, const std::string& cert_file,
    const std::string& key_pem, const std::string& key_file, absl::Time now);

// INVALID_ARGUMENT unless `pem` (--tls-client-ca `file`) holds at least one
// certificate and nothing that fails to parse. Thread-safe.
absl::Status CheckCaCertificates(const std::string& pem,
                                 const std::string& file);

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_TLS_FILES_H_
