// metaoptctl: command-line client for metaopt.v1.OptimizerService.
//
//   metaoptctl [--server=ADDR] [--timeout=SECONDS] [--print-defaults]
//   [--proto-names] [--token=TOKEN] [--tls] [--tls-ca=FILE]
//   [--tls-cert=FILE --tls-key=FILE] [--tls-server-name=NAME] COMMAND ...
//
// Prints each response as proto3 JSON on stdout. Errors go to stderr as
// "metaoptctl: <CODE>: <message>" with exit code 1; command-line usage errors
// exit with 2. The server address defaults to $METAOPT_SERVER, else
// localhost:50051; the token to $METAOPT_TOKEN.

#include <google/protobuf/message.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "clients/cpp/client_flags.h"
#include "clients/cpp/metaopt_client.h"
#include "core/common/file_util.h"
#include "core/common/status_macros.h"
#include "core/history/export_folder.h"

namespace metaopt {
namespace {

struct GlobalFlags {
  // Address, token and TLS (AddConnectionFlags).
  MetaoptClient::Options connection;
  double timeout_seconds = 30;
  bool print_defaults = false;
  bool proto_names = false;
};

// The file at `path`, or standard input for "-".
absl::StatusOr<std::string> ReadFileOrStdin(const std::string& path) {
  if (path != "-") return ReadFileToString(path, "");
  std::stringstream buffer;
  buffer << std::cin.rdbuf();
  return buffer.str();
}

// Parses the proto3 JSON in `path` ("-": standard input) into `message`.
absl::Status ParseJsonFile(const std::string& path,
                           google::protobuf::Message* message) {
  absl::StatusOr<std::string> text = ReadFileOrStdin(path);
  if (!text.ok()) return text.status();
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status =
      google::protobuf::util::JsonStringToMessage(*text, message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a valid ", message->GetTypeName(),
                     " in proto3 JSON: ", std::string(status.message())));
  }
  return absl::OkStatus();
}

// Merges the JSON object {"name": number, ...} in `path` into `features`; a
// name already there takes the file's value. Errors name the file and the key.
absl::Status MergeDatasetFeatures(
    const std::string& path,
    google::protobuf::Map<std::string, double>* features) {
  absl::StatusOr<std::string> text =
      ReadFileToString(path, "--dataset-features");
  if (!text.ok()) return text.status();
  google::protobuf::Struct object;
  const auto parsed =
      google::protobuf::util::JsonStringToMessage(*text, &object);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--dataset-features ", path, ": not a JSON object of name -> number: ",
        std::string(parsed.message())));
  }
  for (const auto& [name, value] : object.fields()) {
    if (value.kind_case() != google::protobuf::Value::kNumberValue ||
        !std::isfinite(value.number_value())) {
      return absl::InvalidArgumentError(
          absl::StrCat("--dataset-features ", path, ": key \"", name,
                       "\": the value must be a finite number"));
    }
    (*features)[name] = value.number_value();
  }
  return absl::OkStatus();
}

absl::Status PrintJson(const google::protobuf::Message& message,
                       const GlobalFlags& flags) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = flags.print_defaults;
  options.preserve_proto_field_names = flags.proto_names;
  std::string json;
  const auto status =
      google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("cannot print response as JSON: ",
                                            std::string(status.message())));
  }
  std::cout << json;
  if (json.empty() || json.back() != '\n') std::cout << '\n';
  std::cout.flush();
  return absl::OkStatus();
}

// "completed", "COMPLETED" or "TRIAL_STATE_COMPLETED" -> TRIAL_STATE_COMPLETED.
bool ParseTrialState(const std::string& text, v1::TrialState* state) {
  std::string name = absl::AsciiStrToUpper(text);
  if (name.rfind("TRIAL_STATE_", 0) != 0) name = "TRIAL_STATE_" + name;
  return v1::TrialState_Parse(name, state);
}

bool ParseScope(const std::string& text, v1::FineTuneScope* scope) {
  std::string name = absl::AsciiStrToUpper(text);
  if (name.rfind("FINE_TUNE_SCOPE_", 0) != 0) name = "FINE_TUNE_SCOPE_" + name;
  return v1::FineTuneScope_Parse(name, scope) &&
         *scope != v1::FINE_TUNE_SCOPE_UNSPECIFIED;
}

// Follows next_page_token until the listing ends, appending every page to the
// first response (whose other fields, such as a summary, are kept). `fetch`
// returns one page for a token; `items` selects the repeated field to
// concatenate.
template <typename Response, typename Fetch, typename Items>
absl::StatusOr<Response> FetchAllPages(std::string token, Fetch fetch,
                                       Items items) {
  Response all;
  for (bool first = true;; first = false) {
    absl::StatusOr<Response> page = fetch(token);
    if (!page.ok()) return page.status();
    if (first) {
      all = *page;
      items(&all)->Clear();
    }
    for (auto& item : *items(&*page)) *items(&all)->Add() = std::move(item);
    if (page->next_page_token().empty()) break;
    if (page->next_page_token() == token) {
      return absl::InternalError(
          absl::StrCat("server returned the same page token twice: ", token));
    }
    token = page->next_page_token();
  }
  all.clear_next_page_token();
  return all;
}

std::string TrialStateNames() {
  std::vector<std::string> names;
  for (int i = v1::TrialState_MIN + 1; i <= v1::TrialState_MAX; ++i) {
    if (!v1::TrialState_IsValid(i)) continue;
    names.push_back(absl::AsciiStrToLower(
        v1::TrialState_Name(static_cast<v1::TrialState>(i))
            .substr(sizeof("TRIAL_STATE_") - 1)));
  }
  return absl::StrJoin(names, "|");
}

// Reports CLI misuse found after parsing with CLI11's formatting and exit code.
[[noreturn]] void Usage(const std::string& option, const std::string& message) {
  throw CLI::ValidationError(option, message);
}

// --metric NAME=NUMBER values as a map; a malformed one is a usage error.
std::map<std::string, double> ParseMetrics(
    const std::vector<std::string>& metrics) {
  std::map<std::string, double> parsed;
  for (const std::string& m : metrics) {
    const auto eq = m.find('=');
    double number = 0;
    if (eq == std::string::npos || eq == 0 ||
        !absl::SimpleAtod(m.substr(eq + 1), &number)) {
      Usage("--metric", absl::StrCat("expected NAME=NUMBER, got '", m, "'"));
    }
    parsed[m.substr(0, eq)] = number;
  }
  return parsed;
}

// --objective NAME:GOAL[:REFERENCE] (GOAL maximize|minimize, or max|min) as
// an Objective; a malformed one is a usage error.
v1::Objective ParseObjective(const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  v1::Objective objective;
  std::string goal =
      parts.size() >= 2 ? absl::AsciiStrToLower(parts[1]) : std::string();
  if (goal == "max") goal = "maximize";
  if (goal == "min") goal = "minimize";
  double reference = 0;
  if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() ||
      (goal != "maximize" && goal != "minimize") ||
      (parts.size() == 3 && (!absl::SimpleAtod(parts[2], &reference) ||
                             !std::isfinite(reference)))) {
    Usage("--objective",
          absl::StrCat("expected NAME:GOAL[:REFERENCE] with GOAL maximize or "
                       "minimize and a finite REFERENCE, got '",
                       text, "'"));
  }
  objective.set_name(parts[0]);
  objective.set_goal(goal == "maximize" ? v1::GOAL_MAXIMIZE
                                        : v1::GOAL_MINIMIZE);
  if (parts.size() == 3) objective.set_reference(reference);
  return objective;
}

// --constraint METRIC<=BOUND or METRIC>=BOUND as a Constraint; a malformed one
// is a usage error.
v1::Constraint ParseConstraint(const std::string& text) {
  v1::Constraint constraint;
  size_t at = text.find("<=");
  constraint.set_sense(v1::CONSTRAINT_SENSE_AT_MOST);
  if (at == std::string::npos) {
    at = text.find(">=");
    constraint.set_sense(v1::CONSTRAINT_SENSE_AT_LEAST);
  }
  double bound = 0;
  if (at == std::string::npos || at == 0 ||
      !absl::SimpleAtod(text.substr(at + 2), &bound) || !std::isfinite(bound)) {
    Usage("--constraint",
          absl::StrCat("expected METRIC<=BOUND or METRIC>=BOUND with a finite "
                       "BOUND, got '",
                       text, "'"));
  }
  constraint.set_metric(text.substr(0, at));
  constraint.set_bound(bound);
  return constraint;
}

int Run(int argc, char** argv) {
  GlobalFlags flags;
  CLI::App app{
      "Command-line client for the metaopt ask/tell optimization service.\n"
      "Responses are printed as proto3 JSON; errors as 'metaoptctl: CODE: "
      "message'.",
      "metaoptctl"};
  app.require_subcommand(1);
  app.fallthrough();
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    // The command being parsed when the error happened, if any.
    std::vector<CLI::App*> commands = failed != nullptr
                                          ? failed->get_subcommands()
                                          : std::vector<CLI::App*>();
    std::string hint =
        commands.empty() ? "metaoptctl --help"
                         : absl::StrCat("metaoptctl ",
                                        commands.back()->get_name(), " --help");
    return absl::StrCat("metaoptctl: ", e.what(), "\nRun '", hint,
                        "' for usage.\n");
  });
  AddConnectionFlags(app, &flags.connection);
  app.add_option("--timeout", flags.timeout_seconds,
                 "Deadline of each call in seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--print-defaults", flags.print_defaults,
               "Print fields that hold their default value (0, \"\", false)");
  app.add_flag("--proto-names", flags.proto_names,
               "Print field names as in the .proto (study_id) instead of "
               "lowerCamelCase (studyId)");

  // Each command sets `run` to the work it does once the command line is
  // parsed.
  std::function<absl::Status(MetaoptClient&)> run;
  auto print = [&flags](const auto& response) -> absl::Status {
    if (!response.ok()) return response.status();
    return PrintJson(*response, flags);
  };

  // create-study
  std::string study_id;
  std::string spec_path;
  std::string dataset_features_path;
  std::string dataset_sample_path;
  std::vector<std::string> objective_texts;
  std::vector<std::string> constraint_texts;
  auto* create = app.add_subcommand("create-study",
                                    "Create a study (or get it, if the same "
                                    "id and spec exist)");
  create->add_option("--id", study_id, "Study id")->required();
  create
      ->add_option("--spec", spec_path,
                   "StudySpec as proto3 JSON (file, or - for stdin)")
      ->required();
  create->add_option(
      "--dataset-features", dataset_features_path,
      "JSON object of meta-feature name -> number, merged into the spec's "
      "datasetFeatures (e.g. from metaopt.metafeatures.compute)");
  create->add_option(
      "--dataset-sample", dataset_sample_path,
      "metaopt.v1.DatasetSample as proto3 JSON (columnKinds, values, "
      "numTargets, targets), set as the spec's datasetSample (e.g. "
      "json_format.MessageToJson(metaopt.dataset_sample.draw(X, y)))");
  create
      ->add_option("--objective", objective_texts,
                   "Objective NAME:GOAL[:REFERENCE] (GOAL maximize or "
                   "minimize; REFERENCE: its coordinate of the hypervolume's "
                   "reference point), repeatable: 2 or 3 are optimized "
                   "together. Replaces the spec's objective(s)")
      ->allow_extra_args(false);
  create
      ->add_option("--constraint", constraint_texts,
                   "Constraint METRIC<=BOUND or METRIC>=BOUND on an observed "
                   "metric (repeatable); added to the spec's")
      ->allow_extra_args(false);
  create->callback([&] {
    std::vector<v1::Objective> objectives;
    for (const std::string& text : objective_texts) {
      objectives.push_back(ParseObjective(text));
    }
    std::vector<v1::Constraint> constraints;
    for (const std::string& text : constraint_texts) {
      constraints.push_back(ParseConstraint(text));
    }
    run = [&, objectives, constraints](MetaoptClient& client) -> absl::Status {
      v1::CreateStudyRequest request;
      request.set_study_id(study_id);
      absl::Status parsed = ParseJsonFile(spec_path, request.mutable_spec());
      if (!parsed.ok()) return parsed;
      v1::StudySpec& spec = *request.mutable_spec();
      if (!objectives.empty()) {
        // The server's canonical form: the first objective is also
        // `objective`; a single one is `objective` alone.
        spec.clear_objectives();
        *spec.mutable_objective() = objectives[0];
        if (objectives.size() > 1) {
          spec.mutable_objectives()->Add(objectives.begin(), objectives.end());
        }
      }
      spec.mutable_constraints()->Add(constraints.begin(), constraints.end());
      if (!dataset_features_path.empty()) {
        absl::Status merged = MergeDatasetFeatures(
            dataset_features_path,
            request.mutable_spec()->mutable_dataset_features());
        if (!merged.ok()) return merged;
      }
      if (!dataset_sample_path.empty()) {
        absl::Status sample =
            ParseJsonFile(dataset_sample_path,
                          request.mutable_spec()->mutable_dataset_sample());
        if (!sample.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--dataset-sample ", sample.message()));
        }
      }
      absl::StatusOr<v1::CreateStudyResponse> response =
          client.CreateStudy(request);
      if (response.ok()) {
        // A meta-learned algorithm without a model: say so, on stderr.
        const auto& metadata = response->study().metadata();
        const auto binding = metadata.find("binding");
        const auto reason = metadata.find("binding_reason");
        if (binding != metadata.end() && binding->second == "none") {
          std::cerr << "metaoptctl: warning: study \"" << study_id
                    << "\" is bound to no model"
                    << (reason != metadata.end() ? ": " + reason->second
                                                 : std::string())
                    << "\n";
        }
      }
      return print(response);
    };
  });

  // get-study
  auto* get_study = app.add_subcommand("get-study", "Show a study");
  get_study->add_option("study_id", study_id, "Study id")->required();
  get_study->callback([&] {
    run = [&](MetaoptClient& client) {
      v1::GetStudyRequest request;
      request.set_study_id(study_id);
      return print(client.GetStudy(request));
    };
  });

  // list-studies / list-trials paging
  int page_size = 0;
  std::string page_token;
  bool all_pages = false;
  auto add_paging = [&](CLI::App* command) {
    command
        ->add_option("--page-size", page_size,
                     "Items per page (server default if 0)")
        ->check(CLI::NonNegativeNumber);
    command->add_option("--page-token", page_token,
                        "Token from a previous next_page_token");
    command->add_flag("--all", all_pages,
                      "Follow next_page_token and print every page as one");
  };

  auto* list_studies = app.add_subcommand("list-studies", "List studies");
  add_paging(list_studies);
  list_studies->callback([&] {
    run = [&](MetaoptClient& client) {
      auto fetch = [&](const std::string& token) {
        v1::ListStudiesRequest request;
        request.set_page_size(page_size);
        request.set_page_token(token);
        return client.ListStudies(request);
      };
      if (!all_pages) return print(fetch(page_token));
      return print(FetchAllPages<v1::ListStudiesResponse>(
          page_token, fetch,
          [](v1::ListStudiesResponse* r) { return r->mutable_studies(); }));
    };
  });

  // delete-study
  auto* delete_study =
      app.add_subcommand("delete-study", "Delete a study and its trials");
  delete_study->add_option("study_id", study_id, "Study id")->required();
  delete_study->callback([&] {
    run = [&](MetaoptClient& client) {
      v1::DeleteStudyRequest request;
      request.set_study_id(study_id);
      return print(client.DeleteStudy(request));
    };
  });

  // damaged-studies
  bool delete_damaged = false;
  auto* damaged = app.add_subcommand(
      "damaged-studies",
      "Find the studies whose stored rows no longer parse (listed by id "
      "alone; GetStudy says what is damaged), optionally deleting them");
  damaged->add_flag("--delete", delete_damaged,
                    "Delete each damaged study (its rows cannot be exported "
                    "through the API; see docs/reliability.md to copy them "
                    "out of the database first)");
  damaged->callback([&] {
    run = [&](MetaoptClient& client) -> absl::Status {
      absl::StatusOr<v1::ListStudiesResponse> all =
          FetchAllPages<v1::ListStudiesResponse>(
              "",
              [&](const std::string& token) {
                v1::ListStudiesRequest request;
                request.set_page_token(token);
                return client.ListStudies(request);
              },
              [](v1::ListStudiesResponse* r) { return r->mutable_studies(); });
      if (!all.ok()) return all.status();
      google::protobuf::Struct report;
      google::protobuf::ListValue& found =
          *(*report.mutable_fields())["damagedStudies"].mutable_list_value();
      for (const v1::Study& listed : all->studies()) {
        if (listed.has_spec()) continue;  // A healthy study has its spec.
        v1::GetStudyRequest get;
        get.set_study_id(listed.study_id());
        absl::StatusOr<v1::GetStudyResponse> study = client.GetStudy(get);
        if (study.ok() || absl::IsNotFound(study.status())) continue;
        google::protobuf::Struct& entry =
            *found.add_values()->mutable_struct_value();
        (*entry.mutable_fields())["studyId"].set_string_value(
            listed.study_id());
        (*entry.mutable_fields())["error"].set_string_value(
            absl::StrCat(absl::StatusCodeToString(study.status().code()), ": ",
                         study.status().message()));
        if (delete_damaged) {
          v1::DeleteStudyRequest del;
          del.set_study_id(listed.study_id());
          absl::StatusOr<v1::DeleteStudyResponse> deleted =
              client.DeleteStudy(del);
          if (!deleted.ok()) return deleted.status();
          (*entry.mutable_fields())["deleted"].set_bool_value(true);
        }
      }
      return PrintJson(report, flags);
    };
  });

  // suggest
  int count = 1;
  std::string client_id;
  auto* suggest =
      app.add_subcommand("suggest", "Ask for configurations to evaluate");
  suggest->add_option("study_id", study_id, "Study id")->required();
  suggest->add_option("--count", count, "Number of trials")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  suggest->add_option(
      "--client-id", client_id,
      "Worker id; a retry with the same id gets its ACTIVE trials back");
  suggest->callback([&] {
    run = [&](MetaoptClient& client) {
      v1::SuggestRequest request;
      request.set_study_id(study_id);
      request.set_count(count);
      request.set_client_id(client_id);
      return print(client.Suggest(request));
    };
  });

  // observe
  int64_t trial_id = 0;
  std::string configuration_path;
  double value = 0;
  std::string failed_reason;
  std::string infeasible_reason;
  std::vector<std::string> metrics;
  uint64_t study_incarnation = 0;
  const std::string incarnation_help =
      "The trial's study_incarnation (from suggest): a trial of a deleted "
      "study with the same id is then refused instead of completing the new "
      "study's trial with its id";
  auto* observe = app.add_subcommand("observe",
                                     "Report the outcome of a trial or of an "
                                     "externally evaluated configuration");
  observe->add_option("study_id", study_id, "Study id")->required();
  auto* target =
      observe->add_option_group("target", "What was evaluated (exactly one)");
  auto* trial_opt =
      target->add_option("--trial", trial_id, "Trial id from suggest");
  target->add_option("--configuration", configuration_path,
                     "Configuration as proto3 JSON (file, or - for stdin)");
  target->require_option(1);
  auto* outcome =
      observe->add_option_group("outcome", "The result (exactly one)");
  auto* value_opt = outcome->add_option(
      "--value", value,
      "Objective value (several objectives: the first's, or give them all "
      "with --metric)");
  auto* failed_opt = outcome->add_option(
      "--failed", failed_reason, "The evaluation failed, for this reason");
  auto* infeasible_opt = outcome->add_option(
      "--infeasible", infeasible_reason,
      "The configuration cannot be evaluated, for this reason");
  outcome->require_option(0, 1);
  observe
      ->add_option("--metric", metrics,
                   "Metric NAME=NUMBER (repeatable): extra metrics, and in a "
                   "study with several objectives or constraints every "
                   "objective's and constrained metric's value")
      ->allow_extra_args(false);
  observe->add_option("--study-incarnation", study_incarnation,
                      incarnation_help);
  observe->callback([&] {
    const std::map<std::string, double> parsed_metrics = ParseMetrics(metrics);
    if (outcome->count_all() == 0 && parsed_metrics.empty()) {
      Usage("--value",
            "give one of --value, --failed, --infeasible, or the "
            "objectives' values with --metric");
    }
    run = [&, parsed_metrics](MetaoptClient& client) -> absl::Status {
      v1::ObserveRequest request;
      request.set_study_id(study_id);
      request.set_study_incarnation(study_incarnation);
      if (trial_opt->count() > 0) {
        request.set_trial_id(trial_id);
      } else {
        absl::Status parsed =
            ParseJsonFile(configuration_path, request.mutable_configuration());
        if (!parsed.ok()) return parsed;
      }
      if (value_opt->count() > 0) {
        request.set_value(value);
      } else if (failed_opt->count() > 0) {
        request.mutable_failure()->set_state(v1::TRIAL_STATE_FAILED);
        request.mutable_failure()->set_reason(failed_reason);
      } else if (infeasible_opt->count() > 0) {
        request.mutable_failure()->set_state(v1::TRIAL_STATE_INFEASIBLE);
        request.mutable_failure()->set_reason(infeasible_reason);
      }
      request.mutable_metrics()->insert(parsed_metrics.begin(),
                                        parsed_metrics.end());
      return print(client.Observe(request));
    };
  });

  // get-trial
  auto* get_trial = app.add_subcommand("get-trial", "Show a trial");
  get_trial->add_option("study_id", study_id, "Study id")->required();
  get_trial->add_option("trial_id", trial_id, "Trial id")->required();
  get_trial->callback([&] {
    run = [&](MetaoptClient& client) {
      v1::GetTrialRequest request;
      request.set_study_id(study_id);
      request.set_trial_id(trial_id);
      return print(client.GetTrial(request));
    };
  });

  // report
  int64_t step = 0;
  double report_value = 0;
  std::vector<std::string> report_metrics;
  auto* report = app.add_subcommand(
      "report",
      "Report an intermediate value of an ACTIVE trial; prints should_stop "
      "(then observe the trial with its last value) and the reason");
  report->add_option("study_id", study_id, "Study id")->required();
  report->add_option("trial_id", trial_id, "Trial id")->required();
  report->add_option("step", step, "Step (epoch, iteration), >= 0")->required();
  report->add_option("value", report_value, "Objective value at the step")
      ->required();
  report
      ->add_option("--metric", report_metrics,
                   "Extra metric NAME=NUMBER (repeatable)")
      ->allow_extra_args(false);
  std::string stop_reason;
  report->add_option(
      "--stop-reason", stop_reason,
      "Stop the trial here by the caller's own rule (e.g. an external "
      "pruner), with this reason; then observe it with its last value");
  report->callback([&] {
    const std::map<std::string, double> parsed_metrics =
        ParseMetrics(report_metrics);
    run = [&, parsed_metrics](MetaoptClient& client) {
      v1::ReportIntermediateRequest request;
      request.set_study_id(study_id);
      request.set_trial_id(trial_id);
      request.set_step(step);
      request.set_value(report_value);
      request.mutable_metrics()->insert(parsed_metrics.begin(),
                                        parsed_metrics.end());
      request.set_client_stop_reason(stop_reason);
      return print(client.ReportIntermediate(request));
    };
  });

  // heartbeat
  std::vector<int64_t> heartbeat_ids;
  auto* heartbeat = app.add_subcommand(
      "heartbeat", "Extend the leases of ACTIVE trials still being evaluated");
  heartbeat->add_option("study_id", study_id, "Study id")->required();
  heartbeat->add_option("trial_ids", heartbeat_ids, "Trial ids (1 to 1000)")
      ->required();
  heartbeat->add_option("--study-incarnation", study_incarnation,
                        incarnation_help);
  heartbeat->callback([&] {
    run = [&](MetaoptClient& client) {
      v1::HeartbeatRequest request;
      request.set_study_id(study_id);
      request.set_study_incarnation(study_incarnation);
      for (int64_t id : heartbeat_ids) request.add_trial_ids(id);
      return print(client.Heartbeat(request));
    };
  });

  // list-trials
  std::string state_name;
  auto* list_trials =
      app.add_subcommand("list-trials", "List a study's trials by id");
  list_trials->add_option("study_id", study_id, "Study id")->required();
  list_trials->add_option("--state", state_name,
                          "Only trials in this state: " + TrialStateNames());
  add_paging(list_trials);
  list_trials->callback([&] {
    v1::TrialState state = v1::TRIAL_STATE_UNSPECIFIED;
    if (!state_name.empty() && !ParseTrialState(state_name, &state)) {
      Usage("--state", absl::StrCat("unknown trial state '", state_name,
                                    "'; one of ", TrialStateNames()));
    }
    run = [&, state](MetaoptClient& client) {
      auto fetch = [&](const std::string& token) {
        v1::ListTrialsRequest request;
        request.set_study_id(study_id);
        request.set_page_size(page_size);
        request.set_page_token(token);
        request.set_state(state);
        return client.ListTrials(request);
      };
      if (!all_pages) return print(fetch(page_token));
      return print(FetchAllPages<v1::ListTrialsResponse>(
          page_token, fetch,
          [](v1::ListTrialsResponse* r) { return r->mutable_trials(); }));
    };
  });

  // pareto-front
  auto* pareto_front = app.add_subcommand(
      "pareto-front",
      "List a study's Pareto front (its non-dominated feasible trials) with "
      "its size, hypervolume and reference point");
  pareto_front->add_option("study_id", study_id, "Study id")->required();
  add_paging(pareto_front);
  pareto_front->callback([&] {
    run = [&](MetaoptClient& client) -> absl::Status {
      auto fetch = [&](const std::string& token) {
        v1::GetParetoFrontRequest request;
        request.set_study_id(study_id);
        request.set_page_size(page_size);
        request.set_page_token(token);
        return client.GetParetoFront(request);
      };
      if (!all_pages) return print(fetch(page_token));
      // The first page's summary describes the whole front.
      return print(FetchAllPages<v1::GetParetoFrontResponse>(
          page_token, fetch,
          [](v1::GetParetoFrontResponse* r) { return r->mutable_trials(); }));
    };
  });

  // fine-tune
  int steps = 0;
  std::string scope_name = "kernel";
  auto* fine_tune =
      app.add_subcommand("fine-tune", "Fit the study's surrogate further");
  fine_tune->add_option("study_id", study_id, "Study id")->required();
  fine_tune
      ->add_option("--steps", steps,
                   "Optimizer steps (0: the algorithm's default)")
      ->check(CLI::NonNegativeNumber);
  fine_tune
      ->add_option("--scope", scope_name,
                   "kernel (kernel hyperparameters) or full")
      ->capture_default_str();
  fine_tune->callback([&] {
    v1::FineTuneScope scope = v1::FINE_TUNE_SCOPE_UNSPECIFIED;
    if (!ParseScope(scope_name, &scope)) {
      Usage("--scope", absl::StrCat("unknown scope '", scope_name,
                                    "'; one of kernel|full"));
    }
    run = [&, scope](MetaoptClient& client) {
      v1::FineTuneRequest request;
      request.set_study_id(study_id);
      request.set_steps(steps);
      request.set_scope(scope);
      return print(client.FineTune(request));
    };
  });

  // list-models
  auto* list_models = app.add_subcommand(
      "list-models", "Show the models in the server's registry");
  list_models->callback([&] {
    run = [&](MetaoptClient& client) {
      return print(client.ListModels(v1::ListModelsRequest()));
    };
  });

  // export
  std::string export_dir;
  std::string export_space_of;
  bool export_all = false;
  int export_min_trials = 0;
  auto* export_command = app.add_subcommand(
      "export",
      "Write your completed studies as meta-dataset folders in the shared "
      "format (one per search space), for metaopt-train");
  export_command->add_option("--out", export_dir, "Directory for the folders")
      ->required();
  auto* space_of = export_command->add_option(
      "--space-of", export_space_of,
      "Export the studies over this study's search space");
  auto* all_compatible = export_command->add_flag(
      "--all-compatible", export_all,
      "Export every group of studies sharing a search space");
  space_of->excludes(all_compatible);
  all_compatible->excludes(space_of);
  export_command
      ->add_option("--min-completed-trials", export_min_trials,
                   "COMPLETED trials that make a study completed (0: the "
                   "server's default, 10)")
      ->check(CLI::Range(0, 1000000));
  export_command->callback([&] {
    if (export_space_of.empty() && !export_all) {
      Usage("--space-of", "give --space-of STUDY_ID or --all-compatible");
    }
    run = [&](MetaoptClient& client) -> absl::Status {
      v1::ExportMetaDatasetRequest request;
      if (export_all) {
        request.set_all_compatible(true);
      } else {
        request.set_space_of(export_space_of);
      }
      request.set_min_completed_trials(export_min_trials);
      history::ExportFolderWriter writer(export_dir);
      METAOPT_RETURN_IF_ERROR(client.ExportMetaDataset(
          request, [&](const v1::ExportMetaDatasetResponse& response) {
            history::FileChunk chunk;
            chunk.dataset = response.dataset();
            chunk.file = response.file();
            chunk.offset = response.offset();
            chunk.data = response.data();
            chunk.last_chunk = response.last_chunk();
            return writer.Write(chunk);
          }));
      METAOPT_ASSIGN_OR_RETURN(std::vector<std::string> folders,
                               writer.Finish());
      for (const std::string& folder : folders) {
        std::cout << export_dir << "/" << folder << "\n";
      }
      if (folders.empty()) {
        std::cerr << "metaoptctl: no completed studies to export" << std::endl;
      }
      return absl::OkStatus();
    };
  });

  // health
  std::string health_service;
  auto* health = app.add_subcommand(
      "health",
      "Ask the server's gRPC health service; exit status 0 when SERVING (for "
      "container and orchestrator health checks)");
  health->add_option("--service", health_service,
                     "Service to ask about (default: the server as a whole)");
  health->callback([&] {
    run = [&](MetaoptClient& client) -> absl::Status {
      absl::Status status = client.CheckHealth(health_service);
      if (status.ok()) std::cout << "SERVING" << std::endl;
      return status;
    };
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the error with a hint
    return code == static_cast<int>(CLI::ExitCodes::Success) ? 0 : 2;
  }

  MetaoptClient::Options options = flags.connection;
  options.timeout = absl::Seconds(flags.timeout_seconds);
  absl::StatusOr<std::unique_ptr<MetaoptClient>> client =
      MetaoptClient::Create(options);
  absl::Status status = client.ok() ? run(**client) : client.status();
  if (!status.ok()) {
    std::cerr << "metaoptctl: " << absl::StatusCodeToString(status.code())
              << ": " << status.message() << std::endl;
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace metaopt

int main(int argc, char** argv) { return metaopt::Run(argc, argv); }
