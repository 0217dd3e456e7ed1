#include "core/common/strings.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace metaopt {

std::string Quote(absl::string_view text) {
  if (text.size() <= kMaxQuotedBytes) {
    return absl::StrCat("\"", absl::CEscape(text), "\"");
  }
  return absl::StrCat("\"", absl::CEscape(text.substr(0, kMaxQuotedBytes)),
                      "...\"");
}

std::string FormatNumber(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  std::string s = absl::StrFormat("%.15g", x);
  double back;
  if (!absl::SimpleAtod(s, &back) || back != x) s = absl::StrFormat("%.17g", x);
  return s;
}

namespace {

// Cf (Unicode 15.0) as ranges of code points, and the separators Zl, Zp.
struct Range {
  uint32_t first;
  uint32_t last;
};
constexpr Range kFormatAndSeparators[] = {
    {0x00AD, 0x00AD},   {0x0600, 0x0605},   {0x061C, 0x061C},
    {0x06DD, 0x06DD},   {0x070F, 0x070F},   {0x0890, 0x0891},
    {0x08E2, 0x08E2},   {0x180E, 0x180E},   {0x200B, 0x200F},
    {0x2028, 0x202E},   {0x2060, 0x2064},   {0x2066, 0x206F},
    {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD},
    {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3},
    {0x1D173, 0x1D17A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
};

bool Invisible(uint32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0x9F)) return true;  // Cc
  for (const Range& range : kFormatAndSeparators) {
    if (c >= range.first && c <= range.last) return true;
  }
  return false;
}

// Decodes the UTF-8 character at text[*at] and advances *at past it; a byte
// that does not start a valid sequence is returned alone as 0xFFFFFFFF.
uint32_t NextCodePoint(absl::string_view text, size_t* at) {
  const auto byte = [&](size_t i) {
    return static_cast<unsigned char>(text[i]);
  };
  const unsigned char lead = byte(*at);
  int length = 0;
  uint32_t c = 0;
  if (lead < 0x80) {
    ++*at;
    return lead;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2;
    c = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    c = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    c = lead & 0x07;
  } else {
    ++*at;
    return 0xFFFFFFFF;
  }
  if (*at + length > text.size()) {
    ++*at;
    return 0xFFFFFFFF;
  }
  for (int i = 1; i < length; ++i) {
    if ((byte(*at + i) & 0xC0) != 0x80) {
      ++*at;
      return 0xFFFFFFFF;
    }
    c = (c << 6) | (byte(*at + i) & 0x3F);
  }
  *at += length;
  return c;
}

}  // namespace

std::optional<uint32_t> FindInvisibleCharacter(absl::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const uint32_t c = NextCodePoint(text, &at);
    if (c != 0xFFFFFFFF && Invisible(c)) return c;
  }
  return std::nullopt;
}

std::string SanitizeText(absl::string_view text) {
  if (!FindInvisibleCharacter(text).has_value()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    const size_t start = at;
    const uint32_t c = NextCodePoint(text, &at);
    if (c == 0xFFFFFFFF || !Invisible(c)) {
      out.append(text.data() + start, at - start);
    } else if (c == '\t' || c == '\n' || c == '\r') {
      out += ' ';
    } else if (c < 0x80) {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    } else {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    }
  }
  return out;
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

uint64_t Fnv1a64(absl::string_view text) {
  uint64_t hash = 14695981039346656037ull;  // the offset basis
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;  // the prime
  }
  return hash;
}

}  // namespace metaopt
