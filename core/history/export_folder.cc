#include "core/history/export_folder.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"

namespace metaopt::history {
namespace {

// A folder name that stays inside the output directory:
// [A-Za-z0-9][A-Za-z0-9._-]{0,127}.
absl::Status ValidateFolderName(const std::string& name) {
  const bool ok =
      !name.empty() && name.size() <= 128 && absl::ascii_isalnum(name[0]) &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
      });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("export: folder name ", Quote(name),
                   " is not [A-Za-z0-9][A-Za-z0-9._-]{0,127}"));
}

}  // namespace

absl::Status ExportFolderWriter::Write(const FileChunk& chunk) {
  METAOPT_RETURN_IF_ERROR(ValidateFolderName(chunk.dataset));
  if (std::find(std::begin(kExportFiles), std::end(kExportFiles), chunk.file) ==
      std::end(kExportFiles)) {
    return absl::InvalidArgumentError(
        absl::StrCat("export: unexpected file name ", Quote(chunk.file)));
  }
  if (chunk.dataset != dataset_) {
    if (file_open_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "export: folder ", Quote(chunk.dataset), " starts before ",
          Quote(dataset_), "/", file_, " ended"));
    }
    if (!dataset_.empty()) METAOPT_RETURN_IF_ERROR(FinishFolder());
    dataset_ = chunk.dataset;
    const std::filesystem::path partial =
        std::filesystem::path(dir_) / absl::StrCat(".", dataset_, ".partial");
    std::error_code error;
    std::filesystem::remove_all(partial, error);
    std::filesystem::create_directories(partial, error);
    if (error) {
      return absl::InternalError(absl::StrCat(
          "cannot create ", partial.string(), ": ", error.message()));
    }
  }
  const bool continues = file_open_ && chunk.file == file_;
  if (continues ? chunk.offset != offset_ : chunk.offset != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "export: ", chunk.dataset, "/", chunk.file, " chunk at offset ",
        chunk.offset, " where ", continues ? offset_ : 0, " was expected"));
  }
  if (!continues && file_open_) {
    return absl::InvalidArgumentError(
        absl::StrCat("export: ", chunk.dataset, "/", chunk.file,
                     " starts before ", file_, " ended"));
  }
  const std::filesystem::path path = std::filesystem::path(dir_) /
                                     absl::StrCat(".", dataset_, ".partial") /
                                     chunk.file;
  std::ofstream out(
      path, std::ios::binary | (continues ? std::ios::app : std::ios::trunc));
  out << chunk.data;
  out.close();
  if (!out) {
    return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  }
  file_ = chunk.file;
  offset_ = chunk.offset + static_cast<int64_t>(chunk.data.size());
  file_open_ = !chunk.last_chunk;
  return absl::OkStatus();
}

absl::Status ExportFolderWriter::FinishFolder() {
  if (file_open_) {
    return absl::DataLossError(absl::StrCat("export: ", dataset_, "/", file_,
                                            " ended without its last chunk"));
  }
  const std::filesystem::path partial =
      std::filesystem::path(dir_) / absl::StrCat(".", dataset_, ".partial");
  const std::filesystem::path target = std::filesystem::path(dir_) / dataset_;
  std::error_code error;
  std::filesystem::remove_all(target, error);
  std::filesystem::rename(partial, target, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot rename ", partial.string(),
                                            " to ", target.string(), ": ",
                                            error.message()));
  }
  written_.push_back(dataset_);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ExportFolderWriter::Finish() {
  if (!dataset_.empty()) METAOPT_RETURN_IF_ERROR(FinishFolder());
  dataset_.clear();
  return written_;
}

}  // namespace metaopt::history
