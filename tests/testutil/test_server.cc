#include "tests/testutil/test_server.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"

namespace metaopt::testing {

TestServer::TestServer(server::ServerOptions options)
    : options_(std::move(options)) {
  options_.listen = "127.0.0.1:0";
  Start();
}

TestServer::~TestServer() { Stop(); }

void TestServer::Start() {
  auto server = server::Server::BuildAndStart(options_);
  if (!server.ok()) {
    ADD_FAILURE() << "server did not start: " << server.status();
    return;
  }
  server_ = *std::move(server);
  channel_ = grpc::CreateChannel(address(), grpc::InsecureChannelCredentials());
  stub_ = v1::OptimizerService::NewStub(channel_);
}

void TestServer::Stop() {
  stub_.reset();
  channel_.reset();
  if (server_ != nullptr) {
    server_->Shutdown(absl::Seconds(5));
    server_->Wait();
    server_.reset();
  }
}

void TestServer::Restart() {
  Stop();
  Start();
}

std::string TestServer::address() const {
  return absl::StrCat("127.0.0.1:", server_ == nullptr ? 0 : server_->port());
}

std::unique_ptr<grpc::ClientContext> ContextWithDeadline() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(30));
  return context;
}

}  // namespace metaopt::testing
