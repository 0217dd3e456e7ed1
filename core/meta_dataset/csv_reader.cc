#include "core/meta_dataset/csv_reader.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace metaopt::meta {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The C-locale number grammar of the format:
// -?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool IsDecimalNumber(absl::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  if (i < n && s[i] == '-') ++i;
  size_t start = i;
  while (i < n && IsDigit(s[i])) ++i;
  if (i == start) return false;
  if (i < n && s[i] == '.') {
    start = ++i;
    while (i < n && IsDigit(s[i])) ++i;
    if (i == start) return false;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '+' || s[i] == '-')) ++i;
    start = i;
    while (i < n && IsDigit(s[i])) ++i;
    if (i == start) return false;
  }
  return i == n;
}

}  // namespace

std::optional<absl::string_view> ParseNumber(absl::string_view s, double* out) {
  if (!IsDecimalNumber(s)) return "is not a number";
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(*out)) {
    return "is not a finite double";
  }
  return std::nullopt;
}

std::optional<absl::string_view> ParseInteger(absl::string_view s,
                                              int64_t* out) {
  size_t i = (!s.empty() && s[0] == '-') ? 1 : 0;
  if (i == s.size()) return "is not an integer";
  for (; i < s.size(); ++i) {
    if (!IsDigit(s[i]))
      return IsDecimalNumber(s) ? "is not an integer" : "is not a number";
  }
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec != std::errc() || ptr != s.data() + s.size())
    return "is out of the int64 range";
  return std::nullopt;
}

}  // namespace metaopt::meta
