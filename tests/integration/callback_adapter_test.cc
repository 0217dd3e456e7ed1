// The callback adapters (server/callback_adapter.h) on a real gRPC server on
// 127.0.0.1 port 0, with a test service
// (proto/metaopt/test/adapter_test.proto): a unary method and a
// server-streaming one.
#include "server/callback_adapter.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/common/mutex.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "metaopt/test/adapter_test.grpc.pb.h"
#include "server/work_pool.h"

namespace metaopt::server {
namespace {

using metaopt::test::AdapterTest;
using metaopt::test::Count;

// Unary: n = 1 for name "up", NOT_FOUND naming it otherwise. Stream: n
// messages numbered 0..n-1, then OK; for name "fail" NOT_FOUND after 2
// messages; for name "forever" writes until Write fails, then records that it
// stopped.
class FakeService final : public AdapterTest::CallbackService {
 public:
  explicit FakeService(WorkPool* pool) : pool_(pool) {}

  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context,
                                  const Count* request,
                                  Count* response) override {
    return RunUnaryOnPool(
        *pool_, context, request, response,
        [](const grpc::ServerContextBase&, const Count& in, Count* out) {
          if (in.name() != "up")
            return grpc::Status(grpc::StatusCode::NOT_FOUND, in.name());
          out->set_name(in.name());
          out->set_n(1);
          return grpc::Status::OK;
        });
  }

  grpc::ServerWriteReactor<Count>* Stream(grpc::CallbackServerContext* context,
                                          const Count* request) override {
    return RunServerStreamOnPool<Count>(
        *pool_, context, request,
        [this](const grpc::ServerContextBase&, const Count& in,
               grpc::ServerWriterInterface<Count>* writer) {
          Count message;
          if (in.name() == "forever") {
            int written = 0;
            do {
              message.set_n(written++);
            } while (writer->Write(message));
            stopped_writing = true;
            return grpc::Status::OK;
          }
          const int count = in.name() == "fail" ? 2 : in.n();
          for (int i = 0; i < count; ++i) {
            message.set_n(i);
            if (!writer->Write(message)) return grpc::Status::CANCELLED;
          }
          if (in.name() == "fail")
            return grpc::Status(grpc::StatusCode::NOT_FOUND, "gone");
          return grpc::Status::OK;
        });
  }

  std::atomic<bool> stopped_writing{false};

 private:
  WorkPool* const pool_;
};

class CallbackAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = AdapterTest::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_ != nullptr) {
      server_->Shutdown();
      server_->Wait();
    }
  }

  // One worker: every call beyond the first waits in the queue.
  WorkPool pool_{1};
  FakeService service_{&pool_};
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<AdapterTest::Stub> stub_;
};

TEST_F(CallbackAdapterTest, UnaryCallsBeyondTheWorkersAllGetTheirAnswer) {
  constexpr int kCalls = 32;
  std::vector<std::thread> callers;
  std::vector<grpc::Status> statuses(kCalls);
  std::vector<Count> responses(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      grpc::ClientContext context;
      Count request;
      request.set_name(i % 2 == 0 ? "up" : absl::StrCat("down-", i));
      statuses[i] = stub_->Unary(&context, request, &responses[i]);
    });
  }
  for (std::thread& caller : callers) caller.join();
  for (int i = 0; i < kCalls; ++i) {
    if (i % 2 == 0) {
      EXPECT_TRUE(statuses[i].ok()) << statuses[i].error_message();
      EXPECT_EQ(responses[i].n(), 1);
    } else {
      EXPECT_EQ(statuses[i].error_code(), grpc::StatusCode::NOT_FOUND);
      EXPECT_EQ(statuses[i].error_message(), absl::StrCat("down-", i));
    }
  }
}

TEST_F(CallbackAdapterTest, StreamDeliversEveryMessageInOrder) {
  grpc::ClientContext context;
  Count request;
  request.set_n(7);
  auto reader = stub_->Stream(&context, request);
  std::vector<int> got;
  Count message;
  while (reader->Read(&message)) got.push_back(message.n());
  const grpc::Status status = reader->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(got, std::vector<int>({0, 1, 2, 3, 4, 5, 6}));
}

TEST_F(CallbackAdapterTest, StreamEndsWithTheHandlersError) {
  grpc::ClientContext context;
  Count request;
  request.set_name("fail");
  auto reader = stub_->Stream(&context, request);
  int got = 0;
  Count message;
  while (reader->Read(&message)) ++got;
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(got, 2);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "gone");
}

// Several streams share one worker in turn: the second waits for the first.
TEST_F(CallbackAdapterTest, StreamsBeyondTheWorkersWaitTheirTurn) {
  constexpr int kStreams = 4;
  std::vector<std::thread> readers;
  std::vector<int> counts(kStreams, 0);
  std::vector<grpc::Status> statuses(kStreams);
  for (int i = 0; i < kStreams; ++i) {
    readers.emplace_back([&, i] {
      grpc::ClientContext context;
      Count request;
      request.set_n(10 + i);
      auto reader = stub_->Stream(&context, request);
      Count message;
      while (reader->Read(&message)) ++counts[i];
      statuses[i] = reader->Finish();
    });
  }
  for (std::thread& reader : readers) reader.join();
  for (int i = 0; i < kStreams; ++i) {
    EXPECT_TRUE(statuses[i].ok()) << statuses[i].error_message();
    EXPECT_EQ(counts[i], 10 + i);
  }
}

// A client that goes away ends the handler's writing: Write returns false.
TEST_F(CallbackAdapterTest, CancelledStreamStopsTheHandler) {
  {
    grpc::ClientContext context;
    Count request;
    request.set_name("forever");
    auto reader = stub_->Stream(&context, request);
    Count message;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(reader->Read(&message));
    context.TryCancel();
    while (reader->Read(&message)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // The worker is free again: another call gets its answer.
  grpc::ClientContext context;
  Count request;
  request.set_name("up");
  Count response;
  EXPECT_TRUE(stub_->Unary(&context, request, &response).ok());
  EXPECT_TRUE(service_.stopped_writing.load());
}

}  // namespace
}  // namespace metaopt::server
