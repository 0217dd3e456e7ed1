// The service's own history as meta-datasets: an owner's completed studies
// that share a search space and objective, written as a folder in the shared
// format (docs/meta_datasets.md) that metaopt-train reads unchanged. The
// ExportMetaDataset RPC streams it; the history learner trains on it.
//
//   METAOPT_ASSIGN_OR_RETURN(std::vector<history::HistoryGroup> groups,
//                            history::ScanHistory(storage, owner, options));
//   history::HistoryExporter exporter(&storage, owner, groups, options);
//   METAOPT_RETURN_IF_ERROR(history::WriteExport(exporter, "/tmp/out"));
//
// What the folder holds (docs/api.md, ExportMetaDataset):
// - A study is *completed* once it holds at least `min_completed_trials`
//   COMPLETED trials. Only completed studies are exported, one task each (the
//   task id is the study id).
// - evaluations.csv: per study, its COMPLETED, FAILED and INFEASIBLE trials by
//   increasing id (ACTIVE, STALE and ABANDONED trials have no outcome and are
//   left out). A FAILED or INFEASIBLE trial keeps its row with y = the
//   study's worst COMPLETED value (in the goal's direction), so a model learns
//   that the region is bad; the auxiliary columns `state` (COMPLETED, FAILED,
//   INFEASIBLE) and `trial` (the trial id) tell the rows apart. A
//   configuration that occurs twice in a study keeps one row: its first
//   COMPLETED trial, else its first trial.
// - tasks.csv: `task,name,split,n_rows,n_features,algorithm,completed_trials,
//   failed_trials,infeasible_trials`; split is `valid` for round(n / 10) of
//   the n tasks (at least 1 when n >= 3, none below), those with the smallest
//   FNV-1a-64 hash of their id, and `train` for the others: deterministic for
//   a given set of studies.
// - metafeatures.csv (only when a study has spec.dataset_features): the union
//   of their names, sorted; names that cannot be a CSV header cell (a comma, a
//   line break, or "task") are left out.
// - README.md: where the data came from and these rules.
#ifndef METAOPT_CORE_HISTORY_HISTORY_EXPORT_H_
#define METAOPT_CORE_HISTORY_HISTORY_EXPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/history/export_folder.h"
#include "core/storage/storage.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::history {

inline constexpr int kDefaultMinCompletedTrials = 10;
inline constexpr int kMaxMinCompletedTrials = 1000000;
inline constexpr int64_t kDefaultChunkBytes = int64_t{1} << 20;

struct HistoryOptions {
  // A study with at least this many COMPLETED trials is completed (>= 1).
  int min_completed_trials = kDefaultMinCompletedTrials;
};

// A request's min_completed_trials: 0 means kDefaultMinCompletedTrials;
// INVALID_ARGUMENT naming `field` outside 0..kMaxMinCompletedTrials.
absl::StatusOr<int> ResolveMinCompletedTrials(int64_t value,
                                              absl::string_view field);

// The folder name of `owner`'s studies over (space, objective): "history-"
// and the first 12 hex digits of a SHA-256 over the owner, the space and the
// objective. Learned models are named after it ("<name>-deeppipe").
std::string HistoryDatasetName(absl::string_view owner,
                               const v1::SearchSpace& space,
                               const v1::Objective& objective);

// The completed studies of one owner over one space and objective.
struct HistoryGroup {
  std::string name;  // HistoryDatasetName
  v1::SearchSpace space;
  v1::Objective objective;
  // Increasing (the storage order).
  std::vector<std::string> study_ids;
};

// Reads every study of `owner` (pages of storage.ListStudies, the trials of
// each) and returns the groups of completed studies, by name. Damaged studies
// (a record that does not parse) are skipped with a warning, and so are
// groups whose space cannot be written in the format (a name or category with
// a comma or line break). Other storage errors are returned.
absl::StatusOr<std::vector<HistoryGroup>> ScanHistory(
    storage::Storage& storage, absl::string_view owner,
    const HistoryOptions& options);

// The group of `owner`'s study `study_id` (study_ids may be empty when no
// study over its space is completed). NOT_FOUND if the study does not exist;
// FAILED_PRECONDITION if its space cannot be written in the format.
absl::StatusOr<HistoryGroup> ScanHistoryOf(storage::Storage& storage,
                                           absl::string_view owner,
                                           absl::string_view study_id,
                                           const HistoryOptions& options);

// Renders groups as folders, chunk by chunk, in the order space.json,
// evaluations.csv, tasks.csv, metafeatures.csv, README.md. Each study is read
// from storage when its rows are due (it is skipped if it was deleted, changed
// space or is no longer completed meanwhile), so memory stays at one study's
// trials plus one chunk. Pull-based (Next), so that a blocking writer and an
// asynchronous one drive it alike. Thread-compatible.
class HistoryExporter {
 public:
  // `storage` must outlive the exporter. `now` is recorded in README.md.
  HistoryExporter(storage::Storage* storage, std::string owner,
                  std::vector<HistoryGroup> groups, HistoryOptions options,
                  absl::Time now = absl::Now(),
                  int64_t chunk_bytes = kDefaultChunkBytes);

  // The next chunk (at most chunk_bytes of data), or nullopt after the last.
  // Storage errors are returned (the export is then incomplete).
  absl::StatusOr<std::optional<FileChunk>> Next();

  // Tasks written into the current (or last) folder so far.
  int64_t tasks_written() const {
    return static_cast<int64_t>(written_.size());
  }

 private:
  enum class File { kSpace, kEvaluations, kTasks, kMetafeatures, kReadme };
  struct WrittenTask {
    std::string id;
    std::string algorithm;
    std::map<std::string, double> features;
    int64_t completed = 0;
    int64_t failed = 0;
    int64_t infeasible = 0;
    int64_t duplicates = 0;
  };

  static const char* FileName(File file);
  // Appends more of the current file to buffer_; sets file_done_ when the
  // file has no more content.
  absl::Status Produce();
  // Appends the rows of study `study_id` (if it is still completed and over
  // the group's space).
  absl::Status AppendStudy(const std::string& study_id);
  std::string TasksCsv() const;
  // Empty when no task has features.
  std::string MetafeaturesCsv() const;
  std::string Readme() const;
  // Moves to the next file (or group).
  void Advance();

  storage::Storage* const storage_;
  const std::string owner_;
  const std::vector<HistoryGroup> groups_;
  const HistoryOptions options_;
  const absl::Time now_;
  const int64_t chunk_bytes_;

  size_t group_ = 0;
  File file_ = File::kSpace;
  size_t next_study_ = 0;
  std::string buffer_;
  bool file_done_ = false;
  int64_t offset_ = 0;
  std::vector<WrittenTask> written_;
  std::vector<std::string> skipped_;
  int64_t rows_ = 0;
};

// Drives `exporter` to the end, writing each folder under `dir` (created if
// needed): a folder is written into `dir/.<name>.partial` and renamed to
// `dir/<name>` once complete (replacing an older export of the same name).
// Returns the folder names written.
absl::StatusOr<std::vector<std::string>> WriteExport(HistoryExporter& exporter,
                                                     const std::string& dir);

}  // namespace metaopt::history

#endif  // METAOPT_CORE_HISTORY_HISTORY_EXPORT_H_
