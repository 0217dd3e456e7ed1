// Small text helpers shared by the layers above: abseil string_view at the
// std::string_view boundary, values quoted for error messages, and statuses
// that say where they come from.
#ifndef METAOPT_CORE_COMMON_STRINGS_H_
#define METAOPT_CORE_COMMON_STRINGS_H_

#include <cstdint>
#include <optional>
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

// `x` for an error message: the shorter of %.15g and %.17g that reads back
// as `x` (so messages show "1e-05", not "1.0000000000000001e-05", yet never
// round a refused value onto an accepted one); "nan", "inf", "-inf".
std::string FormatNumber(double x);

// The first character of UTF-8 `text` that is a Unicode control (Cc: the C0
// and C1 controls and DEL), format character (Cf: soft hyphen, zero-width
// spaces and joiners, bidirectional marks, BOM, tags, ...) or line or
// paragraph separator (U+2028, U+2029), as its code point; none if there is
// none. Bytes that are not UTF-8 are skipped (the caller checks UTF-8).
std::optional<uint32_t> FindInvisibleCharacter(absl::string_view text);

// `text` with every character FindInvisibleCharacter finds replaced: tab,
// newline and carriage return by a space, the others by their escape
// ("\\x1b", "\\u200b"), so that stored free text prints on one line and
// shows what was sent.
std::string SanitizeText(absl::string_view text);

// `arg` as one POSIX shell word: unchanged when it is made only of letters,
// digits and _./=:@%+,- (and not empty), otherwise in single quotes (a quote
// inside becomes '\'').
std::string ShellQuote(std::string_view arg);

// The 64-bit FNV-1a hash of `text`: stable across runs, platforms and
// builds, for seeds and names derived from ids.
uint64_t Fnv1a64(absl::string_view text);

// The same code with "<prefix>: " before the message; OK stays OK.
absl::Status Annotate(const absl::Status& status, std::string_view prefix);

}  // namespace metaopt

#endif  // METAOPT_CORE_COMMON_STRINGS_H_
