#include "core/space/objectives_spec.h"

#include <cmath>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/space/search_space.h"
#include "google/protobuf/util/message_differencer.h"

namespace metaopt::space {
namespace {

absl::Status Invalid(const std::string& path, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

absl::Status ValidateGoal(v1::Goal goal, const std::string& path) {
  if (goal == v1::GOAL_MINIMIZE || goal == v1::GOAL_MAXIMIZE) {
    return absl::OkStatus();
  }
  return Invalid(path,
                 absl::StrCat(v1::Goal_IsValid(goal) ? v1::Goal_Name(goal)
                                                     : absl::StrCat(goal),
                              " is not allowed; set GOAL_MINIMIZE or "
                              "GOAL_MAXIMIZE"));
}

absl::Status ValidateObjective(const v1::Objective& objective,
                               const std::string& path, bool name_required) {
  METAOPT_RETURN_IF_ERROR(ValidateGoal(objective.goal(), path + ".goal"));
  if (name_required || !objective.name().empty()) {
    METAOPT_RETURN_IF_ERROR(
        ValidateName(objective.name(), path + ".name", "name"));
  }
  if (objective.has_reference() && !std::isfinite(objective.reference())) {
    return Invalid(path + ".reference",
                   absl::StrCat(FormatNumber(objective.reference()),
                                " is not finite"));
  }
  return absl::OkStatus();
}

absl::Status ValidateConstraint(const v1::Constraint& constraint,
                                const std::string& path) {
  METAOPT_RETURN_IF_ERROR(
      ValidateName(constraint.metric(), path + ".metric", "metric name"));
  const v1::ConstraintSense sense = constraint.sense();
  if (sense != v1::CONSTRAINT_SENSE_AT_MOST &&
      sense != v1::CONSTRAINT_SENSE_AT_LEAST) {
    return Invalid(path + ".sense",
                   absl::StrCat(v1::ConstraintSense_IsValid(sense)
                                    ? v1::ConstraintSense_Name(sense)
                                    : absl::StrCat(static_cast<int>(sense)),
                                " is not allowed; set CONSTRAINT_SENSE_AT_MOST "
                                "or CONSTRAINT_SENSE_AT_LEAST"));
  }
  if (!std::isfinite(constraint.bound())) {
    return Invalid(path + ".bound", absl::StrCat(FormatNumber(constraint.bound()),
                                                 " is not finite"));
  }
  return absl::OkStatus();
}

absl::Status CanonicalizeSeveral(const v1::StudySpec& spec,
                                 v1::StudySpec* out) {
  if (spec.objectives_size() > kMaxObjectives) {
    return Invalid("spec.objectives",
                   absl::StrCat(spec.objectives_size(),
                                " objectives exceed the limit of ",
                                kMaxObjectives));
  }
  absl::flat_hash_map<std::string, int> seen;
  for (int i = 0; i < spec.objectives_size(); ++i) {
    const std::string path = absl::StrCat("spec.objectives[", i, "]");
    METAOPT_RETURN_IF_ERROR(
        ValidateObjective(spec.objectives(i), path, /*name_required=*/true));
    auto [it, inserted] = seen.emplace(spec.objectives(i).name(), i);
    if (!inserted) {
      return Invalid(path + ".name",
                     absl::StrCat(Quote(spec.objectives(i).name()),
                                  " repeats spec.objectives[", it->second,
                                  "]; objectives have distinct names"));
    }
  }
  const v1::Objective unset;
  if (!google::protobuf::util::MessageDifferencer::Equals(spec.objective(),
                                                          unset) &&
      !google::protobuf::util::MessageDifferencer::Equals(spec.objective(),
                                                          spec.objectives(0))) {
    return Invalid("spec.objective",
                   "differs from spec.objectives[0]; with several objectives "
                   "leave it unset (or equal to the first)");
  }
  *out->mutable_objective() = spec.objectives(0);
  return absl::OkStatus();
}

}  // namespace

absl::Status CanonicalizeObjectives(const v1::StudySpec& spec,
                                    v1::StudySpec* out) {
  if (spec.objectives_size() > 1) {
    METAOPT_RETURN_IF_ERROR(CanonicalizeSeveral(spec, out));
  } else {
    v1::Objective objective = spec.objective();
    std::string path = "spec.objective";
    if (spec.objectives_size() == 1) {
      const v1::Objective unset;
      if (!google::protobuf::util::MessageDifferencer::Equals(objective,
                                                              unset) &&
          !google::protobuf::util::MessageDifferencer::Equals(
              objective, spec.objectives(0))) {
        return Invalid("spec.objective",
                       "differs from spec.objectives[0]; set one of them");
      }
      objective = spec.objectives(0);
      path = "spec.objectives[0]";
    }
    METAOPT_RETURN_IF_ERROR(
        ValidateObjective(objective, path, /*name_required=*/false));
    *out->mutable_objective() = std::move(objective);
    out->clear_objectives();
  }
  if (spec.constraints_size() > kMaxConstraints) {
    return Invalid("spec.constraints",
                   absl::StrCat(spec.constraints_size(),
                                " constraints exceed the limit of ",
                                kMaxConstraints));
  }
  for (int i = 0; i < spec.constraints_size(); ++i) {
    METAOPT_RETURN_IF_ERROR(ValidateConstraint(
        spec.constraints(i), absl::StrCat("spec.constraints[", i, "]")));
  }
  return absl::OkStatus();
}

}  // namespace metaopt::space
