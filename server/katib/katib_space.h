// Conversions between Kubeflow Katib's Experiment (API api.v1.beta1) and a
// metaopt study: the search space, the parameter values Katib passes as
// strings, the objective, and the algorithm and early-stopping settings.
// docs/katib.md gives the mapping tables.
#ifndef METAOPT_SERVER_KATIB_KATIB_SPACE_H_
#define METAOPT_SERVER_KATIB_KATIB_SPACE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/repeated_field.h"
#include "katib/v1beta1/api.pb.h"
#include "metaopt/v1/optimizer_service.pb.h"

namespace metaopt::server::katib {

namespace kapi = ::api::v1::beta1;

// The algorithmName values metaopt serves, each selecting a kind.
inline constexpr const char* kKatibAlgorithmNames[] = {
    "metaopt-deeppipe", "metaopt-gp", "metaopt-pmf", "metaopt-mosaic",
    "metaopt-random"};
// The early-stopping algorithmName values metaopt serves.
inline constexpr const char* kKatibEarlyStoppingNames[] = {"metaopt-median",
                                                           "metaopt-asha"};

// How a Katib Experiment's flat parameter list maps to a metaopt search
// space. Plain hyperparameters (no parameter name holds a '.') form one stage
// "katib" with one algorithm "trial". Pipelines use a naming convention: a
// CATEGORICAL parameter without a '.' is a stage whose values are its
// algorithms, and the parameter "<stage>.<algorithm>.<name>" is that
// algorithm's hyperparameter <name>, active only when the stage selects it.
// Katib assigns every parameter in every trial; inactive ones get their
// domain's lower bound (first value) and are ignored on the way back.
// Immutable after construction; thread-safe.
class KatibSpace {
 public:
  // INVALID_ARGUMENT naming `field` (e.g. "experiment.spec.parameter_specs")
  // with the parameter's index, the value and the rule.
  static absl::StatusOr<KatibSpace> Create(
      const kapi::ExperimentSpec::ParameterSpecs& specs,
      const std::string& field);

  const v1::SearchSpace& search_space() const { return space_; }

  // Katib's assignments of `configuration` (one per Katib parameter, in the
  // experiment's order): numbers on their step's grid, in shortest
  // round-trip decimal form. INVALID_ARGUMENT if it misses a parameter.
  absl::StatusOr<std::vector<kapi::ParameterAssignment>> ToAssignments(
      const v1::Configuration& configuration) const;
  // The configuration Katib's assignments name. INVALID_ARGUMENT naming
  // `field` for a missing, unknown, repeated or unparsable assignment.
  absl::StatusOr<v1::Configuration> FromAssignments(
      const google::protobuf::RepeatedPtrField<kapi::ParameterAssignment>&
          assignments,
      const std::string& field) const;
  // A canonical string of the active parameters of `configuration` as
  // ToAssignments formats them: two configurations Katib cannot tell apart
  // have the same key. Empty if it misses a parameter.
  std::string Key(const v1::Configuration& configuration) const;

 private:
  struct Param {
    std::string katib_name;
    std::string name;  // in its algorithm
    kapi::ParameterType type = kapi::UNKNOWN_TYPE;
    double min = 0;
    double step = 0;  // > 0: values are min + k * step
    std::vector<std::string> list;
  };
  struct Algorithm {
    std::string name;
    std::vector<int> params;  // indices into params_
  };
  struct Stage {
    std::string name;
    int selector = -1;  // index into params_ of the stage's categorical
    std::vector<Algorithm> algorithms;
  };
  // The value of `param` Katib sees for `value`: numbers snapped to the
  // step's grid and formatted.
  std::string Format(const Param& param, const v1::ParameterValue& value) const;
  std::vector<Param> params_;
  std::vector<Stage> stages_;
  v1::SearchSpace space_;
};

// Shortest decimal string that reads back as `value` (6 to 17 significant
// digits); integers without a fraction.
std::string FormatNumber(double value);

// The metaopt study spec of a Katib experiment: its space, objective, the
// algorithm its algorithmName and algorithm settings select (docs/katib.md,
// "Algorithm settings"), its early-stopping rule, and a seed (setting
// `random_state`, else derived from `study_id`). INVALID_ARGUMENT naming the
// field or setting, its value and the rule.
absl::StatusOr<v1::StudySpec> StudySpecOf(const kapi::Experiment& experiment,
                                          const std::string& study_id);

// The kind an algorithmName selects; ALGORITHM_KIND_UNSPECIFIED for a name
// metaopt does not serve.
v1::AlgorithmKind AlgorithmKindOf(const std::string& algorithm_name);

// The metaopt early-stopping rule of Katib's early-stopping spec
// (metaopt-median, metaopt-asha with their settings). An empty algorithm
// name gives no rule (an unset EarlyStoppingSpec). INVALID_ARGUMENT naming
// `field`, the setting, its value and the rule.
absl::StatusOr<v1::EarlyStoppingSpec> EarlyStoppingOf(
    const kapi::EarlyStoppingSpec& spec, const std::string& field);

// The study id of experiment `name` in Kubernetes namespace `ns`:
// "katib-<ns>-<name>", shortened with a hash of both when longer than the
// 128 characters study ids allow. INVALID_ARGUMENT for an empty name or
// characters outside [A-Za-z0-9._-].
absl::StatusOr<std::string> StudyIdOf(const std::string& ns,
                                      const std::string& name);

}  // namespace metaopt::server::katib

#endif  // METAOPT_SERVER_KATIB_KATIB_SPACE_H_
