#include "clients/cpp/client_flags.h"

namespace metaopt {

void AddConnectionFlags(CLI::App& app, MetaoptClient::Options* options) {
  app.add_option("--server", options->address,
                 "Server address HOST:PORT (default: $METAOPT_SERVER, else " +
                     options->address + ")")
      ->envname("METAOPT_SERVER");
  app.add_option("--token", options->token,
                 "Bearer token for a server with --tokens (default: "
                 "$METAOPT_TOKEN; the variable keeps it out of 'ps')")
      ->envname("METAOPT_TOKEN");
  app.add_flag("--tls", options->tls,
               "Use TLS (implied by the other --tls-* options); without "
               "--tls-ca the system's CA certificates verify the server");
  app.add_option("--tls-ca", options->tls_ca_file,
                 "PEM CA certificates that signed the server's certificate");
  app.add_option("--tls-cert", options->tls_cert_file,
                 "PEM client certificate, for a server that requires one "
                 "(mutual TLS)");
  app.add_option("--tls-key", options->tls_key_file,
                 "PEM private key of --tls-cert");
  app.add_option("--tls-server-name", options->tls_server_name,
                 "Name to verify the server's certificate against (default: "
                 "the host of --server)");
}

}  // namespace metaopt
