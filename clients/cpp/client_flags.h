// Command-line options that say how to reach a metaopt server, shared by the
// C++ command-line tools (metaoptctl, metaopt-loadgen) so that each spells and
// documents them the same way.
//
//   MetaoptClient::Options options;
//   CLI::App app{"..."};
//   AddConnectionFlags(app, &options);
//   CLI11_PARSE(app, argc, argv);
//   auto client = MetaoptClient::Create(options);
#ifndef METAOPT_CLIENTS_CPP_CLIENT_FLAGS_H_
#define METAOPT_CLIENTS_CPP_CLIENT_FLAGS_H_

#include <CLI/CLI.hpp>

#include "clients/cpp/metaopt_client.h"

namespace metaopt {

// Adds --server (default $METAOPT_SERVER, else options->address), --token
// (default $METAOPT_TOKEN), --tls, --tls-ca, --tls-cert, --tls-key and
// --tls-server-name to `app`. Parsing writes them into options->address,
// token and the tls fields; `options` must outlive the parse. Checking the
// combination (a certificate without its key, unreadable files) is left to
// MetaoptClient::Create.
void AddConnectionFlags(CLI::App& app, MetaoptClient::Options* options);

}  // namespace metaopt

#endif  // METAOPT_CLIENTS_CPP_CLIENT_FLAGS_H_
