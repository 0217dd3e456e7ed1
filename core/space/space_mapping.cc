#include "core/space/space_mapping.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/strings.h"

namespace metaopt::space {
namespace {

const char* DomainType(const v1::Parameter& parameter) {
  switch (parameter.domain_case()) {
    case v1::Parameter::kFloatDomain:
      return "float";
    case v1::Parameter::kIntDomain:
      return "int";
    case v1::Parameter::kCategoricalDomain:
      return "categorical";
    case v1::Parameter::DOMAIN_NOT_SET:
      break;
  }
  return "unset";
}

template <typename List>
const auto* FindByName(const List& list, const std::string& name) {
  for (const auto& item : list) {
    if (item.name() == name) return &item;
  }
  return static_cast<decltype(&*list.begin())>(nullptr);
}

struct Range {
  double low;
  double high;
  bool log;
};

std::optional<Range> NumericRange(const v1::Parameter& p) {
  if (p.has_float_domain()) {
    return Range{p.float_domain().low(), p.float_domain().high(),
                 p.float_domain().log()};
  }
  if (p.has_int_domain()) {
    return Range{static_cast<double>(p.int_domain().low()),
                 static_cast<double>(p.int_domain().high()),
                 p.int_domain().log()};
  }
  return std::nullopt;
}

std::string DescribeRange(const Range& r) {
  return absl::StrCat("[", r.low, ", ", r.high, "]", r.log ? " log" : "");
}

// Compares one shared parameter; returns the violation (below `path`) or "",
// and appends a narrowed-parameter line to `mapping`.
std::string CompareParameter(const v1::Parameter& model,
                             const v1::Parameter& study,
                             const std::string& path,
                             const std::string& name_path,
                             SpaceMapping& mapping) {
  if (model.domain_case() != study.domain_case()) {
    return absl::StrCat(path, ": ", DomainType(model), " in the model, ",
                        DomainType(study), " in the study");
  }
  if (std::optional<Range> m = NumericRange(model)) {
    const Range s = *NumericRange(study);
    if (s.low < m->low || s.high > m->high) {
      return absl::StrCat(path, ": the study's range ", DescribeRange(s),
                          " is not within the model's ", DescribeRange(*m));
    }
    if (s.low != m->low || s.high != m->high || s.log != m->log) {
      mapping.narrowed_parameters.push_back(absl::StrCat(
          name_path, " ", DescribeRange(s), " within ", DescribeRange(*m)));
    }
    return "";
  }
  const auto& model_values = model.categorical_domain().values();
  const auto& study_values = study.categorical_domain().values();
  for (const std::string& value : study_values) {
    if (std::find(model_values.begin(), model_values.end(), value) ==
        model_values.end()) {
      return absl::StrCat(path, ": value ", Quote(value),
                          " is in the study only");
    }
  }
  if (study_values.size() < model_values.size()) {
    mapping.narrowed_parameters.push_back(
        absl::StrCat(name_path, " {", absl::StrJoin(study_values, ","),
                     "} within {", absl::StrJoin(model_values, ","), "}"));
  }
  return "";
}

}  // namespace

absl::StatusOr<SpaceMapping> MapStudySpace(const v1::SearchSpace& model_space,
                                           const v1::SearchSpace& study_space) {
  auto fail = [](const std::string& message) {
    return absl::InvalidArgumentError(message);
  };
  const int common =
      std::min(model_space.stages_size(), study_space.stages_size());
  for (int s = 0; s < common; ++s) {
    if (model_space.stages(s).name() != study_space.stages(s).name()) {
      return fail(
          absl::StrCat("stage[", s, "] is ",
                       Quote(model_space.stages(s).name()), " in the model, ",
                       Quote(study_space.stages(s).name()), " in the study"));
    }
  }
  if (model_space.stages_size() != study_space.stages_size()) {
    const bool model_longer = model_space.stages_size() > common;
    const std::string& name = model_longer ? model_space.stages(common).name()
                                           : study_space.stages(common).name();
    return fail(absl::StrCat("stage[", common, "] ", Quote(name), " is in the ",
                             model_longer ? "model" : "study", " only"));
  }
  SpaceMapping mapping;
  for (int s = 0; s < study_space.stages_size(); ++s) {
    const v1::Stage& model_stage = model_space.stages(s);
    const v1::Stage& study_stage = study_space.stages(s);
    const std::string stage_path =
        absl::StrCat("stage[", s, "] ", Quote(study_stage.name()));
    int shared = 0;
    for (const v1::Algorithm& algorithm : study_stage.algorithms()) {
      const std::string name_path =
          absl::StrCat(study_stage.name(), "/", algorithm.name());
      const v1::Algorithm* model_algorithm =
          FindByName(model_stage.algorithms(), algorithm.name());
      if (model_algorithm == nullptr) {
        mapping.new_algorithms.push_back(name_path);
        continue;
      }
      ++shared;
      const std::string algorithm_path =
          absl::StrCat(stage_path, ": algorithm ", Quote(algorithm.name()));
      const int np = std::min(model_algorithm->parameters_size(),
                              algorithm.parameters_size());
      for (int p = 0; p < np; ++p) {
        if (model_algorithm->parameters(p).name() !=
            algorithm.parameters(p).name()) {
          return fail(absl::StrCat(
              algorithm_path, ": parameter[", p, "] is ",
              Quote(model_algorithm->parameters(p).name()), " in the model, ",
              Quote(algorithm.parameters(p).name()), " in the study"));
        }
      }
      if (model_algorithm->parameters_size() != algorithm.parameters_size()) {
        const bool model_longer = model_algorithm->parameters_size() > np;
        const std::string& name = model_longer
                                      ? model_algorithm->parameters(np).name()
                                      : algorithm.parameters(np).name();
        return fail(absl::StrCat(algorithm_path, ": parameter[", np, "] ",
                                 Quote(name), " is in the ",
                                 model_longer ? "model" : "study", " only"));
      }
      for (int p = 0; p < np; ++p) {
        const v1::Parameter& parameter = algorithm.parameters(p);
        const std::string violation = CompareParameter(
            model_algorithm->parameters(p), parameter,
            absl::StrCat(algorithm_path, ": parameter[", p, "] ",
                         Quote(parameter.name())),
            absl::StrCat(name_path, "/", parameter.name()), mapping);
        if (!violation.empty()) return fail(violation);
      }
    }
    if (shared == 0) {
      return fail(absl::StrCat(
          stage_path, ": no algorithm in common with the model's (",
          Quote(model_stage.algorithms(0).name()), ", ...)"));
    }
    for (const v1::Algorithm& algorithm : model_stage.algorithms()) {
      if (FindByName(study_stage.algorithms(), algorithm.name()) == nullptr) {
        mapping.masked_algorithms.push_back(
            absl::StrCat(model_stage.name(), "/", algorithm.name()));
      }
    }
  }
  return mapping;
}

v1::SearchSpace ExtendedModelSpace(const v1::SearchSpace& model_space,
                                   const v1::SearchSpace& study_space) {
  v1::SearchSpace extended = model_space;
  for (int s = 0; s < extended.stages_size() && s < study_space.stages_size();
       ++s) {
    v1::Stage& stage = *extended.mutable_stages(s);
    const v1::Stage& model_stage = model_space.stages(s);
    for (const v1::Algorithm& algorithm : study_space.stages(s).algorithms()) {
      if (FindByName(model_stage.algorithms(), algorithm.name()) == nullptr) {
        *stage.add_algorithms() = algorithm;
      }
    }
  }
  return extended;
}

}  // namespace metaopt::space
