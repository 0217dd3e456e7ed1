// grpcurl-style discovery: server reflection lists the service and serves its
// descriptors, and the standard health service reports SERVING. Runs the
// metaopt-server binary as a child process: the server library links gRPC's own
// reflection messages, which would clash with this test's copy.
#include <chrono>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::testing {
namespace {

using ::grpc::reflection::v1alpha::ServerReflection;
using ::grpc::reflection::v1alpha::ServerReflectionRequest;
using ::grpc::reflection::v1alpha::ServerReflectionResponse;
using ::testing::Contains;

std::unique_ptr<grpc::ClientContext> ContextWithDeadline() {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(30));
  return context;
}

class ReflectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const int port = server_.Start();
    ASSERT_GT(port, 0);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                   grpc::InsecureChannelCredentials());
  }
  ScopedTempDir dir_;
  ServerProcess server_{
      METAOPT_SERVER_BINARY,
      {"--listen=127.0.0.1:0", "--db=" + dir_.File("metaopt.db"),
       "--models=" + dir_.File("models")},
      dir_.File("server.log")};
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(ReflectionTest, ListsTheServiceAndServesItsDescriptor) {
  auto stub = ServerReflection::NewStub(channel_);
  auto context = ContextWithDeadline();
  auto stream = stub->ServerReflectionInfo(context.get());
  ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  std::vector<std::string> names;
  for (const auto& service : response.list_services_response().service()) {
    names.push_back(service.name());
  }
  EXPECT_THAT(names, Contains("metaopt.v1.OptimizerService"));
  EXPECT_THAT(names, Contains("grpc.health.v1.Health"));

  ServerReflectionRequest symbol;
  symbol.set_file_containing_symbol("metaopt.v1.OptimizerService");
  ASSERT_TRUE(stream->Write(symbol));
  ASSERT_TRUE(stream->Read(&response));
  ASSERT_GT(response.file_descriptor_response().file_descriptor_proto_size(),
            0);
  bool found_suggest = false;
  for (const std::string& bytes :
       response.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(bytes));
    for (const auto& service : file.service()) {
      for (const auto& method : service.method())
        found_suggest |= method.name() == "Suggest";
    }
  }
  EXPECT_TRUE(found_suggest);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ReflectionTest, HealthReportsServing) {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  ASSERT_TRUE(
      stub->Check(ContextWithDeadline().get(), request, &response).ok());
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

}  // namespace
}  // namespace metaopt::testing
