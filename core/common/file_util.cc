#include "core/common/file_util.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace metaopt {

absl::StatusOr<std::string> ReadFileToString(const std::string& path,
                                             absl::string_view what) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::NotFoundError(
        absl::StrCat(what, " ", path, ": cannot be opened"));
  }
  std::stringstream text;
  text << file.rdbuf();
  if (file.bad()) {
    return absl::UnavailableError(
        absl::StrCat(what, " ", path, ": read error"));
  }
  return text.str();
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what) {
  absl::StatusOr<std::string> text = ReadFileToString(path, what);
  if (text.ok() && text->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": not a PEM file (no -----BEGIN line)"));
  }
  return text;
}

}  // namespace metaopt
