#include "server/katib/katib_space.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"

namespace metaopt::server::katib {
namespace {

// Stage and algorithm of the plain (non-pipeline) mapping.
constexpr char kPlainStage[] = "katib";
constexpr char kPlainAlgorithm[] = "trial";
constexpr size_t kMaxStudyIdLength = 128;

// A finite number spelling the whole of `text`.
bool ParseDouble(const std::string& text, double& out) {
  const std::string trimmed(absl::StripAsciiWhitespace(text));
  if (trimmed.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(trimmed.c_str(), &end);
  if (end != trimmed.c_str() + trimmed.size() || errno == ERANGE ||
      !std::isfinite(value)) {
    return false;
  }
  out = value;
  return true;
}

// An integer in [low, high] spelling the whole of `text` ("3" or "3.0").
bool ParseInt(const std::string& text, int64_t low, int64_t high,
              int64_t& out) {
  double value = 0;
  if (!ParseDouble(text, value) || value != std::floor(value) ||
      value < static_cast<double>(low) || value > static_cast<double>(high)) {
    return false;
  }
  out = static_cast<int64_t>(value);
  return true;
}

bool IsIdChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == '-';
}

// Reads the settings of a Katib algorithm or early-stopping spec: each name
// at most once, each known. `Setting` is AlgorithmSetting or
// EarlyStoppingSetting.
template <typename Setting>
absl::StatusOr<std::map<std::string, std::pair<int, std::string>>> ReadSettings(
    const google::protobuf::RepeatedPtrField<Setting>& settings,
    const std::string& field, const std::vector<std::string>& known,
    const std::string& known_prefix) {
  std::map<std::string, std::pair<int, std::string>> out;
  for (int i = 0; i < settings.size(); ++i) {
    const std::string& name = settings[i].name();
    const bool is_known =
        std::find(known.begin(), known.end(), name) != known.end() ||
        (!known_prefix.empty() && absl::StartsWith(name, known_prefix) &&
         name.size() > known_prefix.size());
    if (!is_known) {
      std::string accepted = absl::StrJoin(known, ", ");
      if (!known_prefix.empty()) {
        absl::StrAppend(&accepted, ", ", known_prefix, "<name>");
      }
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]: unknown setting ", Quote(name),
                       " (accepted: ", accepted, ")"));
    }
    if (!out.emplace(name, std::make_pair(i, settings[i].value())).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, "[", i, "]: setting ", Quote(name), " is given twice"));
    }
  }
  return out;
}

using Settings = std::map<std::string, std::pair<int, std::string>>;

absl::Status SettingError(const std::string& field, const Settings& settings,
                          const std::string& name, const std::string& rule) {
  const auto& [index, value] = settings.at(name);
  return absl::InvalidArgumentError(absl::StrCat(field, "[", index, "] ",
                                                 Quote(name), ": value ",
                                                 Quote(value), " ", rule));
}

// The integer setting `name` in [low, high], else `fallback`.
absl::StatusOr<int64_t> IntSetting(const std::string& field,
                                   const Settings& settings,
                                   const std::string& name, int64_t low,
                                   int64_t high, int64_t fallback) {
  auto it = settings.find(name);
  if (it == settings.end()) return fallback;
  int64_t value = 0;
  if (!ParseInt(it->second.second, low, high, value)) {
    return SettingError(
        field, settings, name,
        absl::StrCat("is not an integer in [", low, ", ", high, "]"));
  }
  return value;
}

}  // namespace

std::string FormatNumber(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  char buffer[64];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

absl::StatusOr<KatibSpace> KatibSpace::Create(
    const kapi::ExperimentSpec::ParameterSpecs& specs,
    const std::string& field) {
  KatibSpace space;
  if (specs.parameters().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field,
                     ".parameters: empty (the experiment needs at least "
                     "one parameter)"));
  }
  bool pipeline = false;
  absl::flat_hash_set<std::string> names;
  for (int i = 0; i < specs.parameters_size(); ++i) {
    const kapi::ParameterSpec& spec = specs.parameters(i);
    const std::string where = absl::StrCat(field, ".parameters[", i, "]");
    if (spec.name().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ".name: empty"));
    }
    if (!names.insert(spec.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ".name: ", Quote(spec.name()), " is declared twice"));
    }
    if (absl::StrContains(spec.name(), '.')) pipeline = true;
    Param param;
    param.katib_name = spec.name();
    param.name = spec.name();
    param.type = spec.parameter_type();
    const kapi::FeasibleSpace& feasible = spec.feasible_space();
    switch (spec.parameter_type()) {
      case kapi::DOUBLE:
      case kapi::INT: {
        const bool is_int = spec.parameter_type() == kapi::INT;
        double low = 0, high = 0;
        if (!ParseDouble(feasible.min(), low) ||
            !ParseDouble(feasible.max(), high) ||
            (is_int && (low != std::floor(low) || high != std::floor(high)))) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, ".feasible_space: min ", Quote(feasible.min()),
              " and max ", Quote(feasible.max()), " must be finite ",
              is_int ? "integers" : "numbers"));
        }
        if (!(low < high)) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".feasible_space: min ", feasible.min(),
                           " must be < max ", feasible.max()));
        }
        if (!feasible.step().empty()) {
          double step = 0;
          if (!ParseDouble(feasible.step(), step) || step <= 0 ||
              (is_int && step != std::floor(step))) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, ".feasible_space.step: ", Quote(feasible.step()),
                " must be a positive ", is_int ? "integer" : "number"));
          }
          param.step = step;
        }
        const bool log = feasible.distribution() == kapi::LOG_UNIFORM ||
                         feasible.distribution() == kapi::LOG_NORMAL;
        if (log && low <= 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".feasible_space: min ", feasible.min(),
                           " must be > 0 with a logarithmic distribution"));
        }
        param.min = low;
        // The domain is built below, once the parameter's algorithm is known;
        // `list` keeps the bounds meanwhile (then only the max).
        param.list = {feasible.min(), feasible.max(), log ? "log" : ""};
        break;
      }
      case kapi::DISCRETE:
      case kapi::CATEGORICAL: {
        if (feasible.list().empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".feasible_space.list: empty"));
        }
        absl::flat_hash_set<std::string> seen;
        for (int j = 0; j < feasible.list_size(); ++j) {
          const std::string& value = feasible.list(j);
          double number = 0;
          if (spec.parameter_type() == kapi::DISCRETE &&
              !ParseDouble(value, number)) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, ".feasible_space.list[", j, "]: ", Quote(value),
                " is not a finite number (a DISCRETE parameter's values are "
                "numbers)"));
          }
          if (!seen.insert(value).second) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ".feasible_space.list[", j,
                             "]: ", Quote(value), " is listed twice"));
          }
          param.list.push_back(value);
        }
        break;
      }
      default:
        return absl::InvalidArgumentError(
            absl::StrCat(where, ".parameter_type: ",
                         kapi::ParameterType_Name(spec.parameter_type()),
                         " is not one of DOUBLE, INT, DISCRETE, CATEGORICAL"));
    }
    space.params_.push_back(std::move(param));
  }

  // Stages: one plain stage, or one per selector (in Katib's order).
  std::vector<std::pair<int, int>> owner(space.params_.size(), {-1, -1});
  if (!pipeline) {
    Stage stage{kPlainStage, -1, {Algorithm{kPlainAlgorithm, {}}}};
    for (int i = 0; i < static_cast<int>(space.params_.size()); ++i) {
      stage.algorithms[0].params.push_back(i);
      owner[i] = {0, 0};
    }
    space.stages_.push_back(std::move(stage));
  } else {
    absl::flat_hash_map<std::string, int> stage_of;
    for (int i = 0; i < static_cast<int>(space.params_.size()); ++i) {
      Param& param = space.params_[i];
      if (absl::StrContains(param.katib_name, '.')) continue;
      if (param.type != kapi::CATEGORICAL) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ".parameters[", i, "]: ", Quote(param.katib_name),
            " has no '.' in an experiment whose parameters follow the "
            "pipeline convention, so it must be a CATEGORICAL stage selector "
            "(its values name the stage's algorithms; see docs/katib.md)"));
      }
      Stage stage{param.katib_name, i, {}};
      for (const std::string& algorithm : param.list) {
        stage.algorithms.push_back(Algorithm{algorithm, {}});
      }
      stage_of[param.katib_name] = static_cast<int>(space.stages_.size());
      owner[i] = {static_cast<int>(space.stages_.size()), -1};
      space.stages_.push_back(std::move(stage));
    }
    for (int i = 0; i < static_cast<int>(space.params_.size()); ++i) {
      Param& param = space.params_[i];
      const size_t first = param.katib_name.find('.');
      if (first == std::string::npos) continue;
      const size_t second = param.katib_name.find('.', first + 1);
      const std::string stage_name = param.katib_name.substr(0, first);
      auto stage = stage_of.find(stage_name);
      if (second == std::string::npos || second == first + 1 ||
          second + 1 == param.katib_name.size() || stage == stage_of.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ".parameters[", i, "]: ", Quote(param.katib_name),
            " must be <stage>.<algorithm>.<name> where <stage> is a "
            "CATEGORICAL parameter listing <algorithm> (see docs/katib.md)"));
      }
      const std::string algorithm_name =
          param.katib_name.substr(first + 1, second - first - 1);
      Stage& target = space.stages_[stage->second];
      int algorithm = -1;
      for (int a = 0; a < static_cast<int>(target.algorithms.size()); ++a) {
        if (target.algorithms[a].name == algorithm_name) algorithm = a;
      }
      if (algorithm < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ".parameters[", i, "]: ", Quote(param.katib_name),
            ": stage ", Quote(stage_name), " does not list algorithm ",
            Quote(algorithm_name)));
      }
      param.name = param.katib_name.substr(second + 1);
      target.algorithms[algorithm].params.push_back(i);
      owner[i] = {stage->second, algorithm};
    }
  }

  // The metaopt space.
  for (const Stage& stage : space.stages_) {
    v1::Stage* out_stage = space.space_.add_stages();
    out_stage->set_name(stage.name);
    for (const Algorithm& algorithm : stage.algorithms) {
      v1::Algorithm* out_algorithm = out_stage->add_algorithms();
      out_algorithm->set_name(algorithm.name);
      for (int index : algorithm.params) {
        Param& param = space.params_[index];
        v1::Parameter* out = out_algorithm->add_parameters();
        out->set_name(param.name);
        if (param.type == kapi::DOUBLE || param.type == kapi::INT) {
          double low = 0, high = 0;
          ParseDouble(param.list[0], low);
          ParseDouble(param.list[1], high);
          const bool log = param.list[2] == "log";
          if (param.type == kapi::DOUBLE) {
            out->mutable_float_domain()->set_low(low);
            out->mutable_float_domain()->set_high(high);
            out->mutable_float_domain()->set_log(log);
          } else {
            out->mutable_int_domain()->set_low(static_cast<int64_t>(low));
            out->mutable_int_domain()->set_high(static_cast<int64_t>(high));
            out->mutable_int_domain()->set_log(log);
          }
          param.list = {param.list[1]};  // keeps max
        } else {
          for (const std::string& value : param.list) {
            out->mutable_categorical_domain()->add_values(value);
          }
        }
      }
    }
  }
  return space;
}

std::string KatibSpace::Format(const Param& param,
                               const v1::ParameterValue& value) const {
  if (param.type == kapi::DISCRETE || param.type == kapi::CATEGORICAL) {
    return value.category();
  }
  double x = value.number();
  double high = 0;
  ParseDouble(param.list[0], high);
  if (param.step > 0) {
    x = param.min + std::round((x - param.min) / param.step) * param.step;
    if (x > high) x -= param.step;
    if (x < param.min) x = param.min;
  }
  if (param.type == kapi::INT) x = std::round(x);
  return FormatNumber(x);
}

absl::StatusOr<std::vector<kapi::ParameterAssignment>>
KatibSpace::ToAssignments(const v1::Configuration& configuration) const {
  std::vector<kapi::ParameterAssignment> out(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    out[i].set_name(params_[i].katib_name);
  }
  for (const Stage& stage : stages_) {
    const v1::Assignment* assignment = nullptr;
    for (const v1::Assignment& candidate : configuration.assignments()) {
      if (candidate.stage() == stage.name) assignment = &candidate;
    }
    if (assignment == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "configuration: no assignment of stage ", Quote(stage.name)));
    }
    std::string chosen = assignment->algorithm();
    if (chosen.empty() && stage.algorithms.size() == 1) {
      chosen = stage.algorithms[0].name;
    }
    if (stage.selector >= 0) out[stage.selector].set_value(chosen);
    bool found = false;
    for (const Algorithm& algorithm : stage.algorithms) {
      const bool active = algorithm.name == chosen;
      found = found || active;
      for (int index : algorithm.params) {
        const Param& param = params_[index];
        if (!active) {
          out[index].set_value(param.type == kapi::DOUBLE ||
                                       param.type == kapi::INT
                                   ? FormatNumber(param.min)
                                   : param.list[0]);
          continue;
        }
        auto it = assignment->parameters().find(param.name);
        if (it == assignment->parameters().end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("configuration: stage ", Quote(stage.name),
                           " misses parameter ", Quote(param.name)));
        }
        out[index].set_value(Format(param, it->second));
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("configuration: stage ", Quote(stage.name),
                       " has no algorithm ", Quote(chosen)));
    }
  }
  return out;
}

absl::StatusOr<v1::Configuration> KatibSpace::FromAssignments(
    const google::protobuf::RepeatedPtrField<kapi::ParameterAssignment>&
        assignments,
    const std::string& field) const {
  absl::flat_hash_map<std::string, int> index_of;
  for (int i = 0; i < static_cast<int>(params_.size()); ++i) {
    index_of[params_[i].katib_name] = i;
  }
  std::vector<const std::string*> values(params_.size(), nullptr);
  for (int i = 0; i < assignments.size(); ++i) {
    auto it = index_of.find(assignments[i].name());
    if (it == index_of.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]: unknown parameter ",
                       Quote(assignments[i].name())));
    }
    if (values[it->second] != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "]: parameter ",
                       Quote(assignments[i].name()), " is assigned twice"));
    }
    values[it->second] = &assignments[i].value();
  }
  v1::Configuration configuration;
  for (const Stage& stage : stages_) {
    v1::Assignment* out = configuration.add_assignments();
    out->set_stage(stage.name);
    const Algorithm* chosen = &stage.algorithms[0];
    if (stage.selector >= 0) {
      const std::string* value = values[stage.selector];
      if (value == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ": parameter ", Quote(stage.name), " is not assigned"));
      }
      chosen = nullptr;
      for (const Algorithm& algorithm : stage.algorithms) {
        if (algorithm.name == *value) chosen = &algorithm;
      }
      if (chosen == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ": parameter ", Quote(stage.name), " value ",
                         Quote(*value), " is not one of its list"));
      }
    }
    out->set_algorithm(chosen->name);
    for (int index : chosen->params) {
      const Param& param = params_[index];
      const std::string* value = values[index];
      if (value == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(field, ": parameter ",
                                                       Quote(param.katib_name),
                                                       " is not assigned"));
      }
      v1::ParameterValue parsed;
      double number = 0;
      switch (param.type) {
        case kapi::DOUBLE:
        case kapi::INT:
          if (!ParseDouble(*value, number)) {
            return absl::InvalidArgumentError(absl::StrCat(
                field, ": parameter ", Quote(param.katib_name), " value ",
                Quote(*value), " is not a finite number"));
          }
          parsed.set_number(number);
          break;
        case kapi::DISCRETE: {
          // The listed spelling, matched exactly or by value ("0.10" is
          // "0.1").
          const std::string* match = nullptr;
          for (const std::string& listed : param.list) {
            double listed_number = 0;
            if (listed == *value || (ParseDouble(*value, number) &&
                                     ParseDouble(listed, listed_number) &&
                                     listed_number == number)) {
              match = &listed;
              break;
            }
          }
          if (match == nullptr) {
            return absl::InvalidArgumentError(absl::StrCat(
                field, ": parameter ", Quote(param.katib_name), " value ",
                Quote(*value), " is not one of its list"));
          }
          parsed.set_category(*match);
          break;
        }
        default:
          parsed.set_category(*value);
          break;
      }
      (*out->mutable_parameters())[param.name] = std::move(parsed);
    }
  }
  return configuration;
}

std::string KatibSpace::Key(const v1::Configuration& configuration) const {
  absl::StatusOr<std::vector<kapi::ParameterAssignment>> assignments =
      ToAssignments(configuration);
  if (!assignments.ok()) return "";
  // Only the active parameters and the selectors tell configurations apart.
  std::vector<bool> active(params_.size(), false);
  for (const Stage& stage : stages_) {
    if (stage.selector >= 0) active[stage.selector] = true;
    for (const Algorithm& algorithm : stage.algorithms) {
      const bool chosen =
          stage.selector < 0 ||
          (*assignments)[stage.selector].value() == algorithm.name;
      if (!chosen) continue;
      for (int index : algorithm.params) active[index] = true;
    }
  }
  std::string key;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!active[i]) continue;
    absl::StrAppend(&key, (*assignments)[i].name(), "=",
                    (*assignments)[i].value(), "\n");
  }
  return key;
}

v1::AlgorithmKind AlgorithmKindOf(const std::string& algorithm_name) {
  static constexpr std::pair<const char*, v1::AlgorithmKind> kKinds[] = {
      {"metaopt-deeppipe", v1::ALGORITHM_KIND_DEEPPIPE},
      {"metaopt-fsbo", v1::ALGORITHM_KIND_FSBO},
      {"metaopt-gp", v1::ALGORITHM_KIND_GP},
      {"metaopt-pmf", v1::ALGORITHM_KIND_PMF},
      {"metaopt-mosaic", v1::ALGORITHM_KIND_MOSAIC},
      {"metaopt-random", v1::ALGORITHM_KIND_RANDOM}};
  for (const auto& [name, kind] : kKinds) {
    if (algorithm_name == name) return kind;
  }
  return v1::ALGORITHM_KIND_UNSPECIFIED;
}

absl::StatusOr<v1::EarlyStoppingSpec> EarlyStoppingOf(
    const kapi::EarlyStoppingSpec& spec, const std::string& field) {
  v1::EarlyStoppingSpec out;
  const std::string settings_field = absl::StrCat(field, ".algorithm_settings");
  constexpr int64_t kMaxStep = std::numeric_limits<int32_t>::max();
  if (spec.algorithm_name().empty()) {
    if (!spec.algorithm_settings().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".algorithm_name: empty, yet settings are given"));
    }
    return out;
  }
  if (spec.algorithm_name() == "metaopt-median") {
    METAOPT_ASSIGN_OR_RETURN(
        const Settings settings,
        ReadSettings(spec.algorithm_settings(), settings_field,
                     {"min_trials_required", "start_step"}, ""));
    v1::MedianStoppingRule* rule = out.mutable_median();
    METAOPT_ASSIGN_OR_RETURN(const int64_t min_trials,
                             IntSetting(settings_field, settings,
                                        "min_trials_required", 1, 1000000, 3));
    METAOPT_ASSIGN_OR_RETURN(
        const int64_t start_step,
        IntSetting(settings_field, settings, "start_step", 0, kMaxStep, 4));
    rule->set_min_trials(static_cast<int32_t>(min_trials));
    rule->set_start_step(start_step);
    return out;
  }
  if (spec.algorithm_name() == "metaopt-asha") {
    METAOPT_ASSIGN_OR_RETURN(
        const Settings settings,
        ReadSettings(spec.algorithm_settings(), settings_field,
                     {"min_resource", "reduction_factor", "grace_period"}, ""));
    v1::AshaRule* rule = out.mutable_asha();
    METAOPT_ASSIGN_OR_RETURN(
        const int64_t min_resource,
        IntSetting(settings_field, settings, "min_resource", 1, kMaxStep, 1));
    METAOPT_ASSIGN_OR_RETURN(
        const int64_t reduction_factor,
        IntSetting(settings_field, settings, "reduction_factor", 2, 100, 3));
    METAOPT_ASSIGN_OR_RETURN(
        const int64_t grace_period,
        IntSetting(settings_field, settings, "grace_period", 0, kMaxStep, 0));
    rule->set_min_resource(min_resource);
    rule->set_reduction_factor(static_cast<int32_t>(reduction_factor));
    rule->set_grace_period(grace_period);
    return out;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      field, ".algorithm_name: ", Quote(spec.algorithm_name()),
      " is not one of ", absl::StrJoin(kKatibEarlyStoppingNames, ", ")));
}

absl::StatusOr<v1::StudySpec> StudySpecOf(const kapi::Experiment& experiment,
                                          const std::string& study_id) {
  const kapi::ExperimentSpec& spec = experiment.spec();
  v1::StudySpec out;
  METAOPT_ASSIGN_OR_RETURN(
      const KatibSpace space,
      KatibSpace::Create(spec.parameter_specs(),
                         "experiment.spec.parameter_specs"));
  *out.mutable_search_space() = space.search_space();

  const kapi::ObjectiveSpec& objective = spec.objective();
  if (objective.objective_metric_name().empty()) {
    return absl::InvalidArgumentError(
        "experiment.spec.objective.objective_metric_name: empty");
  }
  out.mutable_objective()->set_name(objective.objective_metric_name());
  switch (objective.type()) {
    case kapi::MINIMIZE:
      out.mutable_objective()->set_goal(v1::GOAL_MINIMIZE);
      break;
    case kapi::MAXIMIZE:
      out.mutable_objective()->set_goal(v1::GOAL_MAXIMIZE);
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("experiment.spec.objective.type: ",
                       kapi::ObjectiveType_Name(objective.type()),
                       " is not MINIMIZE or MAXIMIZE"));
  }

  const kapi::AlgorithmSpec& algorithm = spec.algorithm();
  v1::AlgorithmSpec* out_algorithm = out.mutable_algorithm();
  const std::string& name = algorithm.algorithm_name();
  out_algorithm->set_kind(AlgorithmKindOf(name));
  if (out_algorithm->kind() == v1::ALGORITHM_KIND_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        "experiment.spec.algorithm.algorithm_name: ", Quote(name),
        " is not one of ", absl::StrJoin(kKatibAlgorithmNames, ", ")));
  }
  const std::string field = "experiment.spec.algorithm.algorithm_settings";
  constexpr char kFeaturePrefix[] = "dataset_features.";
  METAOPT_ASSIGN_OR_RETURN(
      const Settings settings,
      ReadSettings(
          algorithm.algorithm_settings(), field,
          {"model", "initial_trials", "random_state", "mosaic_surrogate",
           "mosaic_exploration", "mosaic_widening_exponent",
           "mosaic_prior_samples", "mosaic_playout_samples",
           "mosaic_random_per_algorithm", "mosaic_forest_trees"},
          kFeaturePrefix));
  const bool mosaic = out_algorithm->kind() == v1::ALGORITHM_KIND_MOSAIC;
  for (const auto& [setting, entry] : settings) {
    const std::string& value = entry.second;
    if (absl::StartsWith(setting, "mosaic_") && !mosaic) {
      return SettingError(field, settings, setting,
                          "applies to algorithm metaopt-mosaic only");
    }
    if (setting == "model") {
      if (value.empty()) {
        return SettingError(field, settings, setting,
                            "must name a registry model (name, name@version "
                            "or none)");
      }
      out_algorithm->set_model(value);
    } else if (setting == "random_state") {
      int64_t seed = 0;
      if (!ParseInt(value, 0, std::numeric_limits<int64_t>::max(), seed)) {
        return SettingError(field, settings, setting,
                            "is not a non-negative integer");
      }
      out.set_seed(static_cast<uint64_t>(seed));
    } else if (setting == "mosaic_surrogate") {
      if (value == "random_forest") {
        out_algorithm->mutable_mosaic()->set_surrogate(
            v1::MOSAIC_SURROGATE_RANDOM_FOREST);
      } else if (value == "deeppipe") {
        out_algorithm->mutable_mosaic()->set_surrogate(
            v1::MOSAIC_SURROGATE_DEEPPIPE);
      } else {
        return SettingError(field, settings, setting,
                            "is not random_forest or deeppipe");
      }
    } else if (setting == "mosaic_exploration" ||
               setting == "mosaic_widening_exponent") {
      double number = 0;
      const bool exponent = setting == "mosaic_widening_exponent";
      if (!ParseDouble(value, number) || number <= 0 ||
          (exponent && number > 1)) {
        return SettingError(field, settings, setting,
                            exponent ? "is not a number in (0, 1]"
                                     : "is not a positive number");
      }
      if (exponent) {
        out_algorithm->mutable_mosaic()->set_widening_exponent(number);
      } else {
        out_algorithm->mutable_mosaic()->set_exploration(number);
      }
    } else if (absl::StartsWith(setting, kFeaturePrefix)) {
      double number = 0;
      if (!ParseDouble(value, number)) {
        return SettingError(field, settings, setting, "is not a finite number");
      }
      (*out.mutable_dataset_features())[setting.substr(sizeof(kFeaturePrefix) -
                                                       1)] = number;
    }
  }
  METAOPT_ASSIGN_OR_RETURN(
      const int64_t initial_trials,
      IntSetting(field, settings, "initial_trials", 0, 10000, 0));
  out_algorithm->set_initial_trials(static_cast<int32_t>(initial_trials));
  if (mosaic) {
    v1::MosaicOptions* options = out_algorithm->mutable_mosaic();
    METAOPT_ASSIGN_OR_RETURN(
        const int64_t prior_samples,
        IntSetting(field, settings, "mosaic_prior_samples", 1, 100000, 0));
    METAOPT_ASSIGN_OR_RETURN(
        const int64_t playout_samples,
        IntSetting(field, settings, "mosaic_playout_samples", 1, 100000, 0));
    METAOPT_ASSIGN_OR_RETURN(
        const int64_t forest_trees,
        IntSetting(field, settings, "mosaic_forest_trees", 1, 1000, 0));
    options->set_prior_samples(static_cast<int32_t>(prior_samples));
    options->set_playout_samples(static_cast<int32_t>(playout_samples));
    options->set_forest_trees(static_cast<int32_t>(forest_trees));
    if (settings.count("mosaic_random_per_algorithm") > 0) {
      METAOPT_ASSIGN_OR_RETURN(
          const int64_t per_algorithm,
          IntSetting(field, settings, "mosaic_random_per_algorithm", 0, 1000,
                     0));
      options->set_random_per_algorithm(static_cast<int32_t>(per_algorithm));
    }
  }
  if (settings.count("random_state") == 0) {
    out.set_seed(Fnv1a64(study_id) >> 1);
  }
  METAOPT_ASSIGN_OR_RETURN(
      *out.mutable_early_stopping(),
      EarlyStoppingOf(spec.early_stopping(), "experiment.spec.early_stopping"));
  if (!out.early_stopping().has_median() && !out.early_stopping().has_asha()) {
    out.clear_early_stopping();
  }
  return out;
}

absl::StatusOr<std::string> StudyIdOf(const std::string& ns,
                                      const std::string& name) {
  if (name.empty()) {
    return absl::InvalidArgumentError("experiment.name: empty");
  }
  for (const auto& [what, text] :
       {std::make_pair("experiment.name", &name),
        std::make_pair("the Katib namespace", &ns)}) {
    for (char c : *text) {
      if (!IsIdChar(c)) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": ", Quote(*text),
                         " has a character outside [A-Za-z0-9._-]"));
      }
    }
  }
  std::string id = absl::StrCat("katib-", ns, "-", name);
  if (id.size() > kMaxStudyIdLength) {
    char hash[17];
    std::snprintf(hash, sizeof(hash), "%016llx",
                  static_cast<unsigned long long>(Fnv1a64(id)));
    id = absl::StrCat(id.substr(0, kMaxStudyIdLength - 17), "-", hash);
  }
  return id;
}

}  // namespace metaopt::server::katib
