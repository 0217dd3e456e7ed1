// Small text helpers shared by the layers above: abseil string_view at the
// std::string_view boundary, values quoted for error messages, and statuses
// that say where they come from.
#ifndef METAOPT_CORE_COMMON_STRINGS_H_
#define METAOPT_CORE_COMMON_STRINGS_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace metaopt {

// Debian's abseil 20220623 has its own string_view type while metaopt's
// interfaces take std::string_view: this converts at the boundary.
inline absl::string_view ToAbsl(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// `text` for an error message: C-escaped inside double quotes, and cut after
// kMaxQuotedBytes bytes with "..." so that a long value stays readable.
// (A std::string_view goes through ToAbsl.)
inline constexpr size_t kMaxQuotedBytes = 80;
std::string Quote(absl::string_view text);

// `arg` as one POSIX shell word: unchanged when it is made only of letters,
// digits and _./=:@%+,- (and not empty), otherwise in single quotes (a quote
// inside becomes '\'').
std::string ShellQuote(std::string_view arg);

// The same code with "<prefix>: " before the message; OK stays OK.
absl::Status Annotate(const absl::Status& status, std::string_view prefix);

}  // namespace metaopt

#endif  // METAOPT_CORE_COMMON_STRINGS_H_
