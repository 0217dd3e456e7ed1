// Bearer-token authentication: who is calling, from the `authorization`
// metadata of an RPC and the server's tokens file.
#ifndef METAOPT_SERVER_TOKEN_AUTH_H_
#define METAOPT_SERVER_TOKEN_AUTH_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace metaopt::server {

// Maps bearer tokens to owners. Immutable after construction, so thread-safe.
//
// The tokens file has one `owner:token` per line. `#` starts a comment (it is
// in neither alphabet), blank lines are skipped, and surrounding whitespace is
// trimmed. An owner is 1..64 characters of [A-Za-z0-9._-] starting with a
// letter or digit; one owner may have several tokens (rotation). A token is 16
// to 512 characters of the RFC 6750 token alphabet [A-Za-z0-9._~+/-] with
// optional trailing '='; the same token twice (for one owner or two) is an
// error. Errors name the file and line, never the token.
class TokenAuthenticator {
 public:
  // Reads and parses the tokens file at `path`.
  static absl::StatusOr<std::unique_ptr<TokenAuthenticator>> FromFile(
      const std::string& path);
  // Parses tokens file text; `source` names it in errors ("tokens.txt").
  static absl::StatusOr<std::unique_ptr<TokenAuthenticator>> Parse(
      absl::string_view text, absl::string_view source);

  // The owner whose token `authorization` carries ("Bearer <token>", the
  // scheme case-insensitive). UNAUTHENTICATED when it is absent, malformed or
  // carries no known token. The comparison takes the same time whichever
  // token (if any) matches and wherever the first difference lies.
  absl::StatusOr<std::string> Authenticate(
      std::optional<absl::string_view> authorization) const;

  // Number of tokens.
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string owner;
    std::string token;
  };
  explicit TokenAuthenticator(std::vector<Entry> entries)
      : entries_(std::move(entries)) {}

  const std::vector<Entry> entries_;
};

// INVALID_ARGUMENT unless `owner` is 1..64 characters of [A-Za-z0-9._-]
// starting with a letter or digit.
absl::Status ValidateOwner(absl::string_view owner);

}  // namespace metaopt::server

#endif  // METAOPT_SERVER_TOKEN_AUTH_H_
