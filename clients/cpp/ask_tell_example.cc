// ask_tell_example: the ask/tell loop with the C++ client.
//
// Creates (or reopens) a study over x1 in [-5, 10], x2 in [0, 15] with the
// RANDOM algorithm, then repeatedly asks for a configuration (Suggest),
// evaluates the Branin function on it, and tells the server the result
// (Observe). Prints the best trial at the end. Branin's minimum is 0.397887.
//
//   ask_tell_example [--server=localhost:50051] [--study-id=branin-example]
//   [--trials=20]

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "clients/cpp/metaopt_client.h"

namespace metaopt {
namespace {

constexpr double kPi = 3.14159265358979323846;

double Branin(double x1, double x2) {
  const double b = 5.1 / (4 * kPi * kPi);
  const double c = 5 / kPi;
  const double t = 1 / (8 * kPi);
  const double a = x2 - b * x1 * x1 + c * x1 - 6;
  return a * a + 10 * (1 - t) * std::cos(x1) + 10;
}

v1::StudySpec BraninSpec() {
  v1::StudySpec spec;
  v1::Stage* stage = spec.mutable_search_space()->add_stages();
  stage->set_name("branin");
  v1::Algorithm* branin = stage->add_algorithms();
  branin->set_name("branin");
  v1::Parameter* x1 = branin->add_parameters();
  x1->set_name("x1");
  x1->mutable_float_domain()->set_low(-5);
  x1->mutable_float_domain()->set_high(10);
  v1::Parameter* x2 = branin->add_parameters();
  x2->set_name("x2");
  x2->mutable_float_domain()->set_low(0);
  x2->mutable_float_domain()->set_high(15);
  spec.mutable_objective()->set_name("branin");
  spec.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
  spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_RANDOM);
  spec.set_seed(7);
  return spec;
}

// The value of `name` in the trial's single assignment.
absl::StatusOr<double> Number(const v1::Trial& trial, const std::string& name) {
  if (trial.configuration().assignments_size() != 1) {
    return absl::InternalError(
        absl::StrCat("trial ", trial.id(), ": expected one assignment"));
  }
  const auto& parameters = trial.configuration().assignments(0).parameters();
  auto it = parameters.find(name);
  if (it == parameters.end() ||
      it->second.kind_case() != v1::ParameterValue::kNumber) {
    return absl::InternalError(
        absl::StrCat("trial ", trial.id(), ": no number for ", name));
  }
  return it->second.number();
}

absl::Status RunLoop(MetaoptClient& client, const std::string& study_id,
                     int trials) {
  v1::CreateStudyRequest create;
  create.set_study_id(study_id);
  *create.mutable_spec() = BraninSpec();
  absl::StatusOr<v1::CreateStudyResponse> created = client.CreateStudy(create);
  if (!created.ok()) return created.status();
  std::cout << (created->created() ? "created" : "reopened") << " study "
            << study_id << " with " << created->study().trial_count()
            << " trials\n";

  for (int i = 0; i < trials; ++i) {
    v1::SuggestRequest ask;
    ask.set_study_id(study_id);
    ask.set_count(1);
    ask.set_client_id("ask_tell_example");
    absl::StatusOr<v1::SuggestResponse> suggested = client.Suggest(ask);
    if (!suggested.ok()) return suggested.status();
    for (const v1::Trial& trial : suggested->trials()) {
      absl::StatusOr<double> x1 = Number(trial, "x1");
      if (!x1.ok()) return x1.status();
      absl::StatusOr<double> x2 = Number(trial, "x2");
      if (!x2.ok()) return x2.status();
      const double y = Branin(*x1, *x2);

      v1::ObserveRequest tell;
      tell.set_study_id(study_id);
      tell.set_trial_id(trial.id());
      // Refused if the study was deleted (and created again) meanwhile.
      tell.set_study_incarnation(trial.study_incarnation());
      tell.set_value(y);
      absl::StatusOr<v1::ObserveResponse> observed = client.Observe(tell);
      if (!observed.ok()) return observed.status();
      std::cout << "trial " << trial.id() << ": x1=" << *x1 << " x2=" << *x2
                << " -> " << y << "\n";
    }
  }

  v1::GetStudyRequest get;
  get.set_study_id(study_id);
  absl::StatusOr<v1::GetStudyResponse> study = client.GetStudy(get);
  if (!study.ok()) return study.status();
  if (!study->study().has_best_trial()) return absl::OkStatus();
  const v1::Trial& best = study->study().best_trial();
  absl::StatusOr<double> x1 = Number(best, "x1");
  absl::StatusOr<double> x2 = Number(best, "x2");
  if (!x1.ok()) return x1.status();
  if (!x2.ok()) return x2.status();
  std::cout << "best: trial " << best.id() << " x1=" << *x1 << " x2=" << *x2
            << " value=" << best.value() << " (global minimum 0.397887)\n";
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  MetaoptClient::Options options;
  const char* env_server = std::getenv("METAOPT_SERVER");
  if (env_server != nullptr && *env_server != '\0')
    options.address = env_server;
  std::string study_id = "branin-example";
  int trials = 20;

  CLI::App app{
      "Ask/tell loop on the Branin function with the metaopt C++ client.",
      "ask_tell_example"};
  app.add_option("--server", options.address, "Server address")
      ->capture_default_str();
  app.add_option("--study-id", study_id, "Study id")->capture_default_str();
  app.add_option("--trials", trials, "Number of suggest/observe rounds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  absl::StatusOr<std::unique_ptr<MetaoptClient>> client =
      MetaoptClient::Create(options);
  absl::Status status =
      client.ok() ? RunLoop(**client, study_id, trials) : client.status();
  if (!status.ok()) {
    std::cerr << "ask_tell_example: " << status << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace metaopt

int main(int argc, char** argv) { return metaopt::Main(argc, argv); }
