#include "server/optimizer_service_impl.h"

#include <grpc/support/time.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/common/memory.h"
#include "core/common/status_macros.h"
#include "core/study/call_context.h"
#include "server/callback_adapter.h"
#include "server/grpc_status_util.h"

namespace metaopt::server {
namespace {

// What the engine needs to know about the call: its deadline and, with
// authentication (`auth` not null), its owner. UNAUTHENTICATED when `auth` is
// set and the call carries no valid token.
absl::StatusOr<study::CallContext> ContextOf(
    const grpc::ServerContextBase& context, const TokenAuthenticator* auth) {
  study::CallContext call;
  if (auth != nullptr) {
    const auto [first, last] =
        context.client_metadata().equal_range("authorization");
    std::optional<absl::string_view> authorization;
    if (first != last) {
      if (std::next(first) != last) {
        return absl::UnauthenticatedError(
            "more than one 'authorization' metadata entry");
      }
      authorization =
          absl::string_view(first->second.data(), first->second.size());
    }
    METAOPT_ASSIGN_OR_RETURN(call.owner, auth->Authenticate(authorization));
  }
  const gpr_timespec deadline =
      gpr_convert_clock_type(context.raw_deadline(), GPR_CLOCK_REALTIME);
  if (gpr_time_cmp(deadline, gpr_inf_future(GPR_CLOCK_REALTIME)) != 0) {
    call.deadline = absl::FromUnixNanos(
        static_cast<int64_t>(deadline.tv_sec) * 1000000000 + deadline.tv_nsec);
  }
  return call;
}

// Appends `id` unless it is 0 (unset) or already listed.
void AddTrialId(int64_t id, std::vector<int64_t>& ids) {
  if (id != 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) {
    ids.push_back(id);
  }
}

// The trials a request names or a response returns, for the RPC's log line
// (none for other messages; ListTrials pages are not listed).
template <typename Message>
void AddTrialIds(const Message&, std::vector<int64_t>&) {}
void AddTrialIds(const v1::ObserveRequest& request, std::vector<int64_t>& ids) {
  AddTrialId(request.trial_id(), ids);
}
void AddTrialIds(const v1::GetTrialRequest& request,
                 std::vector<int64_t>& ids) {
  AddTrialId(request.trial_id(), ids);
}
void AddTrialIds(const v1::HeartbeatRequest& request,
                 std::vector<int64_t>& ids) {
  for (int64_t id : request.trial_ids()) AddTrialId(id, ids);
}
void AddTrialIds(const v1::ReportIntermediateRequest& request,
                 std::vector<int64_t>& ids) {
  AddTrialId(request.trial_id(), ids);
}
void AddTrialIds(const v1::SuggestResponse& response,
                 std::vector<int64_t>& ids) {
  for (const v1::Trial& trial : response.trials()) AddTrialId(trial.id(), ids);
}
void AddTrialIds(const v1::ObserveResponse& response,
                 std::vector<int64_t>& ids) {
  AddTrialId(response.trial().id(), ids);
}

// The study a request is about ("" for ListStudies, ListModels).
template <typename Request, typename = void>
struct HasStudyId : std::false_type {};
template <typename Request>
struct HasStudyId<Request,
                  std::void_t<decltype(std::declval<Request>().study_id())>>
    : std::true_type {};

template <typename Request>
std::string StudyIdOf(const Request& request) {
  if constexpr (HasStudyId<Request>::value) {
    constexpr size_t kMaxLoggedLength = 128;  // ids are at most 128 valid chars
    return request.study_id().substr(0, kMaxLoggedLength);
  } else {
    return "";
  }
}

// Calls `method` on the engine and moves its result into `response`; logs the
// RPC and reports it to `observer` (may be null).
template <typename Request, typename Response, typename Method>
grpc::Status Forward(const char* name, study::StudyEngine* engine,
                     const TokenAuthenticator* auth, RpcObserver* observer,
                     Method method, const grpc::ServerContextBase& context,
                     const Request& request, Response* response) {
  const absl::Time start = absl::Now();
  RpcRecord record;
  record.method = name;
  record.study_id = StudyIdOf(request);
  AddTrialIds(request, record.trial_ids);
  grpc::Status status;
  absl::StatusOr<study::CallContext> call = ContextOf(context, auth);
  if (!call.ok()) {
    status = ToGrpcStatus(call.status());
  } else {
    // Looked up before the call (DeleteStudy unloads the study) and after it
    // (the call may load or create it).
    if (!record.study_id.empty()) {
      record.algorithm = engine->LoadedAlgorithmKind(record.study_id, *call);
    }
    absl::StatusOr<Response> result = (engine->*method)(request, *call);
    if (result.ok()) {
      *response = *std::move(result);
      AddTrialIds(*response, record.trial_ids);
      if constexpr (std::is_same_v<Request, v1::DeleteStudyRequest>) {
        // The heap the study's surrogate and space used goes back to the
        // system (docs/reliability.md, hardening item 2).
        ReleaseFreedMemory();
      }
    } else {
      status = ToGrpcStatus(result.status());
    }
    if (record.algorithm == v1::ALGORITHM_KIND_UNSPECIFIED &&
        !record.study_id.empty()) {
      record.algorithm = engine->LoadedAlgorithmKind(record.study_id, *call);
    }
  }
  FinishRpc(status, start, observer, record);
  return status;
}

}  // namespace

// Defines the callback method of the unary RPC `Name`: Forward to the
// engine's method `Name`, run on the work pool.
#define METAOPT_CALLBACK_RPC(Name)                                            \
  grpc::ServerUnaryReactor* OptimizerServiceImpl::Name(                       \
      grpc::CallbackServerContext* context, const v1::Name##Request* request, \
      v1::Name##Response* response) {                                         \
    return RunUnaryOnPool(                                                    \
        *pool_, context, request, response,                                   \
        [this](const grpc::ServerContextBase& call,                           \
               const v1::Name##Request& in, v1::Name##Response* out) {        \
          return Forward(#Name, engine_, auth_, observer_,                    \
                         &study::StudyEngine::Name, call, in, out);           \
        });                                                                   \
  }

METAOPT_CALLBACK_RPC(CreateStudy)
METAOPT_CALLBACK_RPC(GetStudy)
METAOPT_CALLBACK_RPC(ListStudies)
METAOPT_CALLBACK_RPC(DeleteStudy)
METAOPT_CALLBACK_RPC(Suggest)
METAOPT_CALLBACK_RPC(Observe)
METAOPT_CALLBACK_RPC(FineTune)
METAOPT_CALLBACK_RPC(GetTrial)
METAOPT_CALLBACK_RPC(ListTrials)
METAOPT_CALLBACK_RPC(ListModels)
METAOPT_CALLBACK_RPC(Heartbeat)
METAOPT_CALLBACK_RPC(ReportIntermediate)
METAOPT_CALLBACK_RPC(GetParetoFront)

#undef METAOPT_CALLBACK_RPC

v1::ExportMetaDatasetResponse ToExportResponse(history::FileChunk chunk) {
  v1::ExportMetaDatasetResponse response;
  response.set_dataset(std::move(chunk.dataset));
  response.set_file(std::move(chunk.file));
  response.set_offset(chunk.offset);
  response.set_data(std::move(chunk.data));
  response.set_last_chunk(chunk.last_chunk);
  return response;
}

grpc::ServerWriteReactor<v1::ExportMetaDatasetResponse>*
OptimizerServiceImpl::ExportMetaDataset(
    grpc::CallbackServerContext* context,
    const v1::ExportMetaDatasetRequest* request) {
  return RunServerStreamOnPool<v1::ExportMetaDatasetResponse>(
      *pool_, context, request,
      [this](const grpc::ServerContextBase& call_context,
             const v1::ExportMetaDatasetRequest& export_request,
             grpc::ServerWriterInterface<v1::ExportMetaDatasetResponse>*
                 writer) {
        return ExportOnPool(call_context, export_request, writer);
      });
}

grpc::Status OptimizerServiceImpl::ExportOnPool(
    const grpc::ServerContextBase& context,
    const v1::ExportMetaDatasetRequest& request,
    grpc::ServerWriterInterface<v1::ExportMetaDatasetResponse>* writer) {
  const absl::Time start = absl::Now();
  RpcRecord record;
  record.method = "ExportMetaDataset";
  record.study_id = request.space_of().substr(0, 128);
  const absl::Status status = [&]() -> absl::Status {
    METAOPT_ASSIGN_OR_RETURN(const study::CallContext call,
                             ContextOf(context, auth_));
    METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<history::HistoryExporter> exporter,
                             engine_->ExportMetaDataset(request, call));
    for (;;) {
      METAOPT_ASSIGN_OR_RETURN(std::optional<history::FileChunk> chunk,
                               exporter->Next());
      if (!chunk.has_value()) return absl::OkStatus();
      if (context.IsCancelled() ||
          !writer->Write(ToExportResponse(*std::move(chunk)))) {
        return absl::CancelledError("the client went away during the export");
      }
    }
  }();
  const grpc::Status grpc_status = ToGrpcStatus(status);
  FinishRpc(grpc_status, start, observer_, record);
  return grpc_status;
}

}  // namespace metaopt::server
