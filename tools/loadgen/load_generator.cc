#include "tools/loadgen/load_generator.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/common/mutex.h"
#include "nlohmann/json.hpp"

namespace metaopt::loadgen {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kMaxClients = 4096;
constexpr int kMaxStudies = 100000;
constexpr int kMaxDimensions = 64;
constexpr int kMaxCatalogueSize = 1000000;
constexpr int kMaxSuggestCount = 1000;

std::string ParameterName(int i) { return absl::StrCat("x", i); }

// The catalogue of `options`: catalogue_size points drawn uniformly from
// [0, 1]^dimensions with options.seed (the same for every study).
std::vector<v1::Configuration> MakeCatalogue(const LoadOptions& options) {
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<v1::Configuration> catalogue(options.catalogue_size);
  for (v1::Configuration& config : catalogue) {
    v1::Assignment* a = config.add_assignments();
    a->set_stage("f");
    a->set_algorithm("f");
    for (int i = 0; i < options.dimensions; ++i) {
      (*a->mutable_parameters())[ParameterName(i)].set_number(unit(rng));
    }
  }
  return catalogue;
}

v1::StudySpec MakeSpec(const LoadOptions& options, int index,
                       const std::vector<v1::Configuration>& catalogue) {
  v1::StudySpec spec;
  v1::Algorithm* f =
      spec.mutable_search_space()->add_stages()->add_algorithms();
  spec.mutable_search_space()->mutable_stages(0)->set_name("f");
  f->set_name("f");
  for (int i = 0; i < options.dimensions; ++i) {
    v1::Parameter* p = f->add_parameters();
    p->set_name(ParameterName(i));
    p->mutable_float_domain()->set_low(0);
    p->mutable_float_domain()->set_high(1);
  }
  spec.mutable_objective()->set_name("loss");
  spec.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  spec.mutable_algorithm()->set_kind(options.algorithm);
  // No registry model: the load measures the service, not a warm start.
  spec.mutable_algorithm()->set_model("none");
  for (const v1::Configuration& config : catalogue) {
    *spec.add_candidates() = config;
  }
  spec.set_seed(options.seed + static_cast<uint64_t>(index));
  return spec;
}

std::string StudyId(const LoadOptions& options, int index) {
  return absl::StrCat(options.study_prefix, "-", index);
}

// The RPC a probe mix calls.
const char* ProbeRpc(CallMix calls) {
  return calls == CallMix::kListModels ? "ListModels" : "GetStudy";
}

// What one client saw. Owned by its client thread until joined.
struct ClientResult {
  std::vector<double> suggest_micros;
  std::vector<double> observe_micros;
  std::vector<double> probe_micros;
  std::map<std::string, int64_t> suggest_errors;
  std::map<std::string, int64_t> observe_errors;
  std::map<std::string, int64_t> probe_errors;
  int64_t empty_suggestions = 0;
  int64_t observations = 0;
  // A server answer the load cannot use (a malformed configuration).
  absl::Status fatal;
};

// Counters shared by the clients and the progress line.
struct Progress {
  std::atomic<int64_t> probes{0};
  std::atomic<int64_t> suggests{0};
  std::atomic<int64_t> observes{0};
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> ops_claimed{0};
  std::atomic<bool> stop{false};
};

double MicrosSince(absl::Time start) {
  return absl::ToDoubleMicroseconds(absl::Now() - start);
}

bool Retryable(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsResourceExhausted(status) ||
         absl::IsDeadlineExceeded(status);
}

// Counts a client's retryable failures in a row and sleeps the RetryDelay
// before its next call; a success resets it. Thread-compatible (one per
// client).
class Backoff {
 public:
  explicit Backoff(uint64_t seed) : rng_(seed) {}

  void Failed(const absl::Status& status) {
    if (!Retryable(status)) return;
    ++failures_;
    absl::SleepFor(RetryDelay(failures_, unit_(rng_)));
  }
  void Succeeded() { failures_ = 0; }

 private:
  int failures_ = 0;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> unit_{0.0, 1.0};
};

void RunClient(const LoadOptions& options, int client_index,
               MetaoptClient& client, absl::Time deadline, Progress& progress,
               ClientResult& result) {
  std::mt19937_64 rng(options.seed * 7919 + client_index);
  std::uniform_int_distribution<int> pick_study(0, options.studies - 1);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const std::string client_id = absl::StrCat("loadgen-client-", client_index);
  const int64_t loop_ops =
      options.calls == CallMix::kSuggestObserve ? 1 + options.suggest_count : 1;
  Backoff backoff(options.seed * 104729 + client_index);
  while (!progress.stop.load(std::memory_order_relaxed) &&
         absl::Now() < deadline) {
    if (options.total_ops > 0 &&
        progress.ops_claimed.fetch_add(loop_ops) + loop_ops >
            options.total_ops) {
      break;
    }
    const std::string study_id = StudyId(options, pick_study(rng));
    if (options.calls != CallMix::kSuggestObserve) {
      const absl::Time start = absl::Now();
      absl::Status status;
      if (options.calls == CallMix::kListModels) {
        status = client.ListModels(v1::ListModelsRequest()).status();
      } else {
        v1::GetStudyRequest get;
        get.set_study_id(study_id);
        status = client.GetStudy(get).status();
      }
      if (!status.ok()) {
        ++result.probe_errors[absl::StatusCodeToString(status.code())];
        progress.errors.fetch_add(1, std::memory_order_relaxed);
        backoff.Failed(status);
        continue;
      }
      backoff.Succeeded();
      result.probe_micros.push_back(MicrosSince(start));
      progress.probes.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    v1::SuggestRequest ask;
    ask.set_study_id(study_id);
    ask.set_count(options.suggest_count);
    ask.set_client_id(client_id);
    absl::Time start = absl::Now();
    absl::StatusOr<v1::SuggestResponse> suggested = client.Suggest(ask);
    if (!suggested.ok()) {
      ++result.suggest_errors[absl::StatusCodeToString(
          suggested.status().code())];
      progress.errors.fetch_add(1, std::memory_order_relaxed);
      backoff.Failed(suggested.status());
      continue;
    }
    backoff.Succeeded();
    result.suggest_micros.push_back(MicrosSince(start));
    progress.suggests.fetch_add(1, std::memory_order_relaxed);
    if (suggested->trials().empty()) ++result.empty_suggestions;

    for (const v1::Trial& trial : suggested->trials()) {
      absl::StatusOr<double> value =
          TestFunction(trial.configuration(), options.dimensions);
      if (!value.ok()) {
        result.fatal = absl::InternalError(
            absl::StrCat("study ", study_id, " trial ", trial.id(), ": ",
                         value.status().message()));
        progress.stop = true;
        return;
      }
      if (options.eval_time > absl::ZeroDuration()) {
        absl::SleepFor(options.eval_time);
      }
      v1::ObserveRequest tell;
      tell.set_study_id(study_id);
      tell.set_trial_id(trial.id());
      if (unit(rng) < options.failure_rate) {
        tell.mutable_failure()->set_state(v1::TRIAL_STATE_FAILED);
        tell.mutable_failure()->set_reason(
            "metaopt-loadgen: simulated failure");
      } else {
        tell.set_value(*value);
      }
      start = absl::Now();
      absl::StatusOr<v1::ObserveResponse> observed = client.Observe(tell);
      if (!observed.ok()) {
        ++result.observe_errors[absl::StatusCodeToString(
            observed.status().code())];
        progress.errors.fetch_add(1, std::memory_order_relaxed);
        backoff.Failed(observed.status());
        continue;
      }
      backoff.Succeeded();
      result.observe_micros.push_back(MicrosSince(start));
      ++result.observations;
      progress.observes.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

// Prints a progress line every `interval` until `done` is notified.
void ReportProgress(const Progress& progress, absl::Time start,
                    absl::Duration interval, const Notification& done,
                    std::ostream& out) {
  int64_t last_observes = 0;
  absl::Time last = start;
  while (!done.WaitForNotificationWithTimeout(interval)) {
    const absl::Time now = absl::Now();
    if (const int64_t probes = progress.probes.load(); probes > 0) {
      const double elapsed = absl::ToDoubleSeconds(now - start);
      out << absl::StrFormat("[%6.1fs] probe calls %d  errors %d  | %.1f/s",
                             elapsed, probes, progress.errors.load(),
                             elapsed > 0 ? probes / elapsed : 0.0)
          << std::endl;
      continue;
    }
    const int64_t observes = progress.observes.load();
    const double window = absl::ToDoubleSeconds(now - last);
    const double elapsed = absl::ToDoubleSeconds(now - start);
    out << absl::StrFormat(
               "[%6.1fs] Suggest %d  Observe %d  errors %d  | %.1f obs/s "
               "(last %.1f s: %.1f obs/s)",
               elapsed, progress.suggests.load(), observes,
               progress.errors.load(), elapsed > 0 ? observes / elapsed : 0.0,
               window, window > 0 ? (observes - last_observes) / window : 0.0)
        << std::endl;
    last_observes = observes;
    last = now;
  }
}

RpcStats Merge(const std::string& rpc, std::vector<ClientResult>& results,
               std::vector<double> ClientResult::*micros,
               std::map<std::string, int64_t> ClientResult::*errors) {
  RpcStats stats;
  stats.rpc = rpc;
  std::vector<double> all;
  for (ClientResult& r : results) {
    all.insert(all.end(), (r.*micros).begin(), (r.*micros).end());
    for (const auto& [code, n] : r.*errors) {
      stats.error_codes[code] += n;
      stats.errors += n;
    }
  }
  stats.ok = static_cast<int64_t>(all.size());
  stats.latency = Summarize(all);
  return stats;
}

double Rate(int64_t n, absl::Duration elapsed) {
  const double seconds = absl::ToDoubleSeconds(elapsed);
  return seconds > 0 ? n / seconds : 0.0;
}

}  // namespace

absl::Status ValidateOptions(const LoadOptions& options) {
  const std::string& prefix = options.study_prefix;
  if (prefix.empty() || prefix.size() > 100 ||
      !absl::ascii_isalnum(static_cast<unsigned char>(prefix[0])) ||
      !std::all_of(prefix.begin(), prefix.end(), [](char c) {
        return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
               c == '_' || c == '-';
      })) {
    return absl::InvalidArgumentError(absl::StrCat(
        "study_prefix: \"", prefix.substr(0, 64),
        "\" must be 1..100 letters, digits, '.', '_' or '-', starting with a "
        "letter or digit"));
  }
  if (options.clients < 1 || options.clients > kMaxClients) {
    return absl::InvalidArgumentError(absl::StrCat(
        "clients: ", options.clients, " is outside [1, ", kMaxClients, "]"));
  }
  if (options.studies < 1 || options.studies > kMaxStudies) {
    return absl::InvalidArgumentError(absl::StrCat(
        "studies: ", options.studies, " is outside [1, ", kMaxStudies, "]"));
  }
  if (options.algorithm != v1::ALGORITHM_KIND_RANDOM &&
      options.algorithm != v1::ALGORITHM_KIND_GP) {
    return absl::InvalidArgumentError(
        absl::StrCat("algorithm: ", v1::AlgorithmKind_Name(options.algorithm),
                     " is not ALGORITHM_KIND_RANDOM or ALGORITHM_KIND_GP"));
  }
  if (options.dimensions < 1 || options.dimensions > kMaxDimensions) {
    return absl::InvalidArgumentError(
        absl::StrCat("dimensions: ", options.dimensions, " is outside [1, ",
                     kMaxDimensions, "]"));
  }
  if (options.space == SpaceKind::kCatalogue &&
      (options.catalogue_size < 1 ||
       options.catalogue_size > kMaxCatalogueSize)) {
    return absl::InvalidArgumentError(
        absl::StrCat("catalogue_size: ", options.catalogue_size,
                     " is outside [1, ", kMaxCatalogueSize, "]"));
  }
  if (options.suggest_count < 1 || options.suggest_count > kMaxSuggestCount) {
    return absl::InvalidArgumentError(
        absl::StrCat("suggest_count: ", options.suggest_count,
                     " is outside [1, ", kMaxSuggestCount, "]"));
  }
  if (options.duration < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "duration: ", absl::FormatDuration(options.duration), " is negative"));
  }
  if (options.total_ops < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("total_ops: ", options.total_ops, " is negative"));
  }
  if (options.duration == absl::ZeroDuration() && options.total_ops == 0) {
    return absl::InvalidArgumentError(
        "duration, total_ops: both are 0; set at least one bound");
  }
  if (options.total_ops > 0 && options.total_ops < 1 + options.suggest_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("total_ops: ", options.total_ops,
                     " is less than one loop (1 Suggest + ",
                     options.suggest_count, " Observe)"));
  }
  if (!(options.failure_rate >= 0 && options.failure_rate <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "failure_rate: ", options.failure_rate, " is outside [0, 1]"));
  }
  if (options.eval_time < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("eval_time: ", absl::FormatDuration(options.eval_time),
                     " is negative"));
  }
  if (options.progress_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "progress_interval: ", absl::FormatDuration(options.progress_interval),
        " is negative"));
  }
  return absl::OkStatus();
}

v1::StudySpec MakeStudySpec(const LoadOptions& options, int index) {
  return MakeSpec(options, index,
                  options.space == SpaceKind::kCatalogue
                      ? MakeCatalogue(options)
                      : std::vector<v1::Configuration>());
}

absl::StatusOr<double> TestFunction(const v1::Configuration& configuration,
                                    int dimensions) {
  if (configuration.assignments_size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("configuration: ", configuration.assignments_size(),
                     " assignments, want 1"));
  }
  const auto& parameters = configuration.assignments(0).parameters();
  double sum = 0;
  for (int i = 0; i < dimensions; ++i) {
    const std::string name = ParameterName(i);
    auto it = parameters.find(name);
    if (it == parameters.end() ||
        it->second.kind_case() != v1::ParameterValue::kNumber) {
      return absl::InvalidArgumentError(
          absl::StrCat("configuration.assignments[0].parameters[\"", name,
                       "\"]: missing or not a number"));
    }
    const double d = it->second.number() - 0.3;
    sum += d * d + 0.1 * (1 - std::cos(6 * kPi * d));
  }
  return sum;
}

LatencySummary Summarize(std::vector<double>& micros) {
  LatencySummary summary;
  summary.count = static_cast<int64_t>(micros.size());
  if (micros.empty()) return summary;
  std::sort(micros.begin(), micros.end());
  double total = 0;
  for (double m : micros) total += m;
  // Nearest rank: the smallest value with at least p of the sample at or
  // below it.
  auto rank = [&](double p) {
    const size_t n = micros.size();
    size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(n)));
    k = std::clamp<size_t>(k, 1, n);
    return micros[k - 1] / 1000.0;
  };
  summary.mean_ms = total / static_cast<double>(micros.size()) / 1000.0;
  summary.p50_ms = rank(0.50);
  summary.p90_ms = rank(0.90);
  summary.p99_ms = rank(0.99);
  summary.max_ms = micros.back() / 1000.0;
  return summary;
}

int64_t LoadReport::ops() const {
  int64_t n = 0;
  for (const RpcStats& rpc : rpcs) n += rpc.ok;
  return n;
}

int64_t LoadReport::failed_ops() const {
  int64_t n = 0;
  for (const RpcStats& rpc : rpcs) n += rpc.errors;
  return n;
}

absl::Duration RetryDelay(int consecutive_failures, double unit) {
  return BackoffDelay(consecutive_failures, absl::Milliseconds(10),
                      absl::Seconds(1), unit);
}

double LoadReport::ops_per_second() const { return Rate(ops(), elapsed); }

double LoadReport::observations_per_second() const {
  return Rate(observations, elapsed);
}

absl::StatusOr<std::vector<std::string>> ParseServerList(
    const std::string& list) {
  std::vector<std::string> addresses = absl::StrSplit(list, ',');
  for (const std::string& address : addresses) {
    if (address.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--server \"", list,
          "\": an empty address; give HOST:PORT, or several separated by "
          "commas"));
    }
  }
  return addresses;
}

ConnectFn RoundRobinConnect(std::vector<std::string> addresses,
                            const MetaoptClient::Options& options) {
  auto next = std::make_shared<std::atomic<size_t>>(0);
  return [addresses = std::move(addresses), options, next] {
    MetaoptClient::Options client = options;
    client.address = addresses[next->fetch_add(1) % addresses.size()];
    return MetaoptClient::Create(client);
  };
}

absl::StatusOr<LoadReport> RunLoad(const LoadOptions& options,
                                   const ConnectFn& connect,
                                   std::ostream* progress_out) {
  if (absl::Status valid = ValidateOptions(options); !valid.ok()) {
    return valid;
  }
  absl::StatusOr<std::unique_ptr<MetaoptClient>> admin = connect();
  if (!admin.ok()) return admin.status();
  const std::vector<v1::Configuration> catalogue =
      options.space == SpaceKind::kCatalogue ? MakeCatalogue(options)
                                             : std::vector<v1::Configuration>();
  for (int i = 0; i < options.studies; ++i) {
    v1::CreateStudyRequest create;
    create.set_study_id(StudyId(options, i));
    *create.mutable_spec() = MakeSpec(options, i, catalogue);
    absl::StatusOr<v1::CreateStudyResponse> created =
        (*admin)->CreateStudy(create);
    if (!created.ok()) {
      return absl::Status(created.status().code(),
                          absl::StrCat("creating study ", create.study_id(),
                                       ": ", created.status().message()));
    }
  }

  std::vector<std::unique_ptr<MetaoptClient>> clients;
  for (int i = 0; i < options.clients; ++i) {
    absl::StatusOr<std::unique_ptr<MetaoptClient>> client = connect();
    if (!client.ok()) return client.status();
    clients.push_back(*std::move(client));
  }

  Progress progress;
  std::vector<ClientResult> results(options.clients);
  Notification go;
  absl::Time start;
  absl::Time deadline = absl::InfiniteFuture();
  std::vector<std::thread> threads;
  for (int i = 0; i < options.clients; ++i) {
    threads.emplace_back([&, i] {
      go.WaitForNotification();
      RunClient(options, i, *clients[i], deadline, progress, results[i]);
    });
  }
  start = absl::Now();
  if (options.duration > absl::ZeroDuration()) {
    deadline = start + options.duration;
  }
  go.Notify();  // publishes start and deadline to the clients
  Notification done;
  std::thread reporter;
  if (progress_out != nullptr &&
      options.progress_interval > absl::ZeroDuration()) {
    reporter = std::thread([&] {
      ReportProgress(progress, start, options.progress_interval, done,
                     *progress_out);
    });
  }
  for (std::thread& t : threads) t.join();
  LoadReport report;
  report.options = options;
  report.elapsed = absl::Now() - start;
  done.Notify();
  if (reporter.joinable()) reporter.join();

  for (const ClientResult& r : results) {
    if (!r.fatal.ok()) return r.fatal;
    report.empty_suggestions += r.empty_suggestions;
    report.observations += r.observations;
  }
  if (options.calls == CallMix::kSuggestObserve) {
    report.rpcs.push_back(Merge("Suggest", results,
                                &ClientResult::suggest_micros,
                                &ClientResult::suggest_errors));
    report.rpcs.push_back(Merge("Observe", results,
                                &ClientResult::observe_micros,
                                &ClientResult::observe_errors));
  } else {
    report.rpcs.push_back(Merge(ProbeRpc(options.calls), results,
                                &ClientResult::probe_micros,
                                &ClientResult::probe_errors));
  }

  if (options.delete_studies) {
    for (int i = 0; i < options.studies; ++i) {
      v1::DeleteStudyRequest del;
      del.set_study_id(StudyId(options, i));
      absl::StatusOr<v1::DeleteStudyResponse> deleted =
          (*admin)->DeleteStudy(del);
      if (!deleted.ok()) {
        return absl::Status(deleted.status().code(),
                            absl::StrCat("deleting study ", del.study_id(),
                                         ": ", deleted.status().message()));
      }
    }
  }
  return report;
}

std::string AlgorithmName(v1::AlgorithmKind kind) {
  switch (kind) {
    case v1::ALGORITHM_KIND_RANDOM:
      return "RANDOM";
    case v1::ALGORITHM_KIND_GP:
      return "GP";
    default:
      return v1::AlgorithmKind_Name(kind);
  }
}

std::string SpaceName(SpaceKind space) {
  return space == SpaceKind::kCatalogue ? "catalogue" : "continuous";
}

namespace {

std::string Describe(const LoadOptions& o) {
  std::string space =
      absl::StrCat(SpaceName(o.space), ", ", o.dimensions, " parameters");
  if (o.space == SpaceKind::kCatalogue) {
    absl::StrAppend(&space, ", ", o.catalogue_size, " candidates");
  }
  return absl::StrCat(o.clients, " clients, ", o.studies, " studies (",
                      AlgorithmName(o.algorithm), ", ", space, "), count ",
                      o.suggest_count);
}

}  // namespace

std::string FormatTable(const LoadReport& report) {
  std::string out = absl::StrCat(
      "metaopt-loadgen: ", Describe(report.options), "; ",
      absl::StrFormat("%.1f", absl::ToDoubleSeconds(report.elapsed)), " s\n");
  absl::StrAppend(
      &out, absl::StrFormat("%-8s %9s %7s %9s %9s %9s %9s %9s %9s\n", "rpc",
                            "ok", "errors", "rate/s", "mean ms", "p50 ms",
                            "p90 ms", "p99 ms", "max ms"));
  for (const RpcStats& rpc : report.rpcs) {
    const LatencySummary& l = rpc.latency;
    absl::StrAppend(
        &out, absl::StrFormat(
                  "%-8s %9d %7d %9.1f %9.2f %9.2f %9.2f %9.2f %9.2f\n", rpc.rpc,
                  rpc.ok, rpc.errors, Rate(rpc.ok, report.elapsed), l.mean_ms,
                  l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms));
  }
  absl::StrAppend(
      &out, absl::StrFormat(
                "throughput: %.1f ops/s (%d successful RPCs, %d failed), "
                "%.1f observations/s (%d observations)\n",
                report.ops_per_second(), report.ops(), report.failed_ops(),
                report.observations_per_second(), report.observations));
  if (report.empty_suggestions > 0) {
    absl::StrAppend(&out, "empty suggestions (exhausted catalogue): ",
                    report.empty_suggestions, "\n");
  }
  for (const RpcStats& rpc : report.rpcs) {
    for (const auto& [code, n] : rpc.error_codes) {
      absl::StrAppend(&out, rpc.rpc, " errors: ", code, " ", n, "\n");
    }
  }
  return out;
}

std::string FormatJson(const LoadReport& report) {
  const LoadOptions& o = report.options;
  nlohmann::json settings = {
      {"clients", o.clients},
      {"studies", o.studies},
      {"algorithm", AlgorithmName(o.algorithm)},
      {"space", SpaceName(o.space)},
      {"dimensions", o.dimensions},
      {"suggest_count", o.suggest_count},
      {"duration_seconds", absl::ToDoubleSeconds(o.duration)},
      {"total_ops", o.total_ops},
      {"failure_rate", o.failure_rate},
      {"eval_ms", absl::ToDoubleMilliseconds(o.eval_time)},
      {"seed", o.seed},
  };
  if (o.space == SpaceKind::kCatalogue) {
    settings["catalogue_size"] = o.catalogue_size;
  }
  nlohmann::json rpcs = nlohmann::json::array();
  for (const RpcStats& rpc : report.rpcs) {
    const LatencySummary& l = rpc.latency;
    rpcs.push_back({{"rpc", rpc.rpc},
                    {"ok", rpc.ok},
                    {"errors", rpc.errors},
                    {"error_codes", rpc.error_codes},
                    {"rate_per_second", Rate(rpc.ok, report.elapsed)},
                    {"latency_ms",
                     {{"mean", l.mean_ms},
                      {"p50", l.p50_ms},
                      {"p90", l.p90_ms},
                      {"p99", l.p99_ms},
                      {"max", l.max_ms}}}});
  }
  nlohmann::json json = {
      {"settings", settings},
      {"elapsed_seconds", absl::ToDoubleSeconds(report.elapsed)},
      {"ops", report.ops()},
      {"failed_ops", report.failed_ops()},
      {"ops_per_second", report.ops_per_second()},
      {"observations", report.observations},
      {"observations_per_second", report.observations_per_second()},
      {"empty_suggestions", report.empty_suggestions},
      {"rpcs", rpcs},
  };
  return json.dump(2) + "\n";
}

std::string FormatCsv(const LoadReport& report, bool header) {
  const LoadOptions& o = report.options;
  std::string out;
  if (header) {
    out =
        "clients,studies,algorithm,space,dimensions,suggest_count,elapsed_s,"
        "rpc,ok,errors,rate_per_s,mean_ms,p50_ms,p90_ms,p99_ms,max_ms,"
        "ops_per_s,observations_per_s\n";
  }
  for (const RpcStats& rpc : report.rpcs) {
    const LatencySummary& l = rpc.latency;
    absl::StrAppend(
        &out, absl::StrFormat(
                  "%d,%d,%s,%s,%d,%d,%.3f,%s,%d,%d,%.2f,%.3f,%.3f,%.3f,"
                  "%.3f,%.3f,%.2f,%.2f\n",
                  o.clients, o.studies, AlgorithmName(o.algorithm),
                  SpaceName(o.space), o.dimensions, o.suggest_count,
                  absl::ToDoubleSeconds(report.elapsed), rpc.rpc, rpc.ok,
                  rpc.errors, Rate(rpc.ok, report.elapsed), l.mean_ms, l.p50_ms,
                  l.p90_ms, l.p99_ms, l.max_ms, report.ops_per_second(),
                  report.observations_per_second()));
  }
  return out;
}

}  // namespace metaopt::loadgen
