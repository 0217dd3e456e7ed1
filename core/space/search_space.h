// Search spaces: hierarchical stages -> algorithms -> parameters, validation
// with precise messages, canonical configurations, and sampling.
#ifndef METAOPT_CORE_SPACE_SEARCH_SPACE_H_
#define METAOPT_CORE_SPACE_SEARCH_SPACE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/space/random.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::space {

// Size limits; inputs beyond them are rejected with INVALID_ARGUMENT naming the
// limit.
inline constexpr int kMaxStages = 64;
inline constexpr int kMaxAlgorithmsPerStage = 256;
inline constexpr int kMaxParametersPerAlgorithm = 256;
inline constexpr int kMaxCategoricalValues = 1024;
inline constexpr int kMaxCandidates = 100000;
// spec.algorithm.acquisition_samples.
inline constexpr int kMaxAcquisitionSamples = 100000;
inline constexpr int kMaxNameLength = 128;
// spec.dataset_sample (v1::DatasetSample): rows, feature columns and target
// columns ("Dataset2Vec: Learning Dataset Meta-Features" reads at most
// 256 x 16 x 3).
inline constexpr int kMinSampleRows = 2;
inline constexpr int kMaxSampleRows = 256;
inline constexpr int kMaxSampleColumns = 16;
inline constexpr int kMaxSampleTargets = 3;
// Integer domains stay within +-2^53 so that every value is exact as a double.
inline constexpr int64_t kMaxIntMagnitude = int64_t{1} << 53;

// Validates a search space. Errors are INVALID_ARGUMENT and name the field path
// below `path`, the value and the rule, e.g.
// "spec.search_space.stages[0].algorithms[2].parameters[1]: low 5 > high 1".
// Rules: at least one stage; every stage has a non-empty unique name and at
// least one algorithm; algorithm names non-empty and unique within their stage;
// parameter names non-empty and unique within their algorithm; a parameter has
// a domain; float: finite low <= high, log needs low > 0; int: low <= high, log
// needs low >= 1; categorical: at least one value, values non-empty and unique.
// Names (and category values) are at most kMaxNameLength bytes without control
// characters; int bounds lie within +-kMaxIntMagnitude; the size limits above
// apply.
absl::Status ValidateSearchSpace(const v1::SearchSpace& space,
                                 std::string_view path = "spec.search_space");

// The rules every name of the API follows: non-empty, at most kMaxNameLength
// bytes, no control characters (bytes below 0x20, and 0x7f). INVALID_ARGUMENT
// names `path`; `what` ("name", "category", ...) begins the message.
absl::Status ValidateName(std::string_view name, std::string_view path,
                          std::string_view what = "name");

// An immutable, validated search space. Thread-safe (all methods const).
class SearchSpace {
 public:
  // Validates `proto` (paths start at `path`).
  static absl::StatusOr<SearchSpace> Create(
      const v1::SearchSpace& proto,
      std::string_view path = "spec.search_space");

  const v1::SearchSpace& proto() const { return proto_; }

  // Validates `config` against the space and returns its canonical form: one
  // assignment per stage in stage order, `algorithm` always filled in, integer
  // parameters as integral numbers. Errors are INVALID_ARGUMENT naming the path
  // below `path` (e.g. "configuration.assignments[1].parameters[\"lr\"]"):
  // missing/duplicate/unknown stage, unknown algorithm, omitted algorithm in a
  // stage with several, unknown or missing parameter, wrong value kind,
  // NaN/inf, value outside [low, high], non-integral int, category not among
  // the values.
  absl::StatusOr<v1::Configuration> Canonicalize(
      const v1::Configuration& config, std::string_view path) const;

  // A uniform sample: each stage's algorithm uniformly, numeric parameters
  // uniform (log-uniform where declared; ints uniform over the integers; log
  // ints log-uniform on [low, high + 1) then floored), categoricals uniform.
  // Canonical. The same seed gives the same samples on every platform.
  v1::Configuration Sample(Rng& rng) const;

  // A short human-readable summary, e.g. "2 stages, 5 algorithms, 7
  // parameters".
  std::string Summary() const;

 private:
  explicit SearchSpace(v1::SearchSpace proto) : proto_(std::move(proto)) {}
  v1::SearchSpace proto_;
};

// A uniform draw from the domain of `parameter` (of a validated space), as
// SearchSpace::Sample makes.
v1::ParameterValue SampleParameterValue(const v1::Parameter& parameter,
                                        Rng& rng);

// A deterministic string key of a canonical configuration: equal keys <=> equal
// configurations. (Numbers are written so that they round-trip exactly.)
std::string ConfigurationKey(const v1::Configuration& canonical);

// Validates a whole StudySpec: the search space, the objective (goal set; name
// may be empty), the algorithm kind (set), every candidate (canonicalized;
// duplicates rejected naming both indices), the dataset features (non-empty
// names, finite values), the dataset sample (ValidateDatasetSample). On
// success returns the spec with its candidates in canonical form.
absl::StatusOr<v1::StudySpec> ValidateAndCanonicalizeStudySpec(
    const v1::StudySpec& spec);

// Validates a v1::DatasetSample: 1..kMaxSampleColumns column kinds, each
// NUMERIC or CATEGORICAL; num_targets in 1..kMaxSampleTargets; values rows of
// the column count, kMinSampleRows..kMaxSampleRows of them; targets exactly
// rows x num_targets; every value finite. INVALID_ARGUMENT naming the field
// below `path`, the value and the rule.
absl::Status ValidateDatasetSample(const v1::DatasetSample& sample,
                                   std::string_view path);

}  // namespace metaopt::space

#endif  // METAOPT_CORE_SPACE_SEARCH_SPACE_H_
