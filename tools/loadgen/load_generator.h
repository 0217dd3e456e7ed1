// The load generator behind metaopt-loadgen: N concurrent clients over M
// studies, each looping Suggest -> evaluate a cheap test function -> Observe,
// bounded by a duration or a total number of RPCs, with per-RPC latency
// percentiles and throughput.
//
//   LoadOptions options;
//   options.clients = 8;
//   options.studies = 4;
//   absl::StatusOr<LoadReport> report = RunLoad(options, connect, &std::cerr);
//   std::cout << FormatTable(*report);
#ifndef METAOPT_TOOLS_LOADGEN_LOAD_GENERATOR_H_
#define METAOPT_TOOLS_LOADGEN_LOAD_GENERATOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "clients/cpp/metaopt_client.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::loadgen {

enum class SpaceKind {
  // `dimensions` float parameters x0..x{d-1} in [0, 1].
  kContinuous,
  // The same space restricted to `catalogue_size` fixed random points.
  kCatalogue,
};

// What each client calls in its loop.
enum class CallMix {
  // Suggest, evaluate, Observe: the load the tool is for.
  kSuggestObserve,
  // Probes of the service's fixed cost per RPC, nothing written. ListModels
  // touches no study: the cost of one RPC through gRPC and the server's
  // dispatch (work pool, logging, metrics).
  kListModels,
  // GetStudy of one of the studies: that, plus the engine's study lookup,
  // lock and freshness check against storage.
  kGetStudy,
};

// A plain value; thread-compatible.
struct LoadOptions {
  // Studies are named "<study_prefix>-<i>" for i in 0..studies-1; they are
  // created (or reopened: CreateStudy is create-or-get) before the load starts.
  std::string study_prefix = "loadgen";
  // Concurrent clients; each loops over studies picked uniformly at random.
  int clients = 8;
  int studies = 4;
  // ALGORITHM_KIND_RANDOM or ALGORITHM_KIND_GP.
  v1::AlgorithmKind algorithm = v1::ALGORITHM_KIND_RANDOM;
  SpaceKind space = SpaceKind::kContinuous;
  int dimensions = 4;
  int catalogue_size = 5000;
  // Trials asked for by one Suggest (each is then observed).
  int suggest_count = 1;
  CallMix calls = CallMix::kSuggestObserve;
  // Bounds; at least one must be set. Zero duration: no time bound; zero
  // total_ops: no RPC bound. total_ops counts Suggest and Observe calls (or
  // probe calls); a client claims a whole loop (1 + suggest_count RPCs, or
  // one probe) at a time.
  absl::Duration duration = absl::Seconds(10);
  int64_t total_ops = 0;
  // Fraction of evaluations reported as TRIAL_STATE_FAILED instead of a value.
  double failure_rate = 0;
  // Simulated evaluation time between Suggest and Observe.
  absl::Duration eval_time = absl::ZeroDuration();
  // Seeds the study specs, the catalogue and each client's choice of study.
  uint64_t seed = 1;
  // Delete the studies once the load is over.
  bool delete_studies = true;
  // Interval of the progress line; zero: no progress output.
  absl::Duration progress_interval = absl::Seconds(1);
};

// INVALID_ARGUMENT naming the field, value and rule for the first bad option.
absl::Status ValidateOptions(const LoadOptions& options);

// The spec of study `index`: the space of `options`, objective "loss"
// minimized, the algorithm, seed options.seed + index.
v1::StudySpec MakeStudySpec(const LoadOptions& options, int index);

// The cheap test function: a shifted sphere plus a cosine ripple over the
// numbers of the configuration's single assignment (x0..x{d-1}); its minimum
// 0 is at x_i = 0.3. INVALID_ARGUMENT when a parameter is missing or not a
// number.
absl::StatusOr<double> TestFunction(const v1::Configuration& configuration,
                                    int dimensions);

// Latencies of one RPC in milliseconds; zeros when count == 0.
struct LatencySummary {
  int64_t count = 0;
  double mean_ms = 0;
  double p50_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

// Nearest-rank percentiles of `micros` (latencies in microseconds; reordered
// in place).
LatencySummary Summarize(std::vector<double>& micros);

struct RpcStats {
  std::string
      rpc;  // "Suggest", "Observe", or a probe's "ListModels", "GetStudy"
  int64_t ok = 0;
  int64_t errors = 0;
  // Failed calls by status code name ("UNAVAILABLE": 3).
  std::map<std::string, int64_t> error_codes;
  // Of the successful calls.
  LatencySummary latency;
};

struct LoadReport {
  LoadOptions options;
  // From the start of the load until the last client stopped.
  absl::Duration elapsed;
  // Suggest responses without trials (an exhausted catalogue).
  int64_t empty_suggestions = 0;
  // Acknowledged Observe calls (values and failures).
  int64_t observations = 0;
  std::vector<RpcStats> rpcs;  // Suggest, Observe; or the probe RPC

  int64_t ops() const;            // successful RPCs
  int64_t failed_ops() const;     // failed RPCs (RpcStats::errors summed)
  double ops_per_second() const;  // successful RPCs per second
  double observations_per_second() const;
};

// How long a client waits before its next loop after `consecutive_failures`
// (>= 1) retryable failures in a row (UNAVAILABLE, RESOURCE_EXHAUSTED,
// DEADLINE_EXCEEDED): exponential from 10 ms, doubling per failure, capped at
// 1 s, with "equal jitter" (uniform in [d/2, d]) so clients of a restarted
// server do not retry in lockstep. `unit` is a uniform draw in [0, 1).
absl::Duration RetryDelay(int consecutive_failures, double unit);

// Makes one client connection; called once per simulated client.
using ConnectFn =
    std::function<absl::StatusOr<std::unique_ptr<MetaoptClient>>()>;

// The addresses of a comma-separated --server list ("h1:p1,h2:p2"), in order.
// INVALID_ARGUMENT naming the list when it or one of its entries is empty.
absl::StatusOr<std::vector<std::string>> ParseServerList(
    const std::string& list);

// Connects each new client to the next of `addresses` in turn (round-robin:
// the first connection, which creates the studies, to addresses[0]), with
// `options` otherwise. Thread-safe.
ConnectFn RoundRobinConnect(std::vector<std::string> addresses,
                            const MetaoptClient::Options& options);

// Creates the studies, runs the load, deletes the studies if asked and
// returns the figures. RPC errors during the load are counted, not returned;
// errors creating or deleting the studies are. Writes a progress line to
// `progress` (may be null) every options.progress_interval. Thread-compatible.
absl::StatusOr<LoadReport> RunLoad(const LoadOptions& options,
                                   const ConnectFn& connect,
                                   std::ostream* progress);

// "RANDOM" / "GP" and "continuous" / "catalogue".
std::string AlgorithmName(v1::AlgorithmKind kind);
std::string SpaceName(SpaceKind space);

// The report as an aligned text table, as JSON, or as CSV (one row per RPC;
// with a header line when `header`).
std::string FormatTable(const LoadReport& report);
std::string FormatJson(const LoadReport& report);
std::string FormatCsv(const LoadReport& report, bool header);

}  // namespace metaopt::loadgen

#endif  // METAOPT_TOOLS_LOADGEN_LOAD_GENERATOR_H_
