#include "core/space/search_space.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/space/objectives_spec.h"

namespace metaopt::space {
namespace {

// At most this many names are listed in an error message.
constexpr int kMaxListed = 10;

absl::Status Invalid(absl::string_view path, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

// `names` quoted and comma-separated, shortened to kMaxListed entries.
template <typename Container, typename GetName>
std::string ListNames(const Container& items, GetName get_name) {
  std::vector<std::string> quoted;
  for (const auto& item : items) {
    if (static_cast<int>(quoted.size()) == kMaxListed) {
      quoted.push_back("...");
      break;
    }
    quoted.push_back(Quote(get_name(item)));
  }
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

}  // namespace

absl::Status ValidateName(std::string_view name_view,
                          std::string_view path_view,
                          std::string_view what_view) {
  const absl::string_view name = ToAbsl(name_view);
  const absl::string_view path = ToAbsl(path_view);
  const absl::string_view what = ToAbsl(what_view);
  if (name.empty())
    return Invalid(path, absl::StrCat(what, " must not be empty"));
  if (name.size() > static_cast<size_t>(kMaxNameLength)) {
    return Invalid(
        path, absl::StrFormat("%s %s has %d bytes, more than the limit of %d",
                              what, Quote(name.substr(0, 32)) + "...",
                              name.size(), kMaxNameLength));
  }
  if (const std::optional<uint32_t> c = FindInvisibleCharacter(name)) {
    return Invalid(
        path, *c < 0x80
                  ? absl::StrFormat("%s %s contains control character 0x%02x",
                                    what, Quote(name), *c)
                  : absl::StrFormat(
                        "%s %s contains character U+%04X (a Unicode control, "
                        "format or separator character)",
                        what, Quote(name), *c));
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckCount(int count, int limit, absl::string_view path,
                        absl::string_view what) {
  if (count > limit) {
    return Invalid(path, absl::StrFormat("%d %s exceed the limit of %d", count,
                                         what, limit));
  }
  return absl::OkStatus();
}

absl::Status ValidateFloatDomain(const v1::FloatDomain& d,
                                 absl::string_view path) {
  if (!std::isfinite(d.low())) {
    return Invalid(
        path, absl::StrCat("low ", FormatNumber(d.low()), " is not finite"));
  }
  if (!std::isfinite(d.high())) {
    return Invalid(
        path, absl::StrCat("high ", FormatNumber(d.high()), " is not finite"));
  }
  if (d.low() > d.high()) {
    return Invalid(path, absl::StrCat("low ", FormatNumber(d.low()), " > high ",
                                      FormatNumber(d.high())));
  }
  if (d.log() && !(d.low() > 0)) {
    return Invalid(path, absl::StrCat("log scale needs low > 0, got low ",
                                      FormatNumber(d.low())));
  }
  return absl::OkStatus();
}

absl::Status ValidateIntDomain(const v1::IntDomain& d, absl::string_view path) {
  for (const auto& [label, v] :
       {std::pair<const char*, int64_t>{"low", d.low()},
        std::pair<const char*, int64_t>{"high", d.high()}}) {
    if (v > kMaxIntMagnitude || v < -kMaxIntMagnitude) {
      return Invalid(
          path,
          absl::StrCat(label, " ", v, " is outside [-", kMaxIntMagnitude, ", ",
                       kMaxIntMagnitude, "] (integers must be exact doubles)"));
    }
  }
  if (d.low() > d.high()) {
    return Invalid(path, absl::StrCat("low ", d.low(), " > high ", d.high()));
  }
  if (d.log() && d.low() < 1) {
    return Invalid(path,
                   absl::StrCat("log scale needs low >= 1, got low ", d.low()));
  }
  return absl::OkStatus();
}

absl::Status ValidateCategoricalDomain(const v1::CategoricalDomain& d,
                                       absl::string_view path) {
  const std::string values_path =
      absl::StrCat(path, ".categorical_domain.values");
  if (d.values().empty())
    return Invalid(values_path, "at least one value is required");
  METAOPT_RETURN_IF_ERROR(CheckCount(d.values_size(), kMaxCategoricalValues,
                                     values_path, "values"));
  absl::flat_hash_map<absl::string_view, int> seen;
  for (int i = 0; i < d.values_size(); ++i) {
    const std::string value_path = absl::StrCat(values_path, "[", i, "]");
    METAOPT_RETURN_IF_ERROR(ValidateName(d.values(i), value_path, "category"));
    auto [it, inserted] = seen.emplace(d.values(i), i);
    if (!inserted) {
      return Invalid(value_path,
                     absl::StrCat("duplicate category ", Quote(d.values(i)),
                                  " (also values[", it->second, "])"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateParameter(const v1::Parameter& p, absl::string_view path) {
  METAOPT_RETURN_IF_ERROR(
      ValidateName(p.name(), absl::StrCat(path, ".name"), "name"));
  switch (p.domain_case()) {
    case v1::Parameter::kFloatDomain:
      return ValidateFloatDomain(p.float_domain(), path);
    case v1::Parameter::kIntDomain:
      return ValidateIntDomain(p.int_domain(), path);
    case v1::Parameter::kCategoricalDomain:
      return ValidateCategoricalDomain(p.categorical_domain(), path);
    case v1::Parameter::DOMAIN_NOT_SET:
      break;
  }
  return Invalid(path,
                 absl::StrCat("parameter ", Quote(p.name()),
                              " has no domain (set float_domain, int_domain or "
                              "categorical_domain)"));
}

// Checks the names of `items` (each with a name()) below `path`.`field`[i] and
// their uniqueness.
template <typename Items>
absl::Status ValidateUniqueNames(const Items& items, absl::string_view path,
                                 absl::string_view field) {
  absl::flat_hash_map<absl::string_view, int> seen;
  for (int i = 0; i < items.size(); ++i) {
    const std::string name_path =
        absl::StrCat(path, ".", field, "[", i, "].name");
    METAOPT_RETURN_IF_ERROR(ValidateName(items[i].name(), name_path, "name"));
    auto [it, inserted] = seen.emplace(items[i].name(), i);
    if (!inserted) {
      return Invalid(name_path,
                     absl::StrCat("duplicate name ", Quote(items[i].name()),
                                  " (also ", field, "[", it->second, "])"));
    }
  }
  return absl::OkStatus();
}

// Index of the element of `items` named `name`, or -1.
template <typename Items>
int FindByName(const Items& items, absl::string_view name) {
  for (int i = 0; i < items.size(); ++i) {
    if (items[i].name() == name) return i;
  }
  return -1;
}

std::string ParameterPath(absl::string_view assignment_path,
                          absl::string_view name) {
  return absl::StrCat(assignment_path, ".parameters[", Quote(name), "]");
}

// Checks `value` against parameter `p` and returns its canonical form.
absl::StatusOr<v1::ParameterValue> CanonicalValue(
    const v1::Parameter& p, const v1::ParameterValue& value,
    absl::string_view path) {
  v1::ParameterValue out;
  if (p.domain_case() == v1::Parameter::kCategoricalDomain) {
    if (value.kind_case() != v1::ParameterValue::kCategory) {
      if (value.kind_case() == v1::ParameterValue::kNumber) {
        return Invalid(path, absl::StrCat("expected a category, got number ",
                                          FormatNumber(value.number())));
      }
      return Invalid(path, "no value set (expected a category)");
    }
    const auto& values = p.categorical_domain().values();
    if (std::find(values.begin(), values.end(), value.category()) ==
        values.end()) {
      return Invalid(
          path, absl::StrCat(
                    Quote(value.category()), " is not one of ",
                    ListNames(values, [](const std::string& v) { return v; })));
    }
    out.set_category(value.category());
    return out;
  }
  if (value.kind_case() != v1::ParameterValue::kNumber) {
    if (value.kind_case() == v1::ParameterValue::kCategory) {
      return Invalid(path, absl::StrCat("expected a number, got category ",
                                        Quote(value.category())));
    }
    return Invalid(path, "no value set (expected a number)");
  }
  const double x = value.number();
  if (!std::isfinite(x))
    return Invalid(path, absl::StrCat(FormatNumber(x), " is not finite"));
  if (p.domain_case() == v1::Parameter::kFloatDomain) {
    const v1::FloatDomain& d = p.float_domain();
    if (x < d.low() || x > d.high()) {
      return Invalid(path, absl::StrCat(FormatNumber(x), " is outside [",
                                        FormatNumber(d.low()), ", ",
                                        FormatNumber(d.high()), "]"));
    }
    out.set_number(
        x + 0.0);  // -0 becomes +0, so equal configurations have equal keys.
    return out;
  }
  const v1::IntDomain& d = p.int_domain();
  if (x != std::floor(x)) {
    return Invalid(path, absl::StrCat(FormatNumber(x), " is not an integer"));
  }
  if (x < static_cast<double>(d.low()) || x > static_cast<double>(d.high())) {
    return Invalid(path, absl::StrCat(FormatNumber(x), " is outside [", d.low(),
                                      ", ", d.high(), "]"));
  }
  out.set_number(x + 0.0);
  return out;
}

}  // namespace

v1::ParameterValue SampleParameterValue(const v1::Parameter& p, Rng& rng) {
  v1::ParameterValue out;
  switch (p.domain_case()) {
    case v1::Parameter::kFloatDomain: {
      const v1::FloatDomain& d = p.float_domain();
      const double u = Uniform01(rng);
      double x;
      if (d.low() == d.high()) {
        x = d.low();
      } else if (d.log()) {
        const double a = std::log(d.low()), b = std::log(d.high());
        x = std::exp(a + u * (b - a));
      } else {
        // A convex combination never overflows, even for bounds near +-DBL_MAX.
        x = d.low() * (1 - u) + d.high() * u;
      }
      out.set_number(std::clamp(x, d.low(), d.high()) + 0.0);
      break;
    }
    case v1::Parameter::kIntDomain: {
      const v1::IntDomain& d = p.int_domain();
      int64_t k;
      if (d.log()) {
        // Log-uniform over [low, high + 1), floored: each integer gets the mass
        // of its unit cell.
        const double a = std::log(static_cast<double>(d.low()));
        const double b = std::log(static_cast<double>(d.high()) + 1.0);
        const double x = std::floor(std::exp(a + Uniform01(rng) * (b - a)));
        k = std::clamp(static_cast<int64_t>(x), d.low(), d.high());
      } else {
        const uint64_t n = static_cast<uint64_t>(d.high() - d.low()) + 1;
        k = d.low() + static_cast<int64_t>(UniformIndex(rng, n));
      }
      out.set_number(static_cast<double>(k));
      break;
    }
    case v1::Parameter::kCategoricalDomain: {
      const auto& values = p.categorical_domain().values();
      out.set_category(
          values[static_cast<int>(UniformIndex(rng, values.size()))]);
      break;
    }
    case v1::Parameter::DOMAIN_NOT_SET:
      break;
  }
  return out;
}

namespace {

std::string Plural(int n, absl::string_view noun) {
  return absl::StrCat(n, " ", noun, n == 1 ? "" : "s");
}

}  // namespace

absl::Status ValidateSearchSpace(const v1::SearchSpace& space,
                                 std::string_view path_view) {
  const absl::string_view path = ToAbsl(path_view);
  const std::string stages_path = absl::StrCat(path, ".stages");
  if (space.stages().empty())
    return Invalid(stages_path, "at least one stage is required");
  METAOPT_RETURN_IF_ERROR(
      CheckCount(space.stages_size(), kMaxStages, stages_path, "stages"));
  METAOPT_RETURN_IF_ERROR(ValidateUniqueNames(space.stages(), path, "stages"));
  for (int s = 0; s < space.stages_size(); ++s) {
    const v1::Stage& stage = space.stages(s);
    const std::string stage_path = absl::StrCat(stages_path, "[", s, "]");
    const std::string algorithms_path = absl::StrCat(stage_path, ".algorithms");
    if (stage.algorithms().empty()) {
      return Invalid(algorithms_path,
                     absl::StrCat("stage ", Quote(stage.name()),
                                  " needs at least one algorithm"));
    }
    METAOPT_RETURN_IF_ERROR(CheckCount(stage.algorithms_size(),
                                       kMaxAlgorithmsPerStage, algorithms_path,
                                       "algorithms"));
    METAOPT_RETURN_IF_ERROR(
        ValidateUniqueNames(stage.algorithms(), stage_path, "algorithms"));
    for (int a = 0; a < stage.algorithms_size(); ++a) {
      const v1::Algorithm& algorithm = stage.algorithms(a);
      const std::string algorithm_path =
          absl::StrCat(algorithms_path, "[", a, "]");
      METAOPT_RETURN_IF_ERROR(CheckCount(
          algorithm.parameters_size(), kMaxParametersPerAlgorithm,
          absl::StrCat(algorithm_path, ".parameters"), "parameters"));
      METAOPT_RETURN_IF_ERROR(ValidateUniqueNames(
          algorithm.parameters(), algorithm_path, "parameters"));
      for (int p = 0; p < algorithm.parameters_size(); ++p) {
        METAOPT_RETURN_IF_ERROR(ValidateParameter(
            algorithm.parameters(p),
            absl::StrCat(algorithm_path, ".parameters[", p, "]")));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SearchSpace> SearchSpace::Create(const v1::SearchSpace& proto,
                                                std::string_view path) {
  METAOPT_RETURN_IF_ERROR(ValidateSearchSpace(proto, path));
  return SearchSpace(proto);
}

absl::StatusOr<v1::Configuration> SearchSpace::Canonicalize(
    const v1::Configuration& config, std::string_view path_view) const {
  const absl::string_view path = ToAbsl(path_view);
  const int num_stages = proto_.stages_size();
  // For each stage, the index of the assignment that sets it (or -1).
  std::vector<int> assignment_of_stage(num_stages, -1);
  const std::string assignments_path = absl::StrCat(path, ".assignments");
  for (int i = 0; i < config.assignments_size(); ++i) {
    const v1::Assignment& assignment = config.assignments(i);
    const std::string stage_path =
        absl::StrCat(assignments_path, "[", i, "].stage");
    const int s = FindByName(proto_.stages(), assignment.stage());
    if (s < 0) {
      return Invalid(
          stage_path,
          absl::StrCat("unknown stage ", Quote(assignment.stage()),
                       " (stages are ",
                       ListNames(proto_.stages(),
                                 [](const v1::Stage& st) { return st.name(); }),
                       ")"));
    }
    if (assignment_of_stage[s] >= 0) {
      return Invalid(
          stage_path,
          absl::StrCat("duplicate stage ", Quote(assignment.stage()),
                       " (also assignments[", assignment_of_stage[s], "])"));
    }
    assignment_of_stage[s] = i;
  }

  v1::Configuration out;
  for (int s = 0; s < num_stages; ++s) {
    const v1::Stage& stage = proto_.stages(s);
    const int i = assignment_of_stage[s];
    if (i < 0) {
      return Invalid(assignments_path,
                     absl::StrCat("missing stage ", Quote(stage.name())));
    }
    const v1::Assignment& assignment = config.assignments(i);
    const std::string assignment_path =
        absl::StrCat(assignments_path, "[", i, "]");
    int a = 0;
    if (assignment.algorithm().empty()) {
      if (stage.algorithms_size() > 1) {
        return Invalid(
            absl::StrCat(assignment_path, ".algorithm"),
            absl::StrCat(
                "must be set: stage ", Quote(stage.name()), " has ",
                stage.algorithms_size(), " algorithms ",
                ListNames(stage.algorithms(),
                          [](const v1::Algorithm& al) { return al.name(); })));
      }
    } else {
      a = FindByName(stage.algorithms(), assignment.algorithm());
      if (a < 0) {
        return Invalid(
            absl::StrCat(assignment_path, ".algorithm"),
            absl::StrCat(
                "unknown algorithm ", Quote(assignment.algorithm()),
                " in stage ", Quote(stage.name()), " (algorithms are ",
                ListNames(stage.algorithms(),
                          [](const v1::Algorithm& al) { return al.name(); }),
                ")"));
      }
    }
    const v1::Algorithm& algorithm = stage.algorithms(a);

    // Unknown names first (a misspelt name would otherwise show up as a missing
    // one), in sorted order so that the message does not depend on map
    // iteration order.
    const auto& given = assignment.parameters();
    int known = 0;
    for (const v1::Parameter& p : algorithm.parameters())
      known += given.count(p.name());
    if (known != static_cast<int>(given.size())) {
      std::vector<absl::string_view> names;
      for (const auto& [name, value] : given) names.push_back(name);
      std::sort(names.begin(), names.end());
      for (absl::string_view name : names) {
        if (FindByName(algorithm.parameters(), name) < 0) {
          return Invalid(
              ParameterPath(assignment_path, name),
              absl::StrCat(
                  "unknown parameter of algorithm ", Quote(algorithm.name()),
                  " (parameters are ",
                  ListNames(algorithm.parameters(),
                            [](const v1::Parameter& p) { return p.name(); }),
                  ")"));
        }
      }
    }

    v1::Assignment* canonical = out.add_assignments();
    canonical->set_stage(stage.name());
    canonical->set_algorithm(algorithm.name());
    for (const v1::Parameter& p : algorithm.parameters()) {
      const std::string parameter_path =
          ParameterPath(assignment_path, p.name());
      auto it = given.find(p.name());
      if (it == given.end()) {
        return Invalid(parameter_path,
                       absl::StrCat("missing (algorithm ",
                                    Quote(algorithm.name()), " requires it)"));
      }
      METAOPT_ASSIGN_OR_RETURN(v1::ParameterValue value,
                               CanonicalValue(p, it->second, parameter_path));
      (*canonical->mutable_parameters())[p.name()] = std::move(value);
    }
  }
  return out;
}

v1::Configuration SearchSpace::Sample(Rng& rng) const {
  v1::Configuration out;
  for (const v1::Stage& stage : proto_.stages()) {
    const v1::Algorithm& algorithm = stage.algorithms(
        static_cast<int>(UniformIndex(rng, stage.algorithms_size())));
    v1::Assignment* assignment = out.add_assignments();
    assignment->set_stage(stage.name());
    assignment->set_algorithm(algorithm.name());
    for (const v1::Parameter& p : algorithm.parameters()) {
      (*assignment->mutable_parameters())[p.name()] =
          SampleParameterValue(p, rng);
    }
  }
  return out;
}

std::string SearchSpace::Summary() const {
  int algorithms = 0;
  int parameters = 0;
  for (const v1::Stage& stage : proto_.stages()) {
    algorithms += stage.algorithms_size();
    for (const v1::Algorithm& algorithm : stage.algorithms()) {
      parameters += algorithm.parameters_size();
    }
  }
  return absl::StrCat(Plural(proto_.stages_size(), "stage"), ", ",
                      Plural(algorithms, "algorithm"), ", ",
                      Plural(parameters, "parameter"));
}

namespace {

// Appends Quote(text): the text itself between quotes when CEscape would
// leave it as it is and Quote would not shorten it (a search builds
// thousands of keys per Suggest), Quote otherwise.
void AppendQuoted(std::string* out, absl::string_view text) {
  bool plain = text.size() <= kMaxQuotedBytes;
  for (size_t i = 0; i < text.size() && plain; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\'' && c != '\\';
  }
  if (!plain) {
    out->append(Quote(text));
    return;
  }
  out->push_back('"');
  out->append(text.data(), text.size());
  out->push_back('"');
}

}  // namespace

std::string ConfigurationKey(const v1::Configuration& canonical) {
  // "stage"/"algorithm"{"name"=number,"name"="category"};... with names
  // C-escaped inside quotes, so no name can imitate the punctuation, and
  // numbers in %.17g so that they round-trip.
  std::string key;
  std::vector<std::pair<absl::string_view, const v1::ParameterValue*>> values;
  for (const v1::Assignment& assignment : canonical.assignments()) {
    AppendQuoted(&key, assignment.stage());
    key.push_back('/');
    AppendQuoted(&key, assignment.algorithm());
    key.push_back('{');
    values.clear();
    for (const auto& [name, value] : assignment.parameters()) {
      values.emplace_back(name, &value);
    }
    std::sort(values.begin(), values.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) key.push_back(',');
      AppendQuoted(&key, values[i].first);
      key.push_back('=');
      const v1::ParameterValue& value = *values[i].second;
      switch (value.kind_case()) {
        case v1::ParameterValue::kNumber: {
          // What printf's %.17g writes (the standard defines to_chars's
          // general format with a precision so), without its locale and
          // arbitrary-precision machinery.
          char number[32];  // at most 24 characters
          const std::to_chars_result end =
              std::to_chars(number, number + sizeof(number), value.number(),
                            std::chars_format::general, 17);
          key.append(number, end.ptr);
          break;
        }
        case v1::ParameterValue::kCategory:
          AppendQuoted(&key, value.category());
          break;
        case v1::ParameterValue::KIND_NOT_SET:
          key.push_back('?');
          break;
      }
    }
    key.append("};");
  }
  return key;
}

absl::StatusOr<v1::StudySpec> ValidateAndCanonicalizeStudySpec(
    const v1::StudySpec& spec) {
  METAOPT_ASSIGN_OR_RETURN(
      SearchSpace space,
      SearchSpace::Create(spec.search_space(), "spec.search_space"));

  v1::StudySpec out = spec;
  METAOPT_RETURN_IF_ERROR(CanonicalizeObjectives(spec, &out));

  const v1::AlgorithmKind kind = spec.algorithm().kind();
  if (kind == v1::ALGORITHM_KIND_UNSPECIFIED ||
      !v1::AlgorithmKind_IsValid(kind)) {
    return Invalid(
        "spec.algorithm.kind",
        absl::StrCat(v1::AlgorithmKind_IsValid(kind)
                         ? v1::AlgorithmKind_Name(kind)
                         : absl::StrCat(kind),
                     " is not allowed; set one of ALGORITHM_KIND_RANDOM, _GP, "
                     "_DEEPPIPE, _PMF, _MOSAIC"));
  }
  if (spec.algorithm().initial_trials() < 0) {
    return Invalid(
        "spec.algorithm.initial_trials",
        absl::StrCat(spec.algorithm().initial_trials(), " must be >= 0"));
  }
  if (spec.algorithm().acquisition_samples() < 0 ||
      spec.algorithm().acquisition_samples() > kMaxAcquisitionSamples) {
    return Invalid("spec.algorithm.acquisition_samples",
                   absl::StrCat(spec.algorithm().acquisition_samples(),
                                " must be in [0, ", kMaxAcquisitionSamples,
                                "] (0: the default)"));
  }

  METAOPT_RETURN_IF_ERROR(CheckCount(spec.candidates_size(), kMaxCandidates,
                                     "spec.candidates", "candidates"));
  absl::flat_hash_map<std::string, int> seen;
  for (int i = 0; i < spec.candidates_size(); ++i) {
    const std::string candidate_path = absl::StrCat("spec.candidates[", i, "]");
    METAOPT_ASSIGN_OR_RETURN(
        v1::Configuration canonical,
        space.Canonicalize(spec.candidates(i), candidate_path));
    auto [it, inserted] = seen.emplace(ConfigurationKey(canonical), i);
    if (!inserted) {
      return Invalid(
          candidate_path,
          absl::StrCat("duplicate of spec.candidates[", it->second, "]"));
    }
    *out.mutable_candidates(i) = std::move(canonical);
  }

  std::vector<absl::string_view> features;
  for (const auto& [name, value] : spec.dataset_features())
    features.push_back(name);
  std::sort(features.begin(), features.end());
  for (absl::string_view name : features) {
    const std::string feature_path =
        absl::StrCat("spec.dataset_features[", Quote(name), "]");
    METAOPT_RETURN_IF_ERROR(
        ValidateName(std::string_view(name.data(), name.size()), feature_path));
    const double value = spec.dataset_features().at(std::string(name));
    if (!std::isfinite(value)) {
      return Invalid(feature_path,
                     absl::StrCat(FormatNumber(value), " is not finite"));
    }
  }
  if (spec.has_dataset_sample()) {
    METAOPT_RETURN_IF_ERROR(
        ValidateDatasetSample(spec.dataset_sample(), "spec.dataset_sample"));
  }
  return out;
}

absl::Status ValidateDatasetSample(const v1::DatasetSample& sample,
                                   std::string_view path) {
  const std::string base(path);
  const int m = sample.column_kinds_size();
  if (m < 1 || m > kMaxSampleColumns) {
    return Invalid(base + ".column_kinds",
                   absl::StrCat(m, " columns; need 1 to ", kMaxSampleColumns));
  }
  for (int j = 0; j < m; ++j) {
    const v1::ColumnKind kind = sample.column_kinds(j);
    if (kind != v1::COLUMN_KIND_NUMERIC &&
        kind != v1::COLUMN_KIND_CATEGORICAL) {
      return Invalid(absl::StrCat(base, ".column_kinds[", j, "]"),
                     absl::StrCat(v1::ColumnKind_IsValid(kind)
                                      ? v1::ColumnKind_Name(kind)
                                      : absl::StrCat(static_cast<int>(kind)),
                                  " is not COLUMN_KIND_NUMERIC or "
                                  "COLUMN_KIND_CATEGORICAL"));
    }
  }
  const int c = sample.num_targets();
  if (c < 1 || c > kMaxSampleTargets) {
    return Invalid(base + ".num_targets",
                   absl::StrCat(c, "; need 1 to ", kMaxSampleTargets));
  }
  if (sample.values_size() % m != 0) {
    return Invalid(
        base + ".values",
        absl::StrCat(sample.values_size(),
                     " values are not rows of len(column_kinds) = ", m));
  }
  const int n = sample.values_size() / m;
  if (n < kMinSampleRows || n > kMaxSampleRows) {
    return Invalid(
        base + ".values",
        absl::StrCat(n, " rows of ", m, " columns; need ", kMinSampleRows,
                     " to ", kMaxSampleRows, " rows"));
  }
  if (sample.targets_size() != n * c) {
    return Invalid(base + ".targets",
                   absl::StrCat(sample.targets_size(), " values; need rows (",
                                n, ") x num_targets (", c, ") = ", n * c));
  }
  for (int i = 0; i < sample.values_size(); ++i) {
    if (!std::isfinite(sample.values(i))) {
      return Invalid(
          absl::StrCat(base, ".values[", i, "]"),
          absl::StrCat(FormatNumber(sample.values(i)), " is not finite"));
    }
  }
  for (int i = 0; i < sample.targets_size(); ++i) {
    if (!std::isfinite(sample.targets(i))) {
      return Invalid(
          absl::StrCat(base, ".targets[", i, "]"),
          absl::StrCat(FormatNumber(sample.targets(i)), " is not finite"));
    }
  }
  return absl::OkStatus();
}

}  // namespace metaopt::space
