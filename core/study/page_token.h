// Page tokens and page sizes of the List RPCs. Thread-safe (pure functions).
#ifndef METAOPT_CORE_STUDY_PAGE_TOKEN_H_
#define METAOPT_CORE_STUDY_PAGE_TOKEN_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/study/engine_options.h"

namespace metaopt::study {

// Page tokens are opaque to clients: web-safe base64 of "<kind>:<cursor>",
// where `kind` names the listed collection ("study", "trial") and `cursor` is
// the last item of the page.
std::string EncodePageToken(const std::string& kind, const std::string& cursor);

// The cursor of a token of `kind`; INVALID_ARGUMENT saying it is not a token
// returned by `rpc` otherwise.
absl::StatusOr<std::string> DecodePageToken(const std::string& kind,
                                            const std::string& token,
                                            const std::string& rpc);

// The page size a request's `page_size` asks for (0: the default);
// INVALID_ARGUMENT outside [0, max_page_size].
absl::StatusOr<int> ResolvePageSize(int page_size,
                                    const EngineOptions& options);

}  // namespace metaopt::study

#endif  // METAOPT_CORE_STUDY_PAGE_TOKEN_H_
