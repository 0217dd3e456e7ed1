// metaopt-loadgen: drives a metaopt server with N concurrent clients over M
// studies (Suggest -> evaluate a cheap test function -> Observe) and reports
// throughput and per-RPC latency percentiles.
//
//   metaopt-loadgen [--server=ADDR[,ADDR...]] [--clients=8] [--studies=4]
//     [--algorithm=random|gp] [--space=continuous|catalogue] [--duration=10]
//     [--total-ops=N] [--format=table|json|csv] [--json-out=FILE]
//     [--csv-out=FILE] [--token=TOKEN] [--tls] [--tls-ca=FILE]
//     [--tls-cert=FILE --tls-key=FILE] [--tls-server-name=NAME]
//
// The server address defaults to $METAOPT_SERVER, the token to
// $METAOPT_TOKEN (the connection options are metaoptctl's). Several
// addresses, separated by commas (replicas of one service on a shared
// database), are dealt to the clients in turn. Exit code 0 when
// the load ran (RPC errors are counted in the report), 1 when the studies
// could not be created or deleted, 2 for usage errors.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "clients/cpp/client_flags.h"
#include "clients/cpp/metaopt_client.h"
#include "tools/loadgen/load_generator.h"

namespace metaopt::loadgen {
namespace {

absl::Status WriteFile(const std::string& path, const std::string& text,
                       bool append) {
  std::ofstream out(path, append ? std::ios::app : std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

bool NonEmptyFile(const std::string& path) {
  std::ifstream in(path, std::ios::ate);
  return in && in.tellg() > 0;
}

int Main(int argc, char** argv) {
  // As in metaopt-server: no lock-order graph (a debugging aid that Debian's
  // abseil keeps on) in the measuring tool.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  LoadOptions options;
  MetaoptClient::Options client_options;
  // One connection per client, as separate worker processes would have.
  client_options.own_connection = true;
  std::string algorithm = "random";
  std::string space = "continuous";
  std::string calls = "suggest-observe";
  double duration_seconds = 10;
  double eval_ms = 0;
  double timeout_seconds = 30;
  double progress_seconds = 1;
  bool keep_studies = false;
  bool quiet = false;
  std::string format = "table";
  std::string json_out;
  std::string csv_out;
  options.study_prefix =
      absl::StrCat("loadgen-", absl::ToUnixSeconds(absl::Now()), "-", getpid());

  CLI::App app{
      "Drives a metaopt server with concurrent Suggest/Observe clients and "
      "reports throughput and latency percentiles per RPC.",
      "metaopt-loadgen"};
  AddConnectionFlags(app, &client_options);
  app.add_option("--clients", options.clients, "concurrent clients")
      ->capture_default_str();
  app.add_option("--studies", options.studies,
                 "studies; each loop picks one at random")
      ->capture_default_str();
  app.add_option("--algorithm", algorithm, "random or gp")
      ->capture_default_str()
      ->check(CLI::IsMember({"random", "gp"}));
  app.add_option("--space", space,
                 "continuous (x0..x{d-1} in [0, 1]) or catalogue (fixed "
                 "random points of that space)")
      ->capture_default_str()
      ->check(CLI::IsMember({"continuous", "catalogue"}));
  app.add_option("--dimensions", options.dimensions, "parameters per study")
      ->capture_default_str();
  app.add_option("--catalogue-size", options.catalogue_size,
                 "candidates of a catalogue study")
      ->capture_default_str();
  app.add_option("--count", options.suggest_count,
                 "trials asked for by one Suggest")
      ->capture_default_str();
  app.add_option("--calls", calls,
                 "each client's loop: suggest-observe, or a probe of the "
                 "fixed cost per RPC that writes nothing: list-models (no "
                 "study touched) or get-study")
      ->check(CLI::IsMember({"suggest-observe", "list-models", "get-study"}))
      ->capture_default_str();
  app.add_option("--duration", duration_seconds,
                 "seconds of load (0: bounded by --total-ops only)")
      ->capture_default_str();
  app.add_option("--total-ops", options.total_ops,
                 "stop after at most this many Suggest + Observe RPCs (0: no "
                 "bound)")
      ->capture_default_str();
  app.add_option("--failure-rate", options.failure_rate,
                 "fraction of evaluations reported as FAILED")
      ->capture_default_str();
  app.add_option("--eval-ms", eval_ms,
                 "simulated evaluation time between Suggest and Observe")
      ->capture_default_str();
  app.add_option("--seed", options.seed, "seeds specs, catalogue and clients")
      ->capture_default_str();
  app.add_option("--study-prefix", options.study_prefix,
                 "studies are <prefix>-0 .. <prefix>-(M-1)")
      ->capture_default_str();
  app.add_flag("--keep-studies", keep_studies,
               "do not delete the studies at the end");
  app.add_option("--timeout", timeout_seconds, "deadline of one RPC, seconds")
      ->capture_default_str();
  app.add_option("--progress", progress_seconds,
                 "seconds between progress lines on stderr (0: none)")
      ->capture_default_str();
  app.add_flag("--quiet", quiet, "no progress lines");
  app.add_option("--format", format, "stdout report: table, json or csv")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json", "csv"}));
  app.add_option("--json-out", json_out, "also write the JSON report here");
  app.add_option("--csv-out", csv_out,
                 "also append the CSV rows here (header only when the file "
                 "is new or empty)");
  CLI11_PARSE(app, argc, argv);

  options.algorithm =
      algorithm == "gp" ? v1::ALGORITHM_KIND_GP : v1::ALGORITHM_KIND_RANDOM;
  options.space =
      space == "catalogue" ? SpaceKind::kCatalogue : SpaceKind::kContinuous;
  options.calls = calls == "list-models" ? CallMix::kListModels
                  : calls == "get-study" ? CallMix::kGetStudy
                                         : CallMix::kSuggestObserve;
  options.delete_studies = !keep_studies;
  if (!(duration_seconds >= 0 && duration_seconds <= 86400 * 7) ||
      !(eval_ms >= 0 && eval_ms <= 3600e3) ||
      !(progress_seconds >= 0 && progress_seconds <= 3600) ||
      !(timeout_seconds > 0 && timeout_seconds <= 3600)) {
    std::cerr << "metaopt-loadgen: --duration must be in [0, 604800], "
                 "--eval-ms in [0, 3600000], --progress in [0, 3600] and "
                 "--timeout in (0, 3600]\n";
    return 2;
  }
  options.duration = absl::Seconds(duration_seconds);
  options.eval_time = absl::Milliseconds(eval_ms);
  options.progress_interval =
      quiet ? absl::ZeroDuration() : absl::Seconds(progress_seconds);
  client_options.timeout = absl::Seconds(timeout_seconds);
  // Each failed call is counted once: no retries inside the client.
  client_options.max_attempts = 1;
  if (absl::Status valid = ValidateOptions(options); !valid.ok()) {
    std::cerr << "metaopt-loadgen: " << valid.message() << "\n";
    return 2;
  }

  absl::StatusOr<std::vector<std::string>> servers =
      ParseServerList(client_options.address);
  if (!servers.ok()) {
    std::cerr << "metaopt-loadgen: " << servers.status().message() << "\n";
    return 2;
  }
  // Bad connection options (a certificate without its key, an unreadable
  // file) are usage errors.
  for (const std::string& server : *servers) {
    MetaoptClient::Options one = client_options;
    one.address = server;
    if (auto client = MetaoptClient::Create(one); !client.ok()) {
      std::cerr << "metaopt-loadgen: " << client.status().message() << "\n";
      return 2;
    }
  }

  absl::StatusOr<LoadReport> report =
      RunLoad(options, RoundRobinConnect(*servers, client_options), &std::cerr);
  if (!report.ok()) {
    std::cerr << "metaopt-loadgen: " << report.status() << "\n";
    return 1;
  }
  if (format == "json") {
    std::cout << FormatJson(*report);
  } else if (format == "csv") {
    std::cout << FormatCsv(*report, /*header=*/true);
  } else {
    std::cout << FormatTable(*report);
  }
  if (!json_out.empty()) {
    if (absl::Status s = WriteFile(json_out, FormatJson(*report), false);
        !s.ok()) {
      std::cerr << "metaopt-loadgen: " << s.message() << "\n";
      return 1;
    }
  }
  if (!csv_out.empty()) {
    const bool header = !NonEmptyFile(csv_out);
    if (absl::Status s =
            WriteFile(csv_out, FormatCsv(*report, header), /*append=*/true);
        !s.ok()) {
      std::cerr << "metaopt-loadgen: " << s.message() << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace metaopt::loadgen

int main(int argc, char** argv) { return metaopt::loadgen::Main(argc, argv); }
