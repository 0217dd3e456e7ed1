// AddConnectionFlags: every option lands in MetaoptClient::Options, and the
// address and token fall back to $METAOPT_SERVER and $METAOPT_TOKEN.
#include "clients/cpp/client_flags.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace metaopt {
namespace {

// Parses `args` (after the program name) into a copy of `defaults`.
MetaoptClient::Options Parse(std::vector<std::string> args,
                             MetaoptClient::Options defaults = {}) {
  CLI::App app{"test"};
  AddConnectionFlags(app, &defaults);
  args.insert(args.begin(), "tool");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  app.parse(static_cast<int>(argv.size()), argv.data());
  return defaults;
}

class ClientFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("METAOPT_SERVER");
    unsetenv("METAOPT_TOKEN");
  }
  void TearDown() override { SetUp(); }
};

TEST_F(ClientFlagsTest, EveryOptionLandsInTheClientOptions) {
  const MetaoptClient::Options options = Parse(
      {"--server", "example:1", "--token", "t0k", "--tls", "--tls-ca", "ca.pem",
       "--tls-cert", "client.pem", "--tls-key", "client.key",
       "--tls-server-name", "metaopt.internal"});
  EXPECT_EQ(options.address, "example:1");
  EXPECT_EQ(options.token, "t0k");
  EXPECT_TRUE(options.tls);
  EXPECT_EQ(options.tls_ca_file, "ca.pem");
  EXPECT_EQ(options.tls_cert_file, "client.pem");
  EXPECT_EQ(options.tls_key_file, "client.key");
  EXPECT_EQ(options.tls_server_name, "metaopt.internal");
}

TEST_F(ClientFlagsTest, WithoutOptionsTheDefaultsStay) {
  MetaoptClient::Options defaults;
  defaults.address = "127.0.0.1:7";
  const MetaoptClient::Options options = Parse({}, defaults);
  EXPECT_EQ(options.address, "127.0.0.1:7");
  EXPECT_EQ(options.token, "");
  EXPECT_FALSE(options.tls);
  EXPECT_EQ(options.tls_ca_file, "");
}

TEST_F(ClientFlagsTest, AddressAndTokenComeFromTheEnvironment) {
  setenv("METAOPT_SERVER", "env-host:2", 1);
  setenv("METAOPT_TOKEN", "env-token", 1);
  MetaoptClient::Options options = Parse({});
  EXPECT_EQ(options.address, "env-host:2");
  EXPECT_EQ(options.token, "env-token");
  // The command line wins.
  options = Parse({"--server", "cli:3", "--token", "cli-token"});
  EXPECT_EQ(options.address, "cli:3");
  EXPECT_EQ(options.token, "cli-token");
}

}  // namespace
}  // namespace metaopt
