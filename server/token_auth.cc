#include "server/token_auth.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/common/file_util.h"
#include "core/common/status_macros.h"

namespace metaopt::server {
namespace {

constexpr size_t kMaxOwnerLength = 64;
constexpr size_t kMinTokenLength = 16;
constexpr size_t kMaxTokenLength = 512;
constexpr absl::string_view kBearer = "bearer ";

bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' ||
         c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

// RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" )
// *"=".
bool IsToken(absl::string_view token) {
  size_t i = 0;
  while (i < token.size() && IsTokenChar(token[i])) ++i;
  if (i == 0) return false;
  while (i < token.size() && token[i] == '=') ++i;
  return i == token.size();
}

// Equal iff `secret` == `presented`. The time depends only on the length of
// `presented` (which the caller chose), not on `secret` or on where they
// differ. `secret` is non-empty.
bool ConstantTimeEquals(absl::string_view secret, absl::string_view presented) {
  unsigned int diff = secret.size() != presented.size() ? 1 : 0;
  for (size_t i = 0; i < presented.size(); ++i) {
    diff |= static_cast<unsigned char>(secret[i % secret.size()]) ^
            static_cast<unsigned char>(presented[i]);
  }
  return diff == 0;
}

absl::Status Unauthenticated(absl::string_view why) {
  return absl::UnauthenticatedError(
      absl::StrCat(why,
                   "; send the metadata 'authorization: Bearer <token>' "
                   "with a token from the server's tokens file"));
}

}  // namespace

absl::Status ValidateOwner(absl::string_view owner) {
  if (owner.empty() || owner.size() > kMaxOwnerLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("owner \"", absl::CHexEscape(owner.substr(0, 80)),
                     "\" must have 1..", kMaxOwnerLength, " characters"));
  }
  for (size_t i = 0; i < owner.size(); ++i) {
    const char c = owner[i];
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        (i == 0 || (c != '.' && c != '_' && c != '-'))) {
      return absl::InvalidArgumentError(
          absl::StrCat("owner \"", absl::CHexEscape(owner),
                       "\" must be letters, digits, '.', '_' or '-', starting "
                       "with a letter or digit"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TokenAuthenticator>>
TokenAuthenticator::FromFile(const std::string& path) {
  METAOPT_ASSIGN_OR_RETURN(std::string text,
                           ReadFileToString(path, "tokens file"));
  return Parse(text, path);
}

absl::StatusOr<std::unique_ptr<TokenAuthenticator>> TokenAuthenticator::Parse(
    absl::string_view text, absl::string_view source) {
  std::vector<Entry> entries;
  absl::flat_hash_map<std::string, int> line_of_token;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line_number, ": ", what));
    };
    const size_t hash = line.find('#');
    if (hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) {
      return error("expected 'owner:token'");
    }
    const absl::string_view owner = line.substr(0, colon);
    const absl::string_view token = line.substr(colon + 1);
    absl::Status owner_ok = ValidateOwner(owner);
    if (!owner_ok.ok()) return error(owner_ok.message());
    if (token.size() < kMinTokenLength || token.size() > kMaxTokenLength) {
      return error(absl::StrCat("the token of owner \"", owner, "\" has ",
                                token.size(), " characters; ", kMinTokenLength,
                                "..", kMaxTokenLength, " are required"));
    }
    if (!IsToken(token)) {
      return error(absl::StrCat(
          "the token of owner \"", owner,
          "\" must be characters of [A-Za-z0-9._~+/-] with optional trailing "
          "'=' (RFC 6750)"));
    }
    auto [it, inserted] = line_of_token.emplace(token, line_number);
    if (!inserted) {
      return error(absl::StrCat("the token of owner \"", owner,
                                "\" repeats the token on line ", it->second,
                                "; every token must be unique"));
    }
    entries.push_back({std::string(owner), std::string(token)});
  }
  if (entries.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": no 'owner:token' lines; every call would be refused"));
  }
  return std::unique_ptr<TokenAuthenticator>(
      new TokenAuthenticator(std::move(entries)));
}

absl::StatusOr<std::string> TokenAuthenticator::Authenticate(
    std::optional<absl::string_view> authorization) const {
  if (!authorization.has_value()) {
    return Unauthenticated("missing 'authorization' metadata");
  }
  if (authorization->size() <= kBearer.size() ||
      !absl::StartsWithIgnoreCase(*authorization, kBearer)) {
    return Unauthenticated("'authorization' metadata is not 'Bearer <token>'");
  }
  const absl::string_view presented =
      absl::StripLeadingAsciiWhitespace(authorization->substr(kBearer.size()));
  // Every token is compared, so the time does not tell which one matched.
  const Entry* match = nullptr;
  for (const Entry& entry : entries_) {
    if (ConstantTimeEquals(entry.token, presented)) match = &entry;
  }
  if (match == nullptr) return Unauthenticated("invalid token");
  return match->owner;
}

}  // namespace metaopt::server
