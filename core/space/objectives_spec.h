// Validation of what a study spec asks to optimize: its objective or
// objectives and its constraints (part of ValidateAndCanonicalizeStudySpec).
#ifndef METAOPT_CORE_SPACE_OBJECTIVES_SPEC_H_
#define METAOPT_CORE_SPACE_OBJECTIVES_SPEC_H_

#include "absl/status/status.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::space {

// Most objectives of one study (hypervolumes are exact up to three).
inline constexpr int kMaxObjectives = 3;
// Most constraints of one study.
inline constexpr int kMaxConstraints = 16;

// Checks spec.objective, spec.objectives and spec.constraints and writes
// their canonical form into `*out`: one objective always in `objective` (a
// single-element `objectives` moves there); several stay in `objectives`,
// with the first also in `objective`. INVALID_ARGUMENT naming the field, the
// value and the rule.
absl::Status CanonicalizeObjectives(const v1::StudySpec& spec,
                                    v1::StudySpec* out);

}  // namespace metaopt::space

#endif  // METAOPT_CORE_SPACE_OBJECTIVES_SPEC_H_
