#include "core/study/page_token.h"

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace metaopt::study {

std::string EncodePageToken(const std::string& kind,
                            const std::string& cursor) {
  return absl::WebSafeBase64Escape(absl::StrCat(kind, ":", cursor));
}

absl::StatusOr<std::string> DecodePageToken(const std::string& kind,
                                            const std::string& token,
                                            const std::string& rpc) {
  std::string decoded;
  const std::string prefix = absl::StrCat(kind, ":");
  if (!absl::WebSafeBase64Unescape(token, &decoded) ||
      !absl::StartsWith(decoded, prefix)) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token: \"", token.substr(0, 64),
                     "\" is not a token returned by ", rpc));
  }
  return decoded.substr(prefix.size());
}

absl::StatusOr<int> ResolvePageSize(int page_size,
                                    const EngineOptions& options) {
  if (page_size < 0 || page_size > options.max_page_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_size: ", page_size, " is outside [0, ", options.max_page_size,
        "] (0 means ", options.default_page_size, ")"));
  }
  return page_size == 0 ? options.default_page_size : page_size;
}

}  // namespace metaopt::study
