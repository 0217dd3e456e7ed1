// Requests whose bytes gRPC cannot parse into the method's message type: the
// real server on 127.0.0.1 port 0 answers INVALID_ARGUMENT naming the type
// (gRPC alone answers INTERNAL with an empty message).
#include "server/malformed_request.h"

#include <string>

#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/impl/client_unary_call.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/byte_buffer.h"
#include "gtest/gtest.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::testing {
namespace {

using ::testing::HasSubstr;

class MalformedRequestTest : public ::testing::Test {
 protected:
  MalformedRequestTest() : server_(Options()) {}

  server::ServerOptions Options() {
    server::ServerOptions options;
    options.db_path = dir_.File("metaopt.db");
    options.models_dir = dir_.File("models");
    return options;
  }

  // Sends `bytes` as the request of `method` ("/package.Service/Method").
  grpc::Status CallRaw(const std::string& method, const std::string& bytes) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    const grpc::internal::RpcMethod rpc(method.c_str(),
                                        grpc::internal::RpcMethod::NORMAL_RPC);
    return grpc::internal::BlockingUnaryCall<grpc::ByteBuffer,
                                             grpc::ByteBuffer>(
        server_.channel().get(), rpc, ContextWithDeadline().get(), request,
        &response);
  }

  ScopedTempDir dir_;
  TestServer server_;
};

TEST_F(MalformedRequestTest, BytesThatAreNotProtobufAreInvalidArgument) {
  // Field 1, length-delimited, claiming 100 bytes of which 2 follow.
  const grpc::Status status =
      CallRaw("/metaopt.v1.OptimizerService/GetStudy", std::string("\x0a\x64"
                                                                   "ab",
                                                                   4));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("request: not a valid metaopt.v1.GetStudyRequest"));
}

TEST_F(MalformedRequestTest, InvalidUtf8InStudyIdOrClientIdIsInvalidArgument) {
  // GetStudyRequest.study_id (field 1) = "\xff\xfe".
  grpc::Status status = CallRaw("/metaopt.v1.OptimizerService/GetStudy",
                                std::string("\x0a\x02\xff\xfe", 4));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("GetStudyRequest"));
  EXPECT_THAT(status.error_message(), HasSubstr("UTF-8"));
  // SuggestRequest.study_id = "s", client_id (field 3) = "w\xc3" (a cut
  // two-byte sequence).
  status = CallRaw("/metaopt.v1.OptimizerService/Suggest",
                   std::string("\x0a\x01s\x1a\x02w\xc3", 7));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("metaopt.v1.SuggestRequest"));
}

TEST_F(MalformedRequestTest, WellFormedRequestsAndTheirErrorsAreUnchanged) {
  v1::GetStudyRequest request;
  request.set_study_id("absent");
  grpc::Status status = CallRaw("/metaopt.v1.OptimizerService/GetStudy",
                                request.SerializeAsString());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  v1::CreateStudyRequest create;
  create.set_study_id("ok");
  *create.mutable_spec() = PipelineSpec();
  status = CallRaw("/metaopt.v1.OptimizerService/CreateStudy",
                   create.SerializeAsString());
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST(MalformedRequestMessageTest, NamesTheRequestTypeOfKnownMethods) {
  EXPECT_THAT(
      server::MalformedRequestMessage("/metaopt.v1.OptimizerService/Observe"),
      HasSubstr("not a valid metaopt.v1.ObserveRequest"));
  EXPECT_THAT(server::MalformedRequestMessage("/no.Such/Method"),
              HasSubstr("not a valid request message"));
  EXPECT_THAT(server::MalformedRequestMessage(""),
              HasSubstr("not a valid request message"));
}

}  // namespace
}  // namespace metaopt::testing
