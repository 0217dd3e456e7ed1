#ifndef METAOPT_TESTS_TESTUTIL_TEST_SERVER_H_
#define METAOPT_TESTS_TESTUTIL_TEST_SERVER_H_

#include <memory>
#include <string>

#include "grpcpp/channel.h"
#include "metaopt/v1/optimizer_service.grpc.pb.h"
#include "server/server.h"

namespace metaopt::testing {

// The real metaopt server, in process, on 127.0.0.1 with a free port, over the
// given database. Not thread-safe to Restart() while stubs are in use; stubs
// themselves are thread-safe.
class TestServer {
 public:
  explicit TestServer(server::ServerOptions options);
  ~TestServer();

  // Stops the server (gracefully) and starts a new one on the same database.
  void Restart();
  // Stops the server.
  void Stop();

  std::string address() const;
  v1::OptimizerService::Stub& stub() { return *stub_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }
  server::Server& server() { return *server_; }

 private:
  void Start();

  server::ServerOptions options_;
  std::unique_ptr<server::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::OptimizerService::Stub> stub_;
};

// A context with a 30-second deadline (every test call sets one).
std::unique_ptr<grpc::ClientContext> ContextWithDeadline();

}  // namespace metaopt::testing

#endif  // METAOPT_TESTS_TESTUTIL_TEST_SERVER_H_
