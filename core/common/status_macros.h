// Status propagation macros (abseil 20220623 has none; same meaning as absl's
// later ABSL_RETURN_IF_ERROR / ABSL_ASSIGN_OR_RETURN, so switching is a
// rename).
#ifndef METAOPT_CORE_COMMON_STATUS_MACROS_H_
#define METAOPT_CORE_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define METAOPT_STATUS_CONCAT_INNER_(a, b) a##b
#define METAOPT_STATUS_CONCAT_(a, b) METAOPT_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status); returns it from the enclosing function
// unless OK.
#define METAOPT_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::absl::Status metaopt_status_ = (expr);           \
    if (!metaopt_status_.ok()) return metaopt_status_; \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status, else
// moves the value into `lhs` (a declaration such as `auto x` or an existing
// variable).
#define METAOPT_ASSIGN_OR_RETURN(lhs, rexpr) \
  METAOPT_ASSIGN_OR_RETURN_IMPL_(            \
      METAOPT_STATUS_CONCAT_(metaopt_statusor_, __LINE__), lhs, rexpr)

#define METAOPT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = std::move(statusor).value()

#endif  // METAOPT_CORE_COMMON_STATUS_MACROS_H_
