// Reading whole files (configuration, keys, certificates, data sets, model
// artifacts) with errors that name the file.
#ifndef METAOPT_CORE_COMMON_FILE_UTIL_H_
#define METAOPT_CORE_COMMON_FILE_UTIL_H_

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace metaopt {

// The contents of the file at `path`. Messages read "<what> <path>: ..." (or
// "<path>: ..." when `what` is empty). NOT_FOUND if nothing exists at `path`
// or it is a directory; the code of the errno (absl::ErrnoToStatus) if it
// cannot be opened or read; OUT_OF_RANGE if it holds more than `max_bytes`.
absl::StatusOr<std::string> ReadFileToString(
    const std::string& path, absl::string_view what,
    int64_t max_bytes = std::numeric_limits<int64_t>::max());

// ReadFileToString, and INVALID_ARGUMENT unless the contents hold a PEM block
// (a "-----BEGIN " line): certificates and keys.
absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what);

}  // namespace metaopt

#endif  // METAOPT_CORE_COMMON_FILE_UTIL_H_
