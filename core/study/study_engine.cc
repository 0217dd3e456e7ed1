#include "core/study/study_engine.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/logging.h"
#include "core/common/proto_time.h"
#include "core/common/status_macros.h"
#include "core/policy/policy_factory.h"
#include "core/policy/random_policy.h"
#include "core/study/study_trials.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"

namespace metaopt::study {
namespace {

constexpr int kMaxClientIdLength = 128;
constexpr int kMaxFailureReasonLength = 4096;
constexpr int kMaxMetrics = 256;
constexpr int kMaxFineTuneSteps = 10000;
constexpr int kMaxHeartbeatTrials = 1000;
// The proto's documented ranges of SuggestRequest.count and page_size: the
// options may lower them, not raise them.
constexpr int kHardMaxSuggestCount = 1000;
constexpr int kHardMaxPageSize = 1000;
// Each Suggest that runs the policy updates the study's cost estimate to
// max(measured, kCostDecay * previous): a slow run is remembered at once and
// forgotten over a few faster ones.
constexpr double kCostDecay = 0.75;

absl::Time FromProtoTimestamp(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

// When the lease of an ACTIVE trial ends. Trials stored before leases existed
// have none: their lease runs from their creation.
absl::Time LeaseEnd(const v1::Trial& trial, absl::Duration lease) {
  if (trial.has_lease_expire_time()) {
    return FromProtoTimestamp(trial.lease_expire_time());
  }
  return FromProtoTimestamp(trial.create_time()) + lease;
}

// "1.5s", "20ms": durations in messages and trial metadata.
std::string DurationText(absl::Duration d) {
  return absl::FormatDuration(absl::Trunc(d, absl::Microseconds(1)));
}

// INVALID_ARGUMENT when a spec field holds more than `limit` entries.
absl::Status CheckLimit(int count, int limit, const std::string& path,
                        const char* what) {
  if (count <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      path, ": ", count, " ", what, " exceed this server's limit of ", limit));
}

// The server's configurable size limits; the fixed ones (names, categorical
// values, ...) are checked by space::ValidateAndCanonicalizeStudySpec.
absl::Status CheckSpecLimits(const v1::StudySpec& spec,
                             const EngineOptions& options) {
  const v1::SearchSpace& space = spec.search_space();
  METAOPT_RETURN_IF_ERROR(CheckLimit(space.stages_size(), options.max_stages,
                                     "spec.search_space.stages", "stages"));
  for (int s = 0; s < space.stages_size(); ++s) {
    const v1::Stage& stage = space.stages(s);
    const std::string stage_path =
        absl::StrCat("spec.search_space.stages[", s, "]");
    METAOPT_RETURN_IF_ERROR(
        CheckLimit(stage.algorithms_size(), options.max_algorithms_per_stage,
                   absl::StrCat(stage_path, ".algorithms"), "algorithms"));
    for (int a = 0; a < stage.algorithms_size(); ++a) {
      METAOPT_RETURN_IF_ERROR(CheckLimit(
          stage.algorithms(a).parameters_size(),
          options.max_parameters_per_algorithm,
          absl::StrCat(stage_path, ".algorithms[", a, "].parameters"),
          "parameters"));
    }
  }
  return CheckLimit(spec.candidates_size(), options.max_candidates,
                    "spec.candidates", "candidates");
}

// Page tokens are opaque to clients: web-safe base64 of "<kind>:<cursor>".
std::string EncodePageToken(const std::string& kind,
                            const std::string& cursor) {
  return absl::WebSafeBase64Escape(absl::StrCat(kind, ":", cursor));
}

absl::StatusOr<std::string> DecodePageToken(const std::string& kind,
                                            const std::string& token,
                                            const std::string& rpc) {
  std::string decoded;
  const std::string prefix = absl::StrCat(kind, ":");
  if (!absl::WebSafeBase64Unescape(token, &decoded) ||
      !absl::StartsWith(decoded, prefix)) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token: \"", token.substr(0, 64),
                     "\" is not a token returned by ", rpc));
  }
  return decoded.substr(prefix.size());
}

absl::StatusOr<int> ResolvePageSize(int page_size,
                                    const EngineOptions& options) {
  if (page_size < 0 || page_size > options.max_page_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_size: ", page_size, " is outside [0, ", options.max_page_size,
        "] (0 means ", options.default_page_size, ")"));
  }
  return page_size == 0 ? options.default_page_size : page_size;
}

bool Better(double a, double b, v1::Goal goal) {
  return goal == v1::GOAL_MAXIMIZE ? a > b : a < b;
}

absl::Status ValidateMetrics(
    const google::protobuf::Map<std::string, double>& metrics) {
  if (metrics.size() > kMaxMetrics) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics: ", metrics.size(),
                     " entries exceed the limit of ", kMaxMetrics));
  }
  for (const auto& [name, value] : metrics) {
    if (name.empty() || name.size() > 128) {
      return absl::InvalidArgumentError(
          absl::StrCat("metrics: name \"", name.substr(0, 64),
                       "\" must have 1..128 characters"));
    }
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics[\"", name, "\"]: ", value, " is not a finite number"));
    }
  }
  return absl::OkStatus();
}

absl::Status StudyNotFound(const std::string& study_id) {
  return absl::NotFoundError(
      absl::StrCat("study \"", study_id, "\" does not exist"));
}

}  // namespace

absl::Status CheckEngineOptions(const EngineOptions& options) {
  struct Limit {
    const char* name;
    int value;
    int max;
  };
  const Limit limits[] = {
      {"max_suggest_count", options.max_suggest_count, kHardMaxSuggestCount},
      {"max_page_size", options.max_page_size, kHardMaxPageSize},
      {"default_page_size", options.default_page_size, options.max_page_size},
      {"max_stages", options.max_stages, space::kMaxStages},
      {"max_algorithms_per_stage", options.max_algorithms_per_stage,
       space::kMaxAlgorithmsPerStage},
      {"max_parameters_per_algorithm", options.max_parameters_per_algorithm,
       space::kMaxParametersPerAlgorithm},
      {"max_candidates", options.max_candidates, space::kMaxCandidates},
  };
  for (const Limit& limit : limits) {
    if (limit.value < 1 || limit.value > limit.max) {
      return absl::InvalidArgumentError(absl::StrCat(
          limit.name, ": ", limit.value, " is outside [1, ", limit.max, "]"));
    }
  }
  if (options.trial_lease <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial_lease: ", DurationText(options.trial_lease),
                     " must be positive"));
  }
  if (options.deadline_margin < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("deadline_margin: ", DurationText(options.deadline_margin),
                     " must not be negative"));
  }
  if (options.max_locked_policy_cost < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_locked_policy_cost: ",
        DurationText(options.max_locked_policy_cost), " must not be negative"));
  }
  if (options.optimistic_attempts < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimistic_attempts: ", options.optimistic_attempts,
                     " must not be negative"));
  }
  if (!options.clock) {
    return absl::InvalidArgumentError("clock: must be set");
  }
  if (options.max_studies_per_owner < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_studies_per_owner: ", options.max_studies_per_owner,
                     " must not be negative (0: no limit)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateStudyId(const std::string& study_id, const char* field) {
  if (study_id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must not be empty"));
  }
  if (study_id.size() > 128) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": \"", study_id.substr(0, 32),
                     "...\" is longer than 128 characters"));
  }
  for (size_t i = 0; i < study_id.size(); ++i) {
    const char c = study_id[i];
    const bool alnum = absl::ascii_isalnum(static_cast<unsigned char>(c));
    if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": \"", absl::CHexEscape(study_id),
                       "\" must be letters, digits, '.', '_' or '-', starting "
                       "with a letter or digit"));
    }
  }
  return absl::OkStatus();
}

struct StudyEngine::Entry {
  // Immutable after load.
  storage::StudyKey key;  // (owner, study_id)
  v1::Study stored;       // id, canonical spec, create_time, bound_model
  std::unique_ptr<const space::SearchSpace> space;
  absl::flat_hash_set<std::string> candidate_keys;
  // The same keys in catalogue order (policy::StudyView::candidate_keys).
  std::vector<std::string> candidate_key_list;

  Mutex mu;
  StudyTrials trials ABSL_GUARDED_BY(mu);
  std::shared_ptr<const policy::Policy> policy ABSL_GUARDED_BY(mu);
  // Bumped by every change of `trials` or `policy` (not by lease
  // extensions, which policies do not see).
  int64_t version ABSL_GUARDED_BY(mu) = 0;
  bool deleted ABSL_GUARDED_BY(mu) = false;
  // No ACTIVE trial's lease ends before this (a lower bound: ExpireLeases
  // scans the trials only once it has passed). The past: not yet scanned.
  absl::Time next_lease_end ABSL_GUARDED_BY(mu) = absl::InfinitePast();
  // Recent wall time of one policy Suggest (see kCostDecay), once one was
  // measured.
  absl::Duration suggest_cost ABSL_GUARDED_BY(mu) = absl::ZeroDuration();
  bool suggest_cost_measured ABSL_GUARDED_BY(mu) = false;
};

StudyEngine::StudyEngine(storage::Storage* storage,
                         registry::ModelManager* models, EngineOptions options)
    : storage_(storage), models_(models), options_(std::move(options)) {}

StudyEngine::~StudyEngine() = default;

absl::StatusOr<std::shared_ptr<StudyEngine::Entry>> StudyEngine::FindStudy(
    const storage::StudyKey& key) {
  const std::string& study_id = key.study_id;
  {
    MutexLock lock(&map_mu_);
    auto it = studies_.find(key);
    if (it != studies_.end()) return it->second;
  }
  // Load outside the map lock; if two threads race, the first insert wins.
  auto stored = storage_->GetStudy(key);
  if (absl::IsNotFound(stored.status())) {
    return StudyNotFound(study_id);
  }
  METAOPT_RETURN_IF_ERROR(stored.status());
  auto entry = std::make_shared<Entry>();
  entry->key = key;
  entry->stored = *std::move(stored);
  METAOPT_ASSIGN_OR_RETURN(
      space::SearchSpace space,
      space::SearchSpace::Create(entry->stored.spec().search_space()));
  entry->space = std::make_unique<const space::SearchSpace>(std::move(space));
  for (const v1::Configuration& candidate : entry->stored.spec().candidates()) {
    entry->candidate_key_list.push_back(space::ConfigurationKey(candidate));
    entry->candidate_keys.insert(entry->candidate_key_list.back());
  }
  METAOPT_ASSIGN_OR_RETURN(std::vector<v1::Trial> stored_trials,
                           storage_->LoadTrials(key));
  METAOPT_ASSIGN_OR_RETURN(
      StudyTrials trials,
      StudyTrials::Load(std::move(stored_trials), study_id));
  METAOPT_ASSIGN_OR_RETURN(std::optional<std::string> policy_state,
                           storage_->GetPolicyState(key));
  // A study keeps the model version it was bound to, even after newer ones
  // are published.
  std::shared_ptr<const registry::LoadedModel> model;
  if (!entry->stored.bound_model().empty()) {
    auto bound = registry::ParseModelReference(entry->stored.bound_model(),
                                               "study.bound_model");
    if (bound.ok() && models_ != nullptr) {
      auto loaded = models_->Resolve(*bound);
      if (loaded.ok()) model = *std::move(loaded);
    }
    if (model == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "study \"", study_id, "\" is bound to model ",
          entry->stored.bound_model(),
          ", which the registry can no longer load; restore that version or "
          "delete the study"));
    }
  }
  METAOPT_ASSIGN_OR_RETURN(
      std::shared_ptr<const policy::Policy> policy,
      policy::CreatePolicy(entry->stored.spec(), policy_state, model));
  {
    MutexLock lock(&entry->mu);
    entry->trials = std::move(trials);
    entry->policy = std::move(policy);
  }
  MutexLock lock(&map_mu_);
  auto [it, inserted] = studies_.emplace(key, entry);
  return it->second;
}

v1::Study StudyEngine::DescribeStudy(const Entry& entry) const
    ABSL_NO_THREAD_SAFETY_ANALYSIS /* caller holds entry.mu */ {
  v1::Study study = entry.stored;
  study.set_trial_count(entry.trials.size());
  const v1::Goal goal = entry.stored.spec().objective().goal();
  const v1::Trial* best = nullptr;
  for (const v1::Trial& trial : entry.trials.all()) {
    if (trial.state() == v1::TRIAL_STATE_COMPLETED && trial.has_value() &&
        (best == nullptr || Better(trial.value(), best->value(), goal))) {
      best = &trial;
    }
  }
  // Distinct configurations held (in a catalogue study every trial's
  // configuration is a catalogue entry).
  const size_t held = entry.trials.held_keys().size();
  if (best != nullptr) *study.mutable_best_trial() = *best;
  study.set_state(!entry.candidate_keys.empty() &&
                          held >= entry.candidate_keys.size()
                      ? v1::STUDY_STATE_EXHAUSTED
                      : v1::STUDY_STATE_ACTIVE);
  return study;
}

absl::Status StudyEngine::ExpireLeases(Entry& entry, absl::Time now)
    ABSL_NO_THREAD_SAFETY_ANALYSIS /* caller holds entry.mu */ {
  if (now < entry.next_lease_end) return absl::OkStatus();
  std::vector<v1::Trial> expired;
  absl::Time next = absl::InfiniteFuture();
  for (const int64_t id : entry.trials.active_ids()) {
    const v1::Trial& trial = entry.trials.Get(id);
    const absl::Time end = LeaseEnd(trial, options_.trial_lease);
    if (end > now) {
      next = std::min(next, end);
      continue;
    }
    v1::Trial stale = trial;
    stale.set_state(v1::TRIAL_STATE_STALE);
    *stale.mutable_lease_expire_time() = ToProtoTimestamp(end);
    expired.push_back(std::move(stale));
  }
  if (!expired.empty()) {
    METAOPT_RETURN_IF_ERROR(storage_->PutTrials(entry.key, expired));
    LogInfo(absl::StrCat("study \"", entry.stored.study_id(),
                         "\": ", expired.size(),
                         " trial(s) turned STALE (lease expired), first id ",
                         expired.front().id()));
    for (v1::Trial& trial : expired) entry.trials.Put(std::move(trial));
    ++entry.version;
  }
  entry.next_lease_end = next;
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const registry::LoadedModel>>
StudyEngine::BindModel(const v1::StudySpec& spec) {
  const std::string& named = spec.algorithm().model();
  if (named == "none") return nullptr;
  if (named.empty()) {
    if (models_ == nullptr) return nullptr;
    // Served models by name: the first whose kind the algorithm takes and
    // whose space matches.
    for (auto& model : models_->List()) {
      if (policy::AutoBindsModel(spec.algorithm(), model->artifact.kind()) &&
          registry::CheckMatches(*model, spec.search_space()).ok()) {
        return model;
      }
    }
    return nullptr;
  }
  METAOPT_ASSIGN_OR_RETURN(registry::ModelReference reference,
                           registry::ParseModelReference(named));
  if (models_ == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("spec.algorithm.model: \"", named,
                     "\" cannot be used: the server has no model registry"));
  }
  auto model = models_->Resolve(reference);
  if (!model.ok()) {
    return absl::Status(
        model.status().code(),
        absl::StrCat("spec.algorithm.model: ", model.status().message()));
  }
  METAOPT_RETURN_IF_ERROR(
      policy::CheckModelKind(spec.algorithm(), (*model)->artifact.kind()));
  absl::Status matches = registry::CheckMatches(**model, spec.search_space());
  if (!matches.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.algorithm.model: ", matches.message()));
  }
  return *std::move(model);
}

absl::StatusOr<v1::CreateStudyResponse> StudyEngine::CreateStudy(
    const v1::CreateStudyRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (!request.has_spec())
    return absl::InvalidArgumentError("spec: is required");
  METAOPT_RETURN_IF_ERROR(CheckSpecLimits(request.spec(), options_));
  METAOPT_ASSIGN_OR_RETURN(
      v1::StudySpec spec,
      space::ValidateAndCanonicalizeStudySpec(request.spec()));
  METAOPT_RETURN_IF_ERROR(policy::CheckAlgorithmSupported(spec.algorithm()));
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<const registry::LoadedModel> model,
                           BindModel(spec));
  // A PMF study without candidates runs over its model's whole catalogue:
  // storing it as the study's catalogue keeps exhaustion, duplicate checks and
  // external observations exact.
  if (spec.algorithm().kind() == v1::ALGORITHM_KIND_PMF &&
      spec.candidates().empty() && model != nullptr) {
    METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                             space::SearchSpace::Create(spec.search_space()));
    for (const v1::Configuration& entry : model->artifact.catalogue()) {
      auto canonical = space.Canonicalize(entry, "catalogue");
      if (canonical.ok()) *spec.add_candidates() = *std::move(canonical);
    }
  }
  // Build the policy once so that a spec it cannot serve fails here, with
  // nothing stored.
  METAOPT_RETURN_IF_ERROR(
      policy::CreatePolicy(spec, std::nullopt, model).status());

  v1::Study study;
  study.set_study_id(request.study_id());
  study.set_owner(context.owner);
  *study.mutable_spec() = spec;
  if (model != nullptr) study.set_bound_model(model->reference());
  *study.mutable_create_time() = ToProtoTimestamp(options_.clock());
  study.set_state(v1::STUDY_STATE_ACTIVE);

  absl::Status created;
  {
    // Creates are serialized while a quota is set, so concurrent ones cannot
    // overshoot it. An existing study is returned (create-or-get) whatever the
    // count.
    MutexLock create_lock(&create_mu_);
    if (options_.max_studies_per_owner > 0) {
      METAOPT_ASSIGN_OR_RETURN(const int64_t owned,
                               storage_->CountStudies(context.owner));
      const absl::Status existing =
          storage_->GetStudy({context.owner, request.study_id()}).status();
      if (!existing.ok() && !absl::IsNotFound(existing)) return existing;
      if (owned >= options_.max_studies_per_owner && !existing.ok()) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "study quota exhausted: ",
            context.owner.empty()
                ? std::string("the server")
                : absl::StrCat("owner \"", context.owner, "\""),
            " holds ", owned,
            " studies and the limit per owner "
            "(max_studies_per_owner) is ",
            options_.max_studies_per_owner, "; delete a study first"));
      }
    }
    created = storage_->CreateStudy(study);
  }
  v1::CreateStudyResponse response;
  if (absl::IsAlreadyExists(created)) {
    METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                             FindStudy({context.owner, request.study_id()}));
    if (!google::protobuf::util::MessageDifferencer::Equals(
            entry->stored.spec(), spec)) {
      return absl::AlreadyExistsError(
          absl::StrCat("study \"", request.study_id(),
                       "\" already exists with a different spec; choose "
                       "another study_id or delete it first"));
    }
    MutexLock lock(&entry->mu);
    METAOPT_RETURN_IF_ERROR(ExpireLeases(*entry, options_.clock()));
    *response.mutable_study() = DescribeStudy(*entry);
    response.set_created(false);
    return response;
  }
  METAOPT_RETURN_IF_ERROR(created);
  LogInfo(absl::StrCat("created study \"", request.study_id(), "\" (",
                       v1::AlgorithmKind_Name(spec.algorithm().kind()), ", ",
                       spec.candidates_size(), " candidates)"));
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                           FindStudy({context.owner, request.study_id()}));
  MutexLock lock(&entry->mu);
  *response.mutable_study() = DescribeStudy(*entry);
  response.set_created(true);
  return response;
}

absl::StatusOr<v1::GetStudyResponse> StudyEngine::GetStudy(
    const v1::GetStudyRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                           FindStudy({context.owner, request.study_id()}));
  MutexLock lock(&entry->mu);
  if (entry->deleted) {
    return StudyNotFound(request.study_id());
  }
  METAOPT_RETURN_IF_ERROR(ExpireLeases(*entry, options_.clock()));
  v1::GetStudyResponse response;
  *response.mutable_study() = DescribeStudy(*entry);
  return response;
}

absl::StatusOr<v1::ListStudiesResponse> StudyEngine::ListStudies(
    const v1::ListStudiesRequest& request, const CallContext& context) {
  METAOPT_ASSIGN_OR_RETURN(const int page_size,
                           ResolvePageSize(request.page_size(), options_));
  std::string after;
  if (!request.page_token().empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        after, DecodePageToken("study", request.page_token(), "ListStudies"));
  }
  METAOPT_ASSIGN_OR_RETURN(
      std::vector<v1::Study> stored,
      storage_->ListStudies(context.owner, after, page_size + 1));
  v1::ListStudiesResponse response;
  const bool more = static_cast<int>(stored.size()) > page_size;
  if (more) stored.resize(page_size);
  for (const v1::Study& study : stored) {
    auto entry = FindStudy({context.owner, study.study_id()});
    if (absl::IsNotFound(entry.status())) continue;  // deleted meanwhile
    METAOPT_RETURN_IF_ERROR(entry.status());
    MutexLock lock(&(*entry)->mu);
    if ((*entry)->deleted) continue;
    METAOPT_RETURN_IF_ERROR(ExpireLeases(**entry, options_.clock()));
    *response.add_studies() = DescribeStudy(**entry);
  }
  if (more && !stored.empty()) {
    response.set_next_page_token(
        EncodePageToken("study", stored.back().study_id()));
  }
  return response;
}

absl::StatusOr<v1::DeleteStudyResponse> StudyEngine::DeleteStudy(
    const v1::DeleteStudyRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                           FindStudy({context.owner, request.study_id()}));
  {
    MutexLock lock(&entry->mu);
    if (entry->deleted) {
      return StudyNotFound(request.study_id());
    }
    METAOPT_RETURN_IF_ERROR(storage_->DeleteStudy(entry->key));
    entry->deleted = true;
    ++entry->version;
  }
  {
    MutexLock lock(&map_mu_);
    auto it = studies_.find(entry->key);
    if (it != studies_.end() && it->second == entry) studies_.erase(it);
  }
  LogInfo(absl::StrCat("deleted study \"", request.study_id(), "\""));
  return v1::DeleteStudyResponse();
}

absl::StatusOr<v1::SuggestResponse> StudyEngine::Suggest(
    const v1::SuggestRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (request.count() < 0 || request.count() > options_.max_suggest_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("count: ", request.count(), " is outside [0, ",
                     options_.max_suggest_count, "] (0 means 1)"));
  }
  if (request.client_id().size() > kMaxClientIdLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "client_id: longer than ", kMaxClientIdLength, " characters"));
  }
  const int count = request.count() == 0 ? 1 : request.count();
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                           FindStudy({context.owner, request.study_id()}));
  const v1::StudySpec& spec = entry->stored.spec();

  // An RNG derived from the seed and the trial count, so that the same history
  // gives the same suggestions (also after a restart).
  auto rng_for = [&spec](const std::vector<v1::Trial>& trials) {
    std::seed_seq seq{static_cast<uint32_t>(spec.seed()),
                      static_cast<uint32_t>(spec.seed() >> 32),
                      static_cast<uint32_t>(trials.size()), 0x6d657461u};
    return space::Rng(seq);
  };
  auto view_of = [&](const std::vector<v1::Trial>& trials,
                     const policy::HeldKeys& held_keys) {
    return policy::StudyView{&spec, entry->space.get(), &trials,
                             &entry->candidate_key_list, &held_keys};
  };
  // Runs the policy on `view`; `*elapsed` is its wall time.
  auto propose = [&](std::shared_ptr<const policy::Policy> policy,
                     const policy::StudyView& view, int need,
                     absl::Duration* elapsed) {
    space::Rng rng = rng_for(*view.trials);
    const absl::Time start = options_.clock();
    absl::StatusOr<policy::SuggestResult> result =
        policy->Suggest(view, need, rng);
    *elapsed = options_.clock() - start;
    return result;
  };
  auto record_cost = [&](absl::Duration elapsed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                         entry->mu) {
    entry->suggest_cost = std::max(elapsed, entry->suggest_cost * kCostDecay);
    entry->suggest_cost_measured = true;
  };

  for (int attempt = 0;; ++attempt) {
    // Declared before the lock, so that they are freed after it is released.
    std::vector<v1::Trial> snapshot;
    policy::HeldKeys snapshot_held_keys;
    v1::SuggestResponse response;
    MutexLock lock(&entry->mu);
    if (entry->deleted) {
      return StudyNotFound(request.study_id());
    }
    const absl::Time now = options_.clock();
    METAOPT_RETURN_IF_ERROR(ExpireLeases(*entry, now));
    // Idempotent retries: the client's ACTIVE trials come back first. The
    // client is alive, so all of them (also those beyond `count`) get a fresh
    // lease.
    if (!request.client_id().empty()) {
      std::vector<int64_t> held;
      for (const int64_t id : entry->trials.active_ids()) {
        if (entry->trials.Get(id).client_id() == request.client_id()) {
          held.push_back(id);
        }
      }
      if (attempt == 0 && !held.empty()) {
        std::vector<v1::Trial> renewed;
        renewed.reserve(held.size());
        for (const int64_t id : held) {
          renewed.push_back(entry->trials.Get(id));
          *renewed.back().mutable_lease_expire_time() =
              ToProtoTimestamp(now + options_.trial_lease);
        }
        METAOPT_RETURN_IF_ERROR(storage_->PutTrials(entry->key, renewed));
        for (v1::Trial& trial : renewed) entry->trials.Put(std::move(trial));
      }
      for (const int64_t id : held) {
        if (response.trials_size() >= count) break;
        *response.add_trials() = entry->trials.Get(id);
      }
    }
    const int need = count - response.trials_size();
    if (need == 0) return response;

    // Too little time left for the policy: random untried configurations,
    // computed under the lock (they are cheap).
    std::string fallback_reason;
    const absl::Duration left = context.deadline - now;
    if (left < options_.deadline_margin + entry->suggest_cost) {
      fallback_reason = absl::StrCat(
          DurationText(left), " left before the deadline, less than the ",
          DurationText(entry->suggest_cost), " ", entry->policy->name(),
          " recently took plus a ", DurationText(options_.deadline_margin),
          " margin");
    }
    // A policy that recently ran faster than a snapshot of the study could be
    // copied runs under the lock, on the live trials, as does the last
    // attempt.
    const bool under_lock =
        attempt >= options_.optimistic_attempts ||
        (entry->suggest_cost_measured &&
         entry->suggest_cost < options_.max_locked_policy_cost);

    absl::StatusOr<policy::SuggestResult> proposed;
    absl::Duration elapsed;
    if (!fallback_reason.empty()) {
      space::Rng rng = rng_for(entry->trials.all());
      policy::SuggestResult fallback;
      fallback.configurations = policy::RandomPolicy::Sample(
          view_of(entry->trials.all(), entry->trials.held_keys()), need, rng);
      fallback.source = "random";
      proposed = std::move(fallback);
    } else if (under_lock) {
      proposed =
          propose(entry->policy,
                  view_of(entry->trials.all(), entry->trials.held_keys()), need,
                  &elapsed);
      record_cost(elapsed);
    } else {
      snapshot = entry->trials.all();
      snapshot_held_keys = entry->trials.held_keys();
      const std::shared_ptr<const policy::Policy> policy = entry->policy;
      const int64_t version = entry->version;
      entry->mu.Unlock();
      proposed = propose(policy, view_of(snapshot, snapshot_held_keys), need,
                         &elapsed);
      entry->mu.Lock();
      record_cost(elapsed);
      if (entry->deleted) {
        return StudyNotFound(request.study_id());
      }
      if (entry->version != version)
        continue;  // the study changed meanwhile: recompute
    }
    METAOPT_RETURN_IF_ERROR(proposed.status());

    const absl::Time created_at = options_.clock();
    const google::protobuf::Timestamp create_time =
        ToProtoTimestamp(created_at);
    const google::protobuf::Timestamp lease_end =
        ToProtoTimestamp(created_at + options_.trial_lease);
    std::vector<v1::Trial> created;
    if (proposed->update.has_value()) {
      // The state is a function of the completed observations, so it stays
      // valid even if storing the new trials below fails.
      METAOPT_RETURN_IF_ERROR(
          storage_->PutPolicyState(entry->key, proposed->update->state));
      entry->policy = proposed->update->policy;
      ++entry->version;
    }
    const std::string source =
        proposed->source.empty() ? entry->policy->name() : proposed->source;
    created.reserve(proposed->configurations.size());
    for (v1::Configuration& config : proposed->configurations) {
      v1::Trial trial;
      trial.set_id(entry->trials.size() + static_cast<int64_t>(created.size()) +
                   1);
      *trial.mutable_configuration() = std::move(config);
      trial.set_state(v1::TRIAL_STATE_ACTIVE);
      trial.set_client_id(request.client_id());
      *trial.mutable_create_time() = create_time;
      *trial.mutable_lease_expire_time() = lease_end;
      auto& metadata = *trial.mutable_metadata();
      metadata["policy"] = source;
      if (!fallback_reason.empty()) {
        metadata["source"] = "deadline-fallback";
        metadata["reason"] = fallback_reason;
      }
      created.push_back(std::move(trial));
    }
    if (!created.empty()) {
      METAOPT_RETURN_IF_ERROR(storage_->PutTrials(entry->key, created));
      ++entry->version;
      entry->next_lease_end =
          std::min(entry->next_lease_end, created_at + options_.trial_lease);
    }
    if (!fallback_reason.empty()) {
      LogInfo(absl::StrCat("study \"", request.study_id(), "\": ",
                           created.size(), " random suggestion(s) instead of ",
                           entry->policy->name(), ": ", fallback_reason));
    }
    for (v1::Trial& trial : created) {
      *response.add_trials() = trial;
      entry->trials.Put(std::move(trial));
    }
    return response;
  }
}

absl::StatusOr<v1::ObserveResponse> StudyEngine::Observe(
    const v1::ObserveRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (request.target_case() == v1::ObserveRequest::TARGET_NOT_SET) {
    return absl::InvalidArgumentError(
        "trial_id or configuration: one of them is required");
  }
  if (request.target_case() == v1::ObserveRequest::kTrialId &&
      request.trial_id() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial_id: ", request.trial_id(),
                     " is not a trial id (ids start at 1)"));
  }
  switch (request.outcome_case()) {
    case v1::ObserveRequest::OUTCOME_NOT_SET:
      return absl::InvalidArgumentError(
          "value or failure: one of them is required");
    case v1::ObserveRequest::kValue:
      if (!std::isfinite(request.value())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "value: ", request.value(), " is not a finite number"));
      }
      break;
    case v1::ObserveRequest::kFailure:
      if (request.failure().state() != v1::TRIAL_STATE_FAILED &&
          request.failure().state() != v1::TRIAL_STATE_INFEASIBLE) {
        return absl::InvalidArgumentError(absl::StrCat(
            "failure.state: ", v1::TrialState_Name(request.failure().state()),
            " must be TRIAL_STATE_FAILED or TRIAL_STATE_INFEASIBLE"));
      }
      if (request.failure().reason().size() > kMaxFailureReasonLength) {
        return absl::InvalidArgumentError(
            absl::StrCat("failure.reason: longer than ",
                         kMaxFailureReasonLength, " characters"));
      }
      break;
  }
  METAOPT_RETURN_IF_ERROR(ValidateMetrics(request.metrics()));
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                           FindStudy({context.owner, request.study_id()}));

  std::optional<v1::Configuration> external;
  if (request.target_case() == v1::ObserveRequest::kConfiguration) {
    METAOPT_ASSIGN_OR_RETURN(
        external,
        entry->space->Canonicalize(request.configuration(), "configuration"));
    if (!entry->candidate_keys.empty() &&
        !entry->candidate_keys.contains(space::ConfigurationKey(*external))) {
      return absl::InvalidArgumentError(
          "configuration: not in the study's candidate catalogue "
          "(spec.candidates)");
    }
  }

  MutexLock lock(&entry->mu);
  if (entry->deleted) {
    return StudyNotFound(request.study_id());
  }
  METAOPT_RETURN_IF_ERROR(ExpireLeases(*entry, options_.clock()));
  v1::Trial trial;
  if (external.has_value()) {
    trial.set_id(entry->trials.size() + 1);
    *trial.mutable_configuration() = *std::move(external);
    *trial.mutable_create_time() = ToProtoTimestamp(options_.clock());
    (*trial.mutable_metadata())["source"] = "external";
  } else {
    if (request.trial_id() > entry->trials.size()) {
      return absl::NotFoundError(absl::StrCat("study \"", request.study_id(),
                                              "\" has no trial ",
                                              request.trial_id()));
    }
    trial = entry->trials.Get(request.trial_id());
    if (trial.state() != v1::TRIAL_STATE_ACTIVE &&
        trial.state() != v1::TRIAL_STATE_STALE) {
      return absl::FailedPreconditionError(
          absl::StrCat("trial ", trial.id(), " of study \"", request.study_id(),
                       "\" is already ", v1::TrialState_Name(trial.state()),
                       "; a trial is observed once"));
    }
    // A late result is still a result: a STALE trial is completed like an
    // ACTIVE one, and says so. Its configuration may meanwhile have been
    // suggested (and observed) again.
    if (trial.state() == v1::TRIAL_STATE_STALE) {
      (*trial.mutable_metadata())["late"] =
          absl::StrCat("observed after its lease expired at ",
                       google::protobuf::util::TimeUtil::ToString(
                           trial.lease_expire_time()));
    }
    trial.clear_lease_expire_time();
  }
  if (request.outcome_case() == v1::ObserveRequest::kValue) {
    trial.set_state(v1::TRIAL_STATE_COMPLETED);
    trial.set_value(request.value());
  } else {
    trial.set_state(request.failure().state());
    trial.set_failure_reason(request.failure().reason());
  }
  *trial.mutable_metrics() = request.metrics();
  *trial.mutable_complete_time() = ToProtoTimestamp(options_.clock());
  METAOPT_RETURN_IF_ERROR(storage_->PutTrials(entry->key, {trial}));
  ++entry->version;
  entry->trials.Put(trial);
  v1::ObserveResponse response;
  *response.mutable_trial() = std::move(trial);
  return response;
}

absl::StatusOr<v1::FineTuneResponse> StudyEngine::FineTune(
    const v1::FineTuneRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (request.steps() < 0 || request.steps() > kMaxFineTuneSteps) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps: ", request.steps(), " is outside [0, ",
                     kMaxFineTuneSteps, "] (0 means the default)"));
  }
  if (!v1::FineTuneScope_IsValid(request.scope())) {
    return absl::InvalidArgumentError(
        absl::StrCat("scope: ", static_cast<int>(request.scope()),
                     " is not a FineTuneScope"));
  }
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                           FindStudy({context.owner, request.study_id()}));
  std::vector<v1::Trial> snapshot;
  std::shared_ptr<const policy::Policy> policy;
  {
    MutexLock lock(&entry->mu);
    if (entry->deleted) {
      return StudyNotFound(request.study_id());
    }
    METAOPT_RETURN_IF_ERROR(ExpireLeases(*entry, options_.clock()));
    snapshot = entry->trials.all();
    policy = entry->policy;
  }
  policy::FineTuneOptions options;
  options.steps = request.steps();
  options.scope = request.scope() == v1::FINE_TUNE_SCOPE_UNSPECIFIED
                      ? v1::FINE_TUNE_SCOPE_KERNEL
                      : request.scope();
  const absl::Time start = absl::Now();
  policy::StudyView view{&entry->stored.spec(), entry->space.get(), &snapshot,
                         &entry->candidate_key_list};
  METAOPT_ASSIGN_OR_RETURN(policy::FineTuneResult result,
                           policy->FineTune(view, options));
  const absl::Duration elapsed = absl::Now() - start;
  {
    MutexLock lock(&entry->mu);
    if (entry->deleted) {
      return StudyNotFound(request.study_id());
    }
    METAOPT_RETURN_IF_ERROR(
        storage_->PutPolicyState(entry->key, result.update.state));
    entry->policy = std::move(result.update.policy);
    ++entry->version;
  }
  v1::FineTuneResponse response;
  response.set_loss_before(result.loss_before);
  response.set_loss_after(result.loss_after);
  response.set_steps_run(result.steps_run);
  *response.mutable_elapsed() = ToProtoDuration(elapsed);
  return response;
}

absl::StatusOr<v1::GetTrialResponse> StudyEngine::GetTrial(
    const v1::GetTrialRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (request.trial_id() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial_id: ", request.trial_id(),
                     " is not a trial id (ids start at 1)"));
  }
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                           FindStudy({context.owner, request.study_id()}));
  MutexLock lock(&entry->mu);
  if (entry->deleted) {
    return StudyNotFound(request.study_id());
  }
  METAOPT_RETURN_IF_ERROR(ExpireLeases(*entry, options_.clock()));
  if (request.trial_id() > entry->trials.size()) {
    return absl::NotFoundError(absl::StrCat("study \"", request.study_id(),
                                            "\" has no trial ",
                                            request.trial_id()));
  }
  v1::GetTrialResponse response;
  *response.mutable_trial() = entry->trials.Get(request.trial_id());
  return response;
}

absl::StatusOr<v1::ListTrialsResponse> StudyEngine::ListTrials(
    const v1::ListTrialsRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  METAOPT_ASSIGN_OR_RETURN(const int page_size,
                           ResolvePageSize(request.page_size(), options_));
  if (!v1::TrialState_IsValid(request.state())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state: ", static_cast<int>(request.state()), " is not a TrialState"));
  }
  int64_t after = 0;
  if (!request.page_token().empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        std::string cursor,
        DecodePageToken("trial", request.page_token(), "ListTrials"));
    if (!absl::SimpleAtoi(cursor, &after) || after < 0) {
      return absl::InvalidArgumentError(
          "page_token: not a token returned by ListTrials");
    }
  }
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                           FindStudy({context.owner, request.study_id()}));
  MutexLock lock(&entry->mu);
  if (entry->deleted) {
    return StudyNotFound(request.study_id());
  }
  METAOPT_RETURN_IF_ERROR(ExpireLeases(*entry, options_.clock()));
  v1::ListTrialsResponse response;
  const std::vector<v1::Trial>& trials = entry->trials.all();
  for (size_t i = static_cast<size_t>(after); i < trials.size(); ++i) {
    const v1::Trial& trial = trials[i];
    if (request.state() != v1::TRIAL_STATE_UNSPECIFIED &&
        trial.state() != request.state()) {
      continue;
    }
    if (response.trials_size() == page_size) {
      response.set_next_page_token(
          EncodePageToken("trial", absl::StrCat(trials[i - 1].id())));
      break;
    }
    *response.add_trials() = trial;
  }
  return response;
}

absl::StatusOr<v1::HeartbeatResponse> StudyEngine::Heartbeat(
    const v1::HeartbeatRequest& request, const CallContext& context) {
  METAOPT_RETURN_IF_ERROR(ValidateStudyId(request.study_id()));
  if (request.trial_ids().empty() ||
      request.trial_ids_size() > kMaxHeartbeatTrials) {
    return absl::InvalidArgumentError(
        absl::StrCat("trial_ids: ", request.trial_ids_size(), " ids, want 1..",
                     kMaxHeartbeatTrials));
  }
  absl::flat_hash_map<int64_t, int> seen;
  for (int i = 0; i < request.trial_ids_size(); ++i) {
    const int64_t id = request.trial_ids(i);
    if (id <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "trial_ids[", i, "]: ", id, " is not a trial id (ids start at 1)"));
    }
    auto [it, inserted] = seen.emplace(id, i);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(
          "trial_ids[", i, "]: ", id, " repeats trial_ids[", it->second, "]"));
    }
  }
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry,
                           FindStudy({context.owner, request.study_id()}));
  MutexLock lock(&entry->mu);
  if (entry->deleted) {
    return StudyNotFound(request.study_id());
  }
  const absl::Time now = options_.clock();
  METAOPT_RETURN_IF_ERROR(ExpireLeases(*entry, now));
  std::vector<v1::Trial> renewed;
  renewed.reserve(request.trial_ids_size());
  for (int i = 0; i < request.trial_ids_size(); ++i) {
    const int64_t id = request.trial_ids(i);
    if (id > entry->trials.size()) {
      return absl::NotFoundError(absl::StrCat("trial_ids[", i, "]: study \"",
                                              request.study_id(),
                                              "\" has no trial ", id));
    }
    const v1::Trial& trial = entry->trials.Get(id);
    if (trial.state() != v1::TRIAL_STATE_ACTIVE) {
      std::string why =
          trial.state() == v1::TRIAL_STATE_STALE
              ? absl::StrCat(" (its lease expired at ",
                             google::protobuf::util::TimeUtil::ToString(
                                 trial.lease_expire_time()),
                             "); observe its result, or Suggest for new work")
              : "; only ACTIVE trials hold a lease";
      return absl::FailedPreconditionError(absl::StrCat(
          "trial_ids[", i, "]: trial ", id, " of study \"", request.study_id(),
          "\" is ", v1::TrialState_Name(trial.state()), why));
    }
    renewed.push_back(trial);
    *renewed.back().mutable_lease_expire_time() =
        ToProtoTimestamp(now + options_.trial_lease);
  }
  METAOPT_RETURN_IF_ERROR(storage_->PutTrials(entry->key, renewed));
  v1::HeartbeatResponse response;
  for (v1::Trial& trial : renewed) {
    *response.add_trials() = trial;
    entry->trials.Put(std::move(trial));
  }
  return response;
}

absl::StatusOr<v1::ListModelsResponse> StudyEngine::ListModels(
    const v1::ListModelsRequest&, const CallContext& /*context*/) {
  v1::ListModelsResponse response;
  if (models_ != nullptr) {
    for (const auto& model : models_->List()) {
      *response.add_models() = registry::Describe(*model);
    }
  }
  return response;
}

StudyEngine::LoadedStats StudyEngine::Stats() {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    MutexLock lock(&map_mu_);
    for (const auto& [key, entry] : studies_) entries.push_back(entry);
  }
  LoadedStats stats;
  stats.trials_by_state.assign(v1::TrialState_ARRAYSIZE, 0);
  for (const auto& entry : entries) {
    MutexLock lock(&entry->mu);
    if (entry->deleted) continue;
    ++stats.studies;
    for (const v1::Trial& trial : entry->trials.all()) {
      ++stats.trials_by_state[trial.state()];
    }
  }
  return stats;
}

v1::AlgorithmKind StudyEngine::LoadedAlgorithmKind(const std::string& study_id,
                                                   const CallContext& context) {
  MutexLock lock(&map_mu_);
  auto it = studies_.find(storage::StudyKey{context.owner, study_id});
  if (it == studies_.end()) return v1::ALGORITHM_KIND_UNSPECIFIED;
  // `stored` is immutable after load.
  return it->second->stored.spec().algorithm().kind();
}

}  // namespace metaopt::study
