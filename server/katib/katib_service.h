// metaopt as a Kubeflow Katib algorithm service: Katib's Suggestion and
// EarlyStopping gRPC services (API api.v1.beta1) over the study engine. One
// Katib Experiment is one metaopt study; docs/katib.md gives the mapping.
#ifndef METAOPT_SERVER_KATIB_KATIB_SERVICE_H_
#define METAOPT_SERVER_KATIB_KATIB_SERVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/common/mutex.h"
#include "core/study/study_engine.h"
#include "katib/v1beta1/api.grpc.pb.h"
#include "server/katib/katib_space.h"
#include "server/rpc_record.h"
#include "server/work_pool.h"

namespace metaopt::server::katib {

struct KatibOptions {
  // The Kubernetes namespace of an experiment whose call does not name one
  // (see NamespaceOf; Katib's messages do not carry it): part of each study
  // id, and the study's owner when `owner_from_namespace`.
  std::string ns = "default";
  // Set when the server authenticates its own API (--tokens): the studies
  // then belong to owner `ns`, so that the namespace's token reads them.
  bool owner_from_namespace = false;
};

// The logic of both services. Each call maps the experiment to its study
// (created on first use), records the trials Katib reports that the study
// does not hold yet, and then suggests or computes rules. Recording is
// idempotent: Katib sends every trial on every call, in any order, and a
// Katib trial is matched to a metaopt trial by its parameter assignment (see
// Reconcile). Thread-safe: calls about one experiment are serialized by a
// per-study mutex (held across its engine calls); calls about different
// experiments run in parallel.
class KatibAdapter {
 public:
  // `engine` must outlive the adapter.
  KatibAdapter(study::StudyEngine* engine, KatibOptions options);

  // `ns` is the experiment's namespace (NamespaceOf the call).
  absl::Status ValidateAlgorithmSettings(
      const kapi::ValidateAlgorithmSettingsRequest& request,
      const std::string& ns);
  absl::StatusOr<kapi::GetSuggestionsReply> GetSuggestions(
      const kapi::GetSuggestionsRequest& request, const std::string& ns,
      absl::Time deadline);
  absl::StatusOr<kapi::GetEarlyStoppingRulesReply> GetEarlyStoppingRules(
      const kapi::GetEarlyStoppingRulesRequest& request, const std::string& ns,
      absl::Time deadline);
  absl::Status ValidateEarlyStoppingSettings(
      const kapi::ValidateEarlyStoppingSettingsRequest& request);
  absl::Status SetTrialStatus(const kapi::SetTrialStatusRequest& request);

  // The namespace of a call whose :authority is `authority`: Katib's
  // controller dials <suggestion>-<algorithm>.<namespace>:<port>, so a host
  // of the Kubernetes Service form <service>.<namespace>, or
  // <service>.<namespace>.svc[.<cluster domain>], names it (also through a
  // TCP forwarder); any other host (an IP address, localhost, another DNS
  // name) gives options' `ns`.
  std::string NamespaceOf(absl::string_view authority) const;

 private:
  // The experiment's study, created on first use, with its space.
  struct StudyView {
    std::string study_id;
    v1::StudySpec spec;
    std::unique_ptr<KatibSpace> space;
    study::CallContext context;
  };
  absl::StatusOr<StudyView> OpenStudy(const kapi::Experiment& experiment,
                                      const std::string& ns,
                                      absl::Time deadline);
  // Every trial of the study, all pages.
  absl::StatusOr<std::vector<v1::Trial>> ListAllTrials(const StudyView& view);
  // Records the finished Katib trials the study does not hold yet and
  // extends the leases of the metaopt trials of the running ones.
  absl::Status Reconcile(
      const StudyView& view,
      const google::protobuf::RepeatedPtrField<kapi::Trial>& trials);
  Mutex& StudyMutex(const std::string& study_id) ABSL_LOCKS_EXCLUDED(map_mu_);

  study::StudyEngine* const engine_;
  const KatibOptions options_;
  Mutex map_mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Mutex>> study_mu_
      ABSL_GUARDED_BY(map_mu_);
};

// Katib's Suggestion service on the work pool. Every call is logged (LogRpc)
// and reported to `observer` as method "katib.<Name>" with the algorithm its
// experiment names. Thread-safe.
class KatibSuggestionService final : public kapi::Suggestion::CallbackService {
 public:
  // `adapter`, `pool` and `observer` (may be null) must outlive the service.
  KatibSuggestionService(KatibAdapter* adapter, WorkPool* pool,
                         RpcObserver* observer = nullptr)
      : adapter_(adapter), pool_(pool), observer_(observer) {}

  grpc::ServerUnaryReactor* GetSuggestions(
      grpc::CallbackServerContext* context,
      const kapi::GetSuggestionsRequest* request,
      kapi::GetSuggestionsReply* reply) override;
  grpc::ServerUnaryReactor* ValidateAlgorithmSettings(
      grpc::CallbackServerContext* context,
      const kapi::ValidateAlgorithmSettingsRequest* request,
      kapi::ValidateAlgorithmSettingsReply* reply) override;

 private:
  KatibAdapter* const adapter_;
  WorkPool* const pool_;
  RpcObserver* const observer_;
};

// Katib's EarlyStopping service on the work pool, logged and reported as the
// Suggestion service is. Thread-safe.
class KatibEarlyStoppingService final
    : public kapi::EarlyStopping::CallbackService {
 public:
  // `adapter`, `pool` and `observer` (may be null) must outlive the service.
  KatibEarlyStoppingService(KatibAdapter* adapter, WorkPool* pool,
                            RpcObserver* observer = nullptr)
      : adapter_(adapter), pool_(pool), observer_(observer) {}

  grpc::ServerUnaryReactor* GetEarlyStoppingRules(
      grpc::CallbackServerContext* context,
      const kapi::GetEarlyStoppingRulesRequest* request,
      kapi::GetEarlyStoppingRulesReply* reply) override;
  grpc::ServerUnaryReactor* SetTrialStatus(
      grpc::CallbackServerContext* context,
      const kapi::SetTrialStatusRequest* request,
      kapi::SetTrialStatusReply* reply) override;
  grpc::ServerUnaryReactor* ValidateEarlyStoppingSettings(
      grpc::CallbackServerContext* context,
      const kapi::ValidateEarlyStoppingSettingsRequest* request,
      kapi::ValidateEarlyStoppingSettingsReply* reply) override;

 private:
  KatibAdapter* const adapter_;
  WorkPool* const pool_;
  RpcObserver* const observer_;
};

// The early-stopping rules Katib's metrics collector applies, from the
// study's rule and its finished trials (docs/katib.md, "Early stopping"):
// median: the objective compared with the median of the COMPLETED and
// STOPPED trials' values once `min_trials` of them exist, from start_step;
// ASHA: its first rung only, the value of the
// max(1, floor(n / reduction_factor))-th best of n >= reduction_factor
// finished trials, from max(min_resource, grace_period). None otherwise.
std::vector<kapi::EarlyStoppingRule> RulesOf(
    const v1::StudySpec& spec, const std::vector<v1::Trial>& trials);

}  // namespace metaopt::server::katib

#endif  // METAOPT_SERVER_KATIB_KATIB_SERVICE_H_
