// metaopt-server: the ask/tell optimization service.
#include <pthread.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/common/logging.h"
#include "core/common/memory.h"
#include "core/common/parallel.h"
#include "core/space/search_space.h"
#include "core/storage/storage.h"
#include "server/server.h"

namespace {

bool IsLoopback(const std::string& listen) {
  return absl::StartsWith(listen, "127.") ||
         absl::StartsWith(listen, "localhost:") ||
         absl::StartsWith(listen, "[::1]:");
}

std::string HostOf(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  return colon == std::string::npos ? listen : listen.substr(0, colon);
}

// The built dashboard beside the binary: <bin>/../dashboard/dist (the build
// tree: build/server/metaopt-server, build/dashboard/dist) or
// <bin>/../share/metaopt/dashboard (an install). Empty when neither holds an
// index.html.
std::string DefaultDashboardDir() {
  std::error_code error;
  const std::filesystem::path exe =
      std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "";
  const std::filesystem::path up = exe.parent_path().parent_path();
  for (const std::filesystem::path& dir :
       {up / "dashboard" / "dist", up / "share" / "metaopt" / "dashboard"}) {
    if (std::filesystem::is_regular_file(dir / "index.html", error)) {
      return dir.string();
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's abseil is built without NDEBUG, so every Mutex acquisition would
  // update a global lock-order graph (a debugging aid, off in abseil's release
  // builds): a measurable share of the server's CPU under load. Tests keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  metaopt::KeepFreedBuffersForReuse();
  metaopt::server::ServerOptions options;
  std::string log_level = "info";
  std::string log_format = "text";
  CLI::App app{
      "metaopt-server: ask/tell optimization of ML pipelines and "
      "hyperparameters (gRPC)"};
  app.add_option("--listen", options.listen,
                 "host:port to listen on (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--db", options.db_path,
                 "database: a SQLite file, sqlite:PATH, or a PostgreSQL URI "
                 "postgresql://user:password@host:port/dbname (shared by "
                 "several servers); default from the environment variable "
                 "METAOPT_DB, which keeps a password out of the process list")
      ->capture_default_str()
      ->envname("METAOPT_DB");
  app.add_option("--db-pool-size", options.db_pool_size,
                 "PostgreSQL connections per server")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  double db_retry_seconds = absl::ToDoubleSeconds(options.db_retry_budget);
  app.add_option("--db-retry-seconds", db_retry_seconds,
                 "PostgreSQL: seconds a call keeps retrying an unreachable "
                 "database (with backoff) before the RPC fails UNAVAILABLE")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--models", options.models_dir, "model registry directory")
      ->capture_default_str();
  double poll_seconds = 30;
  app.add_option("--models-poll-interval", poll_seconds,
                 "seconds between polls of the model registry (0: no polling)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--max-message-bytes", options.max_message_bytes,
                 "largest message accepted")
      ->capture_default_str()
      ->check(CLI::Range(1 << 16, 1 << 30));
  app.add_option("--max-threads", options.max_threads,
                 "workers that run OptimizerService RPCs; more concurrent "
                 "RPCs wait in a queue, none is rejected")
      ->capture_default_str()
      ->check(CLI::Range(2, 4096));
  int compute_threads =
      static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  app.add_option("--compute-threads", compute_threads,
                 "threads one Suggest may use for its largest computations "
                 "(the exact GP variances over many candidates); set it to "
                 "the pod's CPU limit")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--log-level", log_level, "debug, info, warning or error")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warning", "error"}));
  app.add_option("--log-format", log_format, "text or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"text", "json"}));
  metaopt::study::EngineOptions& engine = options.engine;
  double trial_lease_seconds = absl::ToDoubleSeconds(engine.trial_lease);
  app.add_option("--trial-lease", trial_lease_seconds,
                 "seconds an ACTIVE trial stays leased without a Heartbeat or "
                 "Suggest from its client; then it turns STALE")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 365.0 * 86400));
  double deadline_margin_seconds =
      absl::ToDoubleSeconds(engine.deadline_margin);
  app.add_option("--suggest-deadline-margin", deadline_margin_seconds,
                 "seconds kept before a Suggest's deadline; with less time "
                 "left than this plus the study's recent policy latency, "
                 "Suggest answers with random configurations")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 60.0));
  app.add_option("--max-suggest-count", engine.max_suggest_count,
                 "largest Suggest count")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--max-page-size", engine.max_page_size,
                 "largest page_size of ListStudies and ListTrials")
      ->capture_default_str()
      ->check(CLI::Range(100, 1000));
  app.add_option("--max-stages", engine.max_stages,
                 "largest number of stages in a study's search space")
      ->capture_default_str()
      ->check(CLI::Range(1, metaopt::space::kMaxStages));
  app.add_option("--max-algorithms-per-stage", engine.max_algorithms_per_stage,
                 "largest number of algorithms in one stage")
      ->capture_default_str()
      ->check(CLI::Range(1, metaopt::space::kMaxAlgorithmsPerStage));
  app.add_option("--max-parameters-per-algorithm",
                 engine.max_parameters_per_algorithm,
                 "largest number of parameters of one algorithm")
      ->capture_default_str()
      ->check(CLI::Range(1, metaopt::space::kMaxParametersPerAlgorithm));
  app.add_option("--max-candidates", engine.max_candidates,
                 "largest candidate catalogue (spec.candidates) of a study")
      ->capture_default_str()
      ->check(CLI::Range(1, metaopt::space::kMaxCandidates));
  app.add_option("--max-parameters", engine.max_parameters,
                 "largest number of parameters of a study's whole search "
                 "space (a study's memory grows by about 1.7 KB each)")
      ->capture_default_str()
      ->check(CLI::Range(1, metaopt::study::EngineOptions::kHardMaxParameters));
  app.add_option("--max-model-dimension", engine.max_model_dimension,
                 "largest encoded dimension of a GP, DeepPipe, Mosaic or GROSI "
                 "study's space (its Suggest cost and memory grow with it)")
      ->capture_default_str()
      ->check(
          CLI::Range(1, metaopt::study::EngineOptions::kHardMaxModelDimension));
  app.add_option("--max-dataset-features", engine.max_dataset_features,
                 "largest number of spec.dataset_features of a study")
      ->capture_default_str()
      ->check(CLI::Range(
          1, metaopt::study::EngineOptions::kHardMaxDatasetFeatures));
  app.add_option("--max-metrics", engine.max_metrics,
                 "largest metrics map of one Observe or ReportIntermediate")
      ->capture_default_str()
      ->check(CLI::Range(1, metaopt::study::EngineOptions::kHardMaxMetrics));
  app.add_option("--max-intermediate-values", engine.max_intermediate_values,
                 "intermediate values (ReportIntermediate steps) one trial "
                 "keeps")
      ->capture_default_str()
      ->check(CLI::Range(
          1, metaopt::study::EngineOptions::kHardMaxIntermediateValues));
  app.add_option("--max-trial-intermediate-bytes",
                 engine.max_trial_intermediate_bytes,
                 "serialized bytes of one trial's intermediate values with "
                 "their metrics (at most half of the largest response page, "
                 "7/8 of --max-message-bytes up to 4 MiB)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  app.add_option("--max-study-intermediate-bytes",
                 engine.max_study_intermediate_bytes,
                 "serialized bytes of the intermediate values of all trials "
                 "of one study (a loaded study keeps them in memory)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--tls-cert", options.tls_cert_file,
                 "PEM certificate chain of the server (enables TLS)");
  app.add_option("--tls-key", options.tls_key_file,
                 "PEM private key of the server");
  app.add_option("--tls-client-ca", options.tls_client_ca_file,
                 "PEM CA certificates; clients must present a certificate "
                 "they signed (mutual TLS)");
  app.add_option("--tokens", options.tokens_file,
                 "file of 'owner:token' lines; calls then need "
                 "'authorization: Bearer <token>' and studies are per owner");
  app.add_option("--max-studies-per-owner", options.max_studies_per_owner,
                 "studies one owner may hold (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-loaded-studies", options.max_loaded_studies,
                 "studies kept in memory; beyond it the least recently used "
                 "idle ones are dropped from memory and load again from the "
                 "database when next used (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--metrics-listen", options.metrics_listen,
                 "HOST:PORT of the Prometheus /metrics endpoint (port 0: any "
                 "free port; empty: no metrics)")
      ->capture_default_str();
  app.add_option("--http-listen", options.http_listen,
                 "HOST:PORT of the web dashboard and its read-only JSON API "
                 "under /api/v1/ (port 0: any free port; empty: none)")
      ->capture_default_str();
  app.add_option("--katib-listen", options.katib_listen,
                 "HOST:PORT of Kubeflow Katib's Suggestion and EarlyStopping "
                 "services (plaintext, no tokens; docs/katib.md; port 0: any "
                 "free port; empty: none)")
      ->capture_default_str();
  app.add_option("--katib-namespace", options.katib_namespace,
                 "Kubernetes namespace of a Katib experiment whose call's "
                 "authority (<service>.<namespace>:<port>, as Katib dials) "
                 "names none: studies are katib-<namespace>-<experiment>, "
                 "owned by the namespace when --tokens is set")
      ->capture_default_str();
  app.add_option("--http-threads", options.http_threads,
                 "dashboard listener: connections served at once (each "
                 "holds a thread while it sends, waits and reads)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  double http_read_timeout = absl::ToDoubleSeconds(options.http_read_timeout);
  app.add_option("--http-read-timeout", http_read_timeout,
                 "dashboard listener: seconds a connection has to send its "
                 "request (and the longest a write may make no progress)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
  double http_write_timeout = absl::ToDoubleSeconds(options.http_write_timeout);
  app.add_option("--http-write-timeout", http_write_timeout,
                 "dashboard listener: seconds a response may take to be "
                 "written; slower readers are disconnected")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--http-max-response-bytes", options.http_max_response_bytes,
                 "dashboard listener: largest response body")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1} << 16, int64_t{1} << 32));
  app.add_option("--http-allowed-hosts", options.http_allowed_hosts,
                 "without --tokens: host names the dashboard's Host header "
                 "may carry besides localhost and IP addresses (against DNS "
                 "rebinding); '*' allows any")
      ->delimiter(',');
  app.add_option("--dashboard-dir", options.dashboard_dir,
                 "directory of the built dashboard (default: the one beside "
                 "the binary, <bin>/../dashboard/dist or "
                 "<bin>/../share/metaopt/dashboard)");
  metaopt::history::LearnerOptions& learner = options.learner;
  app.add_flag("--learn-from-history", options.learn_from_history,
               "train and serve models (portfolio + DeepPipe) from completed "
               "studies over a shared search space (docs/models.md)");
  app.add_option("--learn-min-studies", learner.min_studies,
                 "a new model once this many more studies over one space "
                 "have completed than the last model was trained on")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--learn-min-trials", learner.history.min_completed_trials,
                 "COMPLETED trials that make a study completed (for learning)")
      ->capture_default_str()
      ->check(CLI::Range(3, metaopt::history::kMaxMinCompletedTrials));
  app.add_option("--learn-epochs", learner.deeppipe.epochs,
                 "DeepPipe meta-training epochs of a learned model")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  double learn_max_minutes = 30;
  app.add_option("--learn-max-minutes", learn_max_minutes,
                 "DeepPipe meta-training stops after the epoch that exceeds "
                 "this wall time (the best epoch is kept)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 10080.0));
  CLI11_PARSE(app, argc, argv);
  metaopt::SetComputeThreads(compute_threads);
  learner.deeppipe.time_budget = absl::Seconds(60.0 * learn_max_minutes);
  if (options.dashboard_dir.empty())
    options.dashboard_dir = DefaultDashboardDir();
  options.models_poll_interval = absl::Seconds(poll_seconds);
  options.db_retry_budget = absl::Seconds(db_retry_seconds);
  engine.trial_lease = absl::Seconds(trial_lease_seconds);
  engine.deadline_margin = absl::Seconds(deadline_margin_seconds);
  options.http_read_timeout = absl::Seconds(http_read_timeout);
  options.http_write_timeout = absl::Seconds(http_write_timeout);

  metaopt::SetMinLogSeverity(
      log_level == "debug"     ? metaopt::LogSeverity::kDebug
      : log_level == "warning" ? metaopt::LogSeverity::kWarning
      : log_level == "error"   ? metaopt::LogSeverity::kError
                               : metaopt::LogSeverity::kInfo);
  metaopt::SetLogFormat(log_format == "json" ? metaopt::LogFormat::kJson
                                             : metaopt::LogFormat::kText);

  // Block the termination signals in every thread; a watcher thread waits for
  // them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = metaopt::server::Server::BuildAndStart(options);
  if (!server.ok()) {
    metaopt::LogError(absl::StrCat("metaopt-server failed to start: ",
                                   server.status().ToString()));
    return 1;
  }
  const std::string address =
      absl::StrCat(HostOf(options.listen), ":", (*server)->port());
  const bool tls = !options.tls_cert_file.empty();
  const bool tokens = !options.tokens_file.empty();
  metaopt::LogInfo(absl::StrCat(
      "metaopt-server listening on ", address, " (database ",
      metaopt::storage::DescribeDatabase(options.db_path), ", models ",
      options.models_dir, ": ", (*server)->models().List().size(), " loaded; ",
      !tls                                 ? "plaintext"
      : options.tls_client_ca_file.empty() ? "TLS"
                                           : "mutual TLS",
      tokens ? ", bearer tokens" : ", no authentication", ")"));
  if (!IsLoopback(options.listen) && !(tls && tokens)) {
    metaopt::LogWarning(absl::StrCat(
        "listening beyond loopback (", options.listen, ") without ",
        !tls && !tokens ? "TLS or authentication (--tls-cert, --tokens)"
        : !tls          ? "TLS (--tls-cert): tokens cross the network in clear"
                        : "authentication (--tokens): every client sees every "
                          "study"));
  }
  if ((*server)->metrics_port() != 0) {
    metaopt::LogInfo(absl::StrCat("metrics at http://",
                                  HostOf(options.metrics_listen), ":",
                                  (*server)->metrics_port(), "/metrics"));
  }

  if (!options.http_listen.empty() && !IsLoopback(options.http_listen)) {
    metaopt::LogWarning(absl::StrCat(
        "the dashboard listens beyond loopback (", options.http_listen,
        ") over plain HTTP: ",
        tokens ? "bearer tokens cross the network in clear (put TLS in front)"
               : "anyone who reaches it reads every study (--tokens)"));
  }
  if ((*server)->http_port() != 0) {
    metaopt::LogInfo(absl::StrCat(
        "dashboard at http://", HostOf(options.http_listen), ":",
        (*server)->http_port(), "/ (API under /api/v1/",
        tokens ? ", bearer tokens" : "",
        options.dashboard_dir.empty() ? "; the page is not built" : "", ")"));
  }

  std::thread watcher([&server, &signals] {
    int signal = 0;
    sigwait(&signals, &signal);
    metaopt::LogInfo(
        absl::StrCat("received signal ", signal, "; shutting down"));
    (*server)->Shutdown(absl::Seconds(10));
  });
  (*server)->Wait();
  // Wake the watcher if the server stopped for another reason.
  pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  server->reset();  // closes the database
  metaopt::LogInfo("metaopt-server stopped");
  return 0;
}
