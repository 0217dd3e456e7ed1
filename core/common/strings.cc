#include "core/common/strings.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace metaopt {

std::string Quote(absl::string_view text) {
  if (text.size() <= kMaxQuotedBytes) {
    return absl::StrCat("\"", absl::CEscape(text), "\"");
  }
  return absl::StrCat("\"", absl::CEscape(text.substr(0, kMaxQuotedBytes)),
                      "...\"");
}

std::string ShellQuote(std::string_view arg) {
  const auto shell_safe = [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_./=:@%+,-").find(c) != std::string_view::npos;
  };
  if (!arg.empty() && std::all_of(arg.begin(), arg.end(), shell_safe)) {
    return std::string(arg);
  }
  std::string quoted = "'";
  for (char c : arg) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += "'";
  return quoted;
}

absl::Status Annotate(const absl::Status& status, std::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(ToAbsl(prefix), ": ", status.message()));
}

}  // namespace metaopt
