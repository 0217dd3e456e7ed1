// The folders of a meta-dataset export arriving as file chunks (the
// ExportMetaDataset stream, or history::HistoryExporter in-process), written
// to disk. Free of storage and gRPC, so that clients (metaoptctl export) link
// only this.
#ifndef METAOPT_CORE_HISTORY_EXPORT_FOLDER_H_
#define METAOPT_CORE_HISTORY_EXPORT_FOLDER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace metaopt::history {

// The files of an exported folder, in stream order (metafeatures.csv only when
// a study has dataset features).
inline constexpr const char* kExportFiles[] = {"space.json", "evaluations.csv",
                                               "tasks.csv", "metafeatures.csv",
                                               "README.md"};

// One chunk of one file of one folder.
struct FileChunk {
  std::string dataset;  // the folder (HistoryGroup::name)
  std::string file;     // e.g. "evaluations.csv"
  int64_t offset = 0;   // of `data` in the file
  std::string data;
  bool last_chunk = false;
};

// Receives chunks in stream order and writes each folder into
// `dir/.<name>.partial`, renamed to `dir/<name>` once complete (replacing an
// older export of the same name). INVALID_ARGUMENT for a chunk out of order
// (an offset that does not continue its file, a folder or file starting
// before the previous file ended) or with a folder or file name outside the
// format; DATA_LOSS when the stream ends inside a file. Thread-compatible.
class ExportFolderWriter {
 public:
  explicit ExportFolderWriter(std::string dir) : dir_(std::move(dir)) {}
  absl::Status Write(const FileChunk& chunk);
  // Completes the last folder. Returns the folder names written.
  absl::StatusOr<std::vector<std::string>> Finish();

 private:
  absl::Status FinishFolder();

  const std::string dir_;
  std::string dataset_;
  std::string file_;
  int64_t offset_ = 0;
  bool file_open_ = false;
  std::vector<std::string> written_;
};

}  // namespace metaopt::history

#endif  // METAOPT_CORE_HISTORY_EXPORT_FOLDER_H_
