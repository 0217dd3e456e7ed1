// Reading small whole files (configuration, keys, certificates) with errors
// that name the file.
#ifndef METAOPT_CORE_COMMON_FILE_UTIL_H_
#define METAOPT_CORE_COMMON_FILE_UTIL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace metaopt {

// The contents of the file at `path`. NOT_FOUND if it cannot be opened,
// UNAVAILABLE on a read error; messages read "<what> <path>: ...".
absl::StatusOr<std::string> ReadFileToString(const std::string& path,
                                             absl::string_view what);

// ReadFileToString, and INVALID_ARGUMENT unless the contents hold a PEM block
// (a "-----BEGIN " line): certificates and keys.
absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what);

}  // namespace metaopt

#endif  // METAOPT_CORE_COMMON_FILE_UTIL_H_
