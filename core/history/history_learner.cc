#include "core/history/history_learner.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"
#include "core/meta_training/portfolio_train.h"
#include "core/meta_training/train_common.h"

namespace metaopt::history {
namespace {

// Forwards each line written to it to LogInfo, prefixed.
class LogLineBuffer final : public std::streambuf {
 public:
  explicit LogLineBuffer(std::string prefix) : prefix_(std::move(prefix)) {}
  ~LogLineBuffer() override {
    if (!line_.empty()) LogInfo(absl::StrCat(prefix_, line_));
  }

 protected:
  int_type overflow(int_type c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    if (c == '\n') {
      LogInfo(absl::StrCat(prefix_, line_));
      line_.clear();
    } else {
      line_.push_back(static_cast<char>(c));
    }
    return c;
  }

 private:
  const std::string prefix_;
  std::string line_;
};

constexpr char kWorkDirPrefix[] = "metaopt-learn-";
constexpr char kPublishDirPrefix[] = ".tmp-";

// `parent`, or the system's temporary directory when empty.
absl::StatusOr<std::filesystem::path> WorkDirParent(const std::string& parent) {
  if (!parent.empty()) return std::filesystem::path(parent);
  std::error_code error;
  std::filesystem::path base = std::filesystem::temp_directory_path(error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("no temporary directory: ", error.message()));
  }
  return base;
}

// A fresh directory metaopt-learn-<pid>-XXXXXX under WorkDirParent(parent);
// the pid tells a later start whether its owner still runs.
absl::StatusOr<std::string> MakeWorkDir(const std::string& parent) {
  METAOPT_ASSIGN_OR_RETURN(const std::filesystem::path base,
                           WorkDirParent(parent));
  std::string path =
      (base / absl::StrCat(kWorkDirPrefix, getpid(), "-XXXXXX")).string();
  if (mkdtemp(path.data()) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("mkdtemp ", path));
  }
  return path;
}

// The pid in a staging directory's name metaopt-learn-<pid>-XXXXXX, if any.
std::optional<pid_t> WorkDirOwner(const std::string& name) {
  if (!absl::StartsWith(name, kWorkDirPrefix)) return std::nullopt;
  const std::string rest = name.substr(sizeof(kWorkDirPrefix) - 1);
  const size_t dash = rest.find('-');
  int64_t pid = 0;
  if (dash == std::string::npos ||
      !absl::SimpleAtoi(rest.substr(0, dash), &pid) || pid <= 0) {
    return std::nullopt;
  }
  return static_cast<pid_t>(pid);
}

bool ProcessRuns(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

int64_t TrainedOn(const registry::LoadedModel* model) {
  if (model == nullptr) return 0;
  const auto& options = model->artifact.int_options();
  const auto it = options.find(kHistoryStudiesOption);
  return it == options.end() ? 0 : it->second;
}

}  // namespace

bool ShouldLearn(int64_t completed_studies, int64_t trained_on,
                 int min_studies) {
  return completed_studies - trained_on >= min_studies;
}

std::vector<std::string> RemoveStaleLearnerFiles(
    const std::string& work_dir, const std::string& registry_dir,
    absl::Time now, absl::Duration publish_age) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  auto remove = [&](const fs::path& path) {
    std::error_code error;
    if (fs::remove_all(path, error) > 0 && !error) {
      removed.push_back(path.string());
    }
  };
  std::error_code error;
  absl::StatusOr<fs::path> parent = WorkDirParent(work_dir);
  if (parent.ok()) {
    for (fs::directory_iterator it(*parent, error);
         !error && it != fs::directory_iterator(); it.increment(error)) {
      const std::optional<pid_t> owner =
          WorkDirOwner(it->path().filename().string());
      std::error_code is_dir_error;
      if (owner.has_value() && it->is_directory(is_dir_error) &&
          !ProcessRuns(*owner)) {
        remove(it->path());
      }
    }
  }
  error.clear();
  const absl::Time cutoff = now - publish_age;
  for (fs::directory_iterator model(registry_dir, error);
       !error && model != fs::directory_iterator(); model.increment(error)) {
    std::error_code inner;
    if (!model->is_directory(inner)) continue;
    for (fs::directory_iterator it(model->path(), inner);
         !inner && it != fs::directory_iterator(); it.increment(inner)) {
      if (!absl::StartsWith(it->path().filename().string(),
                            kPublishDirPrefix)) {
        continue;
      }
      struct stat st;
      if (stat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
      if (absl::FromUnixSeconds(st.st_mtim.tv_sec) <= cutoff) {
        remove(it->path());
      }
    }
  }
  return removed;
}

absl::StatusOr<std::unique_ptr<HistoryLearner>> HistoryLearner::Create(
    storage::Storage* storage, registry::ModelManager* models,
    LearnerOptions options) {
  if (storage == nullptr || models == nullptr) {
    return absl::InvalidArgumentError(
        "--learn-from-history needs storage and a model registry (--models)");
  }
  if (options.registry_dir.empty()) {
    return absl::InvalidArgumentError(
        "--learn-from-history needs a model registry directory (--models)");
  }
  if (options.min_studies < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--learn-min-studies: ", options.min_studies, " is not >= 1"));
  }
  if (options.history.min_completed_trials < 3 ||
      options.history.min_completed_trials > kMaxMinCompletedTrials) {
    // DeepPipe's validation needs 3 evaluations per task; training needs 2.
    return absl::InvalidArgumentError(absl::StrCat(
        "--learn-min-trials: ", options.history.min_completed_trials,
        " is not in 3..", kMaxMinCompletedTrials));
  }
  if (options.portfolio_size < 1 || options.deeppipe.epochs < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learner: portfolio size ", options.portfolio_size,
        " and DeepPipe epochs ", options.deeppipe.epochs, " must be >= 1"));
  }
  if (options.stale_publish_age < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "learner: stale_publish_age ",
        absl::FormatDuration(options.stale_publish_age), " must be >= 0"));
  }
  for (const std::string& path :
       RemoveStaleLearnerFiles(options.work_dir, options.registry_dir,
                               absl::Now(), options.stale_publish_age)) {
    LogInfo(absl::StrCat("learn-from-history: removed ", path,
                         ", left by an interrupted training or publish"));
  }
  std::unique_ptr<HistoryLearner> learner(
      new HistoryLearner(storage, models, std::move(options)));
  learner->thread_ = std::thread([raw = learner.get()] { raw->Loop(); });
  return learner;
}

HistoryLearner::HistoryLearner(storage::Storage* storage,
                               registry::ModelManager* models,
                               LearnerOptions options)
    : storage_(storage), models_(models), options_(std::move(options)) {}

HistoryLearner::~HistoryLearner() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool HistoryLearner::Stopping() const {
  MutexLock lock(&mu_);
  return stop_;
}

void HistoryLearner::OnObserved(const storage::StudyKey& key,
                                int64_t completed_trials) {
  if (completed_trials < options_.history.min_completed_trials) return;
  MutexLock lock(&mu_);
  if (counted_.contains(key)) return;
  pending_.insert(key.owner);
}

LearnerStats HistoryLearner::Stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void HistoryLearner::Loop() {
  if (options_.low_priority) {
    // Linux: the nice value of this thread only.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
  }
  for (;;) {
    std::optional<std::string> owner;
    {
      MutexLock lock(&mu_);
      // Wake for a pending owner or stop; an owner scanned recently waits for
      // its interval (the wait times out each second to look again).
      const absl::Condition ready(
          +[](HistoryLearner* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return self->stop_ || !self->pending_.empty();
          },
          this);
      mu_.AwaitWithTimeout(ready, absl::Seconds(1));
      if (stop_) return;
      const absl::Time now = absl::Now();
      for (const std::string& candidate : pending_) {
        const auto it = last_scan_.find(candidate);
        if (it == last_scan_.end() ||
            now - it->second >= options_.scan_interval) {
          owner = candidate;
          break;
        }
      }
      if (!owner.has_value()) {
        // Nothing due yet: sleep a little without holding the lock.
        mu_.AwaitWithTimeout(
            absl::Condition(
                +[](HistoryLearner* self)
                     ABSL_NO_THREAD_SAFETY_ANALYSIS { return self->stop_; },
                this),
            absl::Milliseconds(200));
        continue;
      }
      pending_.erase(*owner);
      last_scan_[*owner] = now;
    }
    const absl::Status status = ScanAndLearn(*owner);
    if (!status.ok()) {
      LogError(absl::StrCat("learning from history of ",
                            owner->empty()
                                ? std::string("the shared namespace")
                                : absl::StrCat("owner ", Quote(*owner)),
                            ": ", status.message()));
    }
  }
}

absl::Status HistoryLearner::ScanAndLearn(const std::string& owner) {
  MutexLock scan_lock(&scan_mu_);
  METAOPT_ASSIGN_OR_RETURN(std::vector<HistoryGroup> groups,
                           ScanHistory(*storage_, owner, options_.history));
  {
    MutexLock lock(&mu_);
    ++stats_.scans;
    for (const HistoryGroup& group : groups) {
      for (const std::string& id : group.study_ids) {
        counted_.insert({owner, id});
      }
    }
  }
  absl::Status first_error;
  for (const HistoryGroup& group : groups) {
    if (Stopping()) break;
    const std::shared_ptr<const registry::LoadedModel> last =
        models_->Get(absl::StrCat(group.name, "-deeppipe"));
    const int64_t trained_on = TrainedOn(last.get());
    const int64_t studies = static_cast<int64_t>(group.study_ids.size());
    if (!ShouldLearn(studies, trained_on, options_.min_studies)) continue;
    LogInfo(absl::StrCat("learning from history: ", group.name, " (", studies,
                         " completed studies, ", trained_on,
                         " in the last model)"));
    absl::Status learned = Learn(owner, group);
    if (!learned.ok() && first_error.ok()) first_error = learned;
  }
  return first_error;
}

absl::Status HistoryLearner::Learn(const std::string& owner,
                                   const HistoryGroup& group) {
  const absl::Time start = absl::Now();
  {
    MutexLock lock(&mu_);
    ++stats_.trainings_started;
    stats_.training = true;
  }
  std::vector<std::string> published;
  std::string work_dir;
  absl::Status status = [&]() -> absl::Status {
    METAOPT_ASSIGN_OR_RETURN(work_dir, MakeWorkDir(options_.work_dir));
    HistoryExporter exporter(storage_, owner, {group}, options_.history);
    METAOPT_RETURN_IF_ERROR(WriteExport(exporter, work_dir).status());

    LogLineBuffer log_buffer(absl::StrCat("learning ", group.name, ": "));
    std::ostream log(&log_buffer);
    train::Progress progress(&log);
    train::CommonTrainOptions common;
    common.data_dir = (std::filesystem::path(work_dir) / group.name).string();
    common.registry_dir = options_.registry_dir;
    common.seed = options_.seed;
    common.portfolio_size = options_.portfolio_size;
    common.quiet = true;
    common.command_line =
        absl::StrCat("metaopt-server --learn-from-history (",
                     group.study_ids.size(), " studies of ",
                     owner.empty() ? std::string("the shared namespace")
                                   : absl::StrCat("owner ", Quote(owner)),
                     ")");
    // Trains one kind with `trainer`, marks the artifact as learned from
    // this owner's history and publishes it as "<group>-<kind>".
    const auto publish = [&](const char* kind,
                             const train::Trainer& trainer) -> absl::Status {
      common.kind = kind;
      common.name = absl::StrCat(group.name, "-", kind);
      METAOPT_ASSIGN_OR_RETURN(
          train::TrainResult result,
          train::RunTraining(
              common,
              [&](const train::CommonTrainOptions& options,
                  const train::TrainingSplits& data,
                  train::Progress& p) -> absl::StatusOr<v1::ModelArtifact> {
                METAOPT_ASSIGN_OR_RETURN(v1::ModelArtifact artifact,
                                         trainer(options, data, p));
                // Stopped mid-training: publish nothing.
                if (Stopping()) {
                  return absl::CancelledError("the server is stopping");
                }
                artifact.mutable_provenance()->set_owner(owner);
                artifact.mutable_provenance()->set_from_history(true);
                (*artifact.mutable_int_options())[kHistoryStudiesOption] =
                    static_cast<int64_t>(group.study_ids.size());
                return artifact;
              },
              progress));
      published.push_back(absl::StrCat(result.name, "@", result.version));
      return absl::OkStatus();
    };
    METAOPT_RETURN_IF_ERROR(publish(
        "portfolio", [](const train::CommonTrainOptions& options,
                        const train::TrainingSplits& data, train::Progress& p) {
          return train::TrainPortfolioArtifact(train::PortfolioOptions(),
                                               options, data, p);
        }));
    train::DeepPipeTrainOptions deeppipe = options_.deeppipe;
    deeppipe.should_stop = [this] { return Stopping(); };
    METAOPT_RETURN_IF_ERROR(publish(
        "deeppipe", [&](const train::CommonTrainOptions& options,
                        const train::TrainingSplits& data, train::Progress& p) {
          return train::TrainDeepPipeArtifact(deeppipe, options, data, p);
        }));
    // Serve them now rather than at the next poll.
    return models_->PollOnce();
  }();
  if (!work_dir.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(work_dir, ignored);
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  MutexLock lock(&mu_);
  stats_.training = false;
  stats_.models_published += static_cast<int64_t>(published.size());
  stats_.last_training_seconds = seconds;
  if (status.ok()) {
    ++stats_.trainings_succeeded;
    stats_.last_model = published.back();
    LogInfo(absl::StrFormat(
        "learned from history: %s and %s from %d studies "
        "in %.1f s",
        published[0], published[1], group.study_ids.size(), seconds));
  } else {
    ++stats_.trainings_failed;
    stats_.last_error = std::string(status.message());
    LogError(absl::StrFormat("learning %s from history failed after %.1f s: %s",
                             group.name, seconds, status.message()));
  }
  return status;
}

}  // namespace metaopt::history
