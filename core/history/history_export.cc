#include "core/history/history_export.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/meta_dataset/meta_dataset_writer.h"
#include "core/meta_dataset/space_json.h"
#include "core/objective/objective.h"
#include "core/registry/sha256.h"
#include "core/space/search_space.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"

namespace metaopt::history {
namespace {

constexpr int kListPage = 100;

bool SameSpace(const v1::StudySpec& spec, const HistoryGroup& group) {
  using google::protobuf::util::MessageDifferencer;
  return MessageDifferencer::Equals(spec.search_space(), group.space) &&
         MessageDifferencer::Equals(spec.objective(), group.objective);
}

int64_t CountCompleted(const std::vector<v1::Trial>& trials) {
  return std::count_if(trials.begin(), trials.end(), [](const v1::Trial& t) {
    return t.state() == v1::TRIAL_STATE_COMPLETED && t.has_value();
  });
}

// OK if the group's space.json can be written and read back (no comma or line
// break in a name, unique column names).
absl::Status CheckWritable(const HistoryGroup& group) {
  absl::Status parsed =
      meta::ParseSpaceJson(
          meta::RenderSpaceJson(group.name, group.space, group.objective))
          .status();
  if (parsed.ok()) return parsed;
  return absl::FailedPreconditionError(
      absl::StrCat("the search space cannot be written as a meta-dataset: ",
                   parsed.message()));
}

bool UsableFeatureName(const std::string& name) {
  return !name.empty() && name != "task" &&
         name.find_first_of(",\n\r") == std::string::npos;
}

std::string StateName(v1::TrialState state) {
  return std::string(
      absl::StripPrefix(v1::TrialState_Name(state), "TRIAL_STATE_"));
}

}  // namespace

absl::StatusOr<int> ResolveMinCompletedTrials(int64_t value,
                                              absl::string_view field) {
  if (value == 0) return kDefaultMinCompletedTrials;
  if (value < 0 || value > kMaxMinCompletedTrials) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", value, " is not in 0..", kMaxMinCompletedTrials,
        " (0 means ", kDefaultMinCompletedTrials, ")"));
  }
  return static_cast<int>(value);
}

std::string HistoryDatasetName(absl::string_view owner,
                               const v1::SearchSpace& space,
                               const v1::Objective& objective) {
  registry::Sha256 hash;
  // Length-prefixed parts, so that no two triples give the same message.
  for (const std::string& part : {std::string(owner), space.SerializeAsString(),
                                  objective.SerializeAsString()}) {
    hash.Update(absl::StrCat(part.size(), ":"));
    hash.Update(part);
  }
  return absl::StrCat("history-", hash.HexDigest().substr(0, 12));
}

absl::StatusOr<std::vector<HistoryGroup>> ScanHistory(
    storage::Storage& storage, absl::string_view owner,
    const HistoryOptions& options) {
  std::map<std::string, HistoryGroup> groups;
  const std::string owner_id(owner);
  std::string after;
  for (;;) {
    METAOPT_ASSIGN_OR_RETURN(std::vector<v1::Study> page,
                             storage.ListStudies(owner_id, after, kListPage));
    for (const v1::Study& study : page) {
      if (!study.has_spec()) continue;  // damaged
      absl::StatusOr<std::vector<v1::Trial>> trials =
          storage.LoadTrials({owner_id, study.study_id()});
      if (absl::IsNotFound(trials.status())) continue;  // deleted meanwhile
      if (absl::IsDataLoss(trials.status())) {
        // A damaged study (metaoptctl damaged-studies) hides no other.
        LogWarning(
            absl::StrCat("history: skipping ", trials.status().message()));
        continue;
      }
      METAOPT_RETURN_IF_ERROR(trials.status());
      if (CountCompleted(*trials) < options.min_completed_trials) continue;
      const std::string name = HistoryDatasetName(
          owner, study.spec().search_space(), study.spec().objective());
      HistoryGroup& group = groups[name];
      if (group.name.empty()) {
        group.name = name;
        group.space = study.spec().search_space();
        group.objective = study.spec().objective();
      }
      group.study_ids.push_back(study.study_id());
    }
    if (static_cast<int>(page.size()) < kListPage) break;
    after = page.back().study_id();
  }
  std::vector<HistoryGroup> out;
  for (auto& [name, group] : groups) {
    if (absl::Status writable = CheckWritable(group); !writable.ok()) {
      LogWarning(
          absl::StrCat("history ", name, " (", group.study_ids.size(),
                       " studies) is not exported: ", writable.message()));
      continue;
    }
    out.push_back(std::move(group));
  }
  return out;
}

absl::StatusOr<HistoryGroup> ScanHistoryOf(storage::Storage& storage,
                                           absl::string_view owner,
                                           absl::string_view study_id,
                                           const HistoryOptions& options) {
  absl::StatusOr<v1::Study> study =
      storage.GetStudy({std::string(owner), std::string(study_id)});
  if (absl::IsNotFound(study.status())) {
    return absl::NotFoundError(
        absl::StrCat("space_of: study ", Quote(study_id), " does not exist"));
  }
  METAOPT_RETURN_IF_ERROR(study.status());
  HistoryGroup group;
  group.space = study->spec().search_space();
  group.objective = study->spec().objective();
  group.name = HistoryDatasetName(owner, group.space, group.objective);
  METAOPT_RETURN_IF_ERROR(CheckWritable(group));
  METAOPT_ASSIGN_OR_RETURN(std::vector<HistoryGroup> all,
                           ScanHistory(storage, owner, options));
  for (HistoryGroup& other : all) {
    if (other.name == group.name) group.study_ids = std::move(other.study_ids);
  }
  return group;
}

// ---------------------------------------------------------------------------
// HistoryExporter

HistoryExporter::HistoryExporter(storage::Storage* storage, std::string owner,
                                 std::vector<HistoryGroup> groups,
                                 HistoryOptions options, absl::Time now,
                                 int64_t chunk_bytes)
    : storage_(storage),
      owner_(std::move(owner)),
      groups_(std::move(groups)),
      options_(options),
      now_(now),
      chunk_bytes_(std::max<int64_t>(chunk_bytes, 1)) {}

const char* HistoryExporter::FileName(File file) {
  return kExportFiles[static_cast<int>(file)];
}

absl::StatusOr<std::optional<FileChunk>> HistoryExporter::Next() {
  for (;;) {
    if (group_ >= groups_.size()) return std::nullopt;
    while (!file_done_ && static_cast<int64_t>(buffer_.size()) < chunk_bytes_) {
      METAOPT_RETURN_IF_ERROR(Produce());
    }
    if (buffer_.empty() && file_done_ && offset_ == 0) {
      Advance();  // a file without content (metafeatures.csv) is left out
      continue;
    }
    FileChunk chunk;
    chunk.dataset = groups_[group_].name;
    chunk.file = FileName(file_);
    chunk.offset = offset_;
    const size_t take =
        std::min(buffer_.size(), static_cast<size_t>(chunk_bytes_));
    chunk.data = buffer_.substr(0, take);
    buffer_.erase(0, take);
    offset_ += static_cast<int64_t>(take);
    chunk.last_chunk = file_done_ && buffer_.empty();
    if (chunk.last_chunk) Advance();
    return chunk;
  }
}

void HistoryExporter::Advance() {
  buffer_.clear();
  file_done_ = false;
  offset_ = 0;
  if (file_ == File::kReadme) {
    ++group_;
    file_ = File::kSpace;
    next_study_ = 0;
    written_.clear();
    skipped_.clear();
    rows_ = 0;
  } else {
    file_ = static_cast<File>(static_cast<int>(file_) + 1);
  }
}

absl::Status HistoryExporter::Produce() {
  const HistoryGroup& group = groups_[group_];
  switch (file_) {
    case File::kSpace:
      buffer_ = meta::RenderSpaceJson(group.name, group.space, group.objective);
      file_done_ = true;
      return absl::OkStatus();
    case File::kEvaluations:
      if (offset_ == 0 && buffer_.empty() && next_study_ == 0) {
        std::vector<std::string> header = meta::EvaluationColumns(group.space);
        header.push_back("state");
        header.push_back("trial");
        buffer_ = absl::StrCat(absl::StrJoin(header, ","), "\n");
      }
      if (next_study_ >= group.study_ids.size()) {
        file_done_ = true;
        return absl::OkStatus();
      }
      return AppendStudy(group.study_ids[next_study_++]);
    case File::kTasks:
      buffer_ = TasksCsv();
      file_done_ = true;
      return absl::OkStatus();
    case File::kMetafeatures:
      buffer_ = MetafeaturesCsv();
      file_done_ = true;
      return absl::OkStatus();
    case File::kReadme:
      buffer_ = Readme();
      file_done_ = true;
      return absl::OkStatus();
  }
  return absl::InternalError("unknown export file");
}

absl::Status HistoryExporter::AppendStudy(const std::string& study_id) {
  const HistoryGroup& group = groups_[group_];
  const storage::StudyKey key{owner_, study_id};
  absl::StatusOr<v1::Study> study = storage_->GetStudy(key);
  absl::StatusOr<std::vector<v1::Trial>> trials =
      study.ok() ? storage_->LoadTrials(key)
                 : absl::StatusOr<std::vector<v1::Trial>>(study.status());
  if (absl::IsNotFound(trials.status()) || absl::IsDataLoss(trials.status())) {
    skipped_.push_back(study_id);
    return absl::OkStatus();
  }
  METAOPT_RETURN_IF_ERROR(trials.status());
  if (!SameSpace(study->spec(), group) ||
      CountCompleted(*trials) < options_.min_completed_trials) {
    skipped_.push_back(study_id);
    return absl::OkStatus();
  }
  const v1::Goal goal = group.objective.goal();
  std::optional<double> worst;
  for (const v1::Trial& trial : *trials) {
    if (trial.state() != v1::TRIAL_STATE_COMPLETED || !trial.has_value())
      continue;
    if (!worst.has_value() || objective::Better(*worst, trial.value(), goal)) {
      worst = trial.value();
    }
  }
  // Rows in trial order; one per configuration (its first COMPLETED trial,
  // else its first trial).
  std::vector<const v1::Trial*> rows;
  absl::flat_hash_map<std::string, size_t> row_of;
  WrittenTask task;
  task.id = study_id;
  task.algorithm = std::string(absl::StripPrefix(
      v1::AlgorithmKind_Name(study->spec().algorithm().kind()),
      "ALGORITHM_KIND_"));
  for (const v1::Trial& trial : *trials) {
    const bool completed =
        trial.state() == v1::TRIAL_STATE_COMPLETED && trial.has_value();
    const bool failed = trial.state() == v1::TRIAL_STATE_FAILED ||
                        trial.state() == v1::TRIAL_STATE_INFEASIBLE;
    if (!completed && !failed) continue;
    if (completed) ++task.completed;
    if (trial.state() == v1::TRIAL_STATE_FAILED) ++task.failed;
    if (trial.state() == v1::TRIAL_STATE_INFEASIBLE) ++task.infeasible;
    auto [it, inserted] = row_of.emplace(
        space::ConfigurationKey(trial.configuration()), rows.size());
    if (inserted) {
      rows.push_back(&trial);
      continue;
    }
    ++task.duplicates;
    const v1::Trial*& kept = rows[it->second];
    if (completed && kept->state() != v1::TRIAL_STATE_COMPLETED) kept = &trial;
  }
  for (const v1::Trial* trial : rows) {
    const bool completed = trial->state() == v1::TRIAL_STATE_COMPLETED;
    const std::string extra[] = {StateName(trial->state()),
                                 absl::StrCat(trial->id())};
    METAOPT_RETURN_IF_ERROR(meta::AppendEvaluationRow(
        group.space, study_id, trial->configuration(),
        completed ? trial->value() : *worst, extra,
        absl::StrCat("study ", Quote(study_id), " trial ", trial->id()),
        &buffer_));
    ++rows_;
  }
  for (const auto& [name, value] : study->spec().dataset_features()) {
    if (UsableFeatureName(name)) task.features[name] = value;
  }
  written_.push_back(std::move(task));
  return absl::OkStatus();
}

std::string HistoryExporter::TasksCsv() const {
  const size_t n = written_.size();
  size_t n_valid = 0;
  if (n >= 3) n_valid = std::max<size_t>(1, (n + 5) / 10);
  std::vector<std::pair<uint64_t, std::string>> by_hash;
  for (const WrittenTask& task : written_) {
    by_hash.emplace_back(Fnv1a64(task.id), task.id);
  }
  std::sort(by_hash.begin(), by_hash.end());
  std::set<std::string> valid;
  for (size_t i = 0; i < n_valid; ++i) valid.insert(by_hash[i].second);
  std::string out =
      "task,name,split,n_rows,n_features,algorithm,completed_trials,"
      "failed_trials,infeasible_trials\n";
  for (const WrittenTask& task : written_) {
    absl::StrAppend(&out, task.id, ",,",
                    valid.count(task.id) ? "valid" : "train", ",,,",
                    task.algorithm, ",", task.completed, ",", task.failed, ",",
                    task.infeasible, "\n");
  }
  return out;
}

std::string HistoryExporter::MetafeaturesCsv() const {
  std::set<std::string> names;
  for (const WrittenTask& task : written_) {
    for (const auto& [name, value] : task.features) names.insert(name);
  }
  if (names.empty()) return "";
  std::string out = absl::StrCat("task,", absl::StrJoin(names, ","), "\n");
  for (const WrittenTask& task : written_) {
    if (task.features.empty()) continue;
    std::vector<std::string> cells = {task.id};
    for (const std::string& name : names) {
      const auto it = task.features.find(name);
      cells.push_back(it == task.features.end()
                          ? std::string()
                          : meta::FormatNumber(it->second));
    }
    absl::StrAppend(&out, absl::StrJoin(cells, ","), "\n");
  }
  return out;
}

std::string HistoryExporter::Readme() const {
  const HistoryGroup& group = groups_[group_];
  int64_t completed = 0, failed = 0, infeasible = 0, duplicates = 0;
  for (const WrittenTask& task : written_) {
    completed += task.completed;
    failed += task.failed;
    infeasible += task.infeasible;
    duplicates += task.duplicates;
  }
  std::string out = absl::StrCat(
      "# ", group.name, "\n\n", "Exported by metaopt (ExportMetaDataset) at ",
      google::protobuf::util::TimeUtil::ToString(
          google::protobuf::util::TimeUtil::NanosecondsToTimestamp(
              absl::ToUnixNanos(now_))),
      " from the studies of ",
      owner_.empty() ? std::string("the server's shared namespace (no tokens)")
                     : absl::StrCat("owner ", Quote(owner_)),
      " over one search space and objective (`", group.objective.name(), "`, ",
      group.objective.goal() == v1::GOAL_MAXIMIZE ? "maximize" : "minimize",
      ").\n\n", "- Tasks: ", written_.size(), " studies, each with at least ",
      options_.min_completed_trials,
      " COMPLETED trials (a task id is a study id).\n",
      "- Rows of evaluations.csv: ", rows_, " (", completed, " COMPLETED, ",
      failed, " FAILED and ", infeasible, " INFEASIBLE trials; ", duplicates,
      " repeated configurations kept once).\n",
      "- `y` is the trial's objective value. A FAILED or INFEASIBLE trial "
      "has y = its study's worst COMPLETED value (in the goal's direction).\n",
      "- Auxiliary columns of evaluations.csv: `state` (COMPLETED, FAILED or "
      "INFEASIBLE) and `trial` (the trial id). Rows follow trial ids; a "
      "configuration tried twice keeps its first COMPLETED trial (else its "
      "first trial).\n",
      "- tasks.csv: `split` is `valid` for about 10 % of the tasks (those "
      "with the smallest FNV-1a-64 hash of their id; none below 3 tasks) and "
      "`train` for the others; `algorithm` is the study's algorithm kind; "
      "the trial counts are per state.\n",
      "- metafeatures.csv (when present): the studies' "
      "`spec.dataset_features`.\n");
  if (!skipped_.empty()) {
    absl::StrAppend(&out,
                    "- Skipped (deleted, changed or no longer completed "
                    "while exporting): ",
                    absl::StrJoin(skipped_, " "), "\n");
  }
  return out;
}

// ---------------------------------------------------------------------------
// Writing folders

absl::StatusOr<std::vector<std::string>> WriteExport(HistoryExporter& exporter,
                                                     const std::string& dir) {
  ExportFolderWriter writer(dir);
  for (;;) {
    METAOPT_ASSIGN_OR_RETURN(std::optional<FileChunk> chunk, exporter.Next());
    if (!chunk.has_value()) break;
    METAOPT_RETURN_IF_ERROR(writer.Write(*chunk));
  }
  return writer.Finish();
}

}  // namespace metaopt::history
