// Learning from the service's own history (metaopt-server
// --learn-from-history, docs/models.md "Learned from history"): when enough
// studies of one owner over one search space have completed since the last
// model, a background thread exports them as a meta-dataset (history_export.h),
// trains a warm-start portfolio and a DeepPipe model on it with metaopt-train's
// training functions, publishes both into the registry (WriteModelVersion:
// staged, then renamed, MANIFEST last) and polls the registry so that they are
// served at once.
//
// The models are named "<HistoryDatasetName>-portfolio" and
// "<HistoryDatasetName>-deeppipe"; their provenance carries the owner and
// from_history, and int_options["history_studies"] the number of studies they
// were trained on. "Since the last model" is measured against that number in
// the served DeepPipe version, so it survives restarts.
#ifndef METAOPT_CORE_HISTORY_HISTORY_LEARNER_H_
#define METAOPT_CORE_HISTORY_HISTORY_LEARNER_H_

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/common/mutex.h"
#include "core/history/history_export.h"
#include "core/meta_training/deeppipe_train.h"
#include "core/registry/model_manager.h"
#include "core/storage/storage.h"

namespace metaopt::history {

// The int_options key of a learned model: how many completed studies it was
// trained on.
inline constexpr char kHistoryStudiesOption[] = "history_studies";

struct LearnerOptions {
  // The registry the models are published into (the server's --models).
  std::string registry_dir;
  // A new model is trained once a group holds this many more completed
  // studies than the last model was trained on (>= 1).
  int min_studies = 10;
  HistoryOptions history;
  // Warm-start portfolio size of both models.
  int portfolio_size = 16;
  // DeepPipe meta-training (threads 1 by default: the learner must not crowd
  // out the RPCs). epochs 100, lr 1e-3: adaboost's recipe (docs/models.md).
  train::DeepPipeTrainOptions deeppipe = [] {
    train::DeepPipeTrainOptions options;
    options.epochs = 100;
    options.lr = 1e-3;
    return options;
  }();
  uint64_t seed = 0;
  // Scans of one owner's studies are at least this far apart.
  absl::Duration scan_interval = absl::Seconds(10);
  // Run the background thread at the lowest CPU priority (nice 19).
  bool low_priority = true;
  // Where the exported meta-dataset is staged while a model trains (a
  // metaopt-learn-XXXXXX directory, removed afterwards); empty: the system's
  // temporary directory.
  std::string work_dir;
  // Create removes what a crashed learner left (RemoveStaleLearnerFiles):
  // registry staging directories at least this old.
  absl::Duration stale_publish_age = absl::Hours(1);
};

// What a learner that crashed mid-training can leave behind, removed by
// HistoryLearner::Create before its thread starts (best effort: unreadable
// directories are skipped):
// - its staging directories, metaopt-learn-<pid>-XXXXXX under `work_dir` (the
//   system's temporary directory when empty), whose process no longer runs
//   (a live learner's, also another server's on the same machine, is kept);
// - staging directories of interrupted publishes, <registry_dir>/<name>/
//   .tmp-XXXXXX, last modified at least `publish_age` before `now` (a publish
//   in progress, by any writer of the registry, takes seconds).
// Returns the paths removed.
std::vector<std::string> RemoveStaleLearnerFiles(
    const std::string& work_dir, const std::string& registry_dir,
    absl::Time now, absl::Duration publish_age);

// Whether a group of `completed_studies` warrants a new model when the last
// one was trained on `trained_on` studies (0 without one).
bool ShouldLearn(int64_t completed_studies, int64_t trained_on,
                 int min_studies);

// Counters for logs and metrics.
struct LearnerStats {
  int64_t scans = 0;
  int64_t trainings_started = 0;
  int64_t trainings_succeeded = 0;
  int64_t trainings_failed = 0;
  // Model versions published (two per successful training).
  int64_t models_published = 0;
  bool training = false;
  double last_training_seconds = 0;
  // "name@version" of the last DeepPipe model published.
  std::string last_model;
  std::string last_error;
};

// Thread-safe. OnObserved is cheap (a set lookup under a mutex) and never does
// I/O; scans and training run on the learner's own thread, so they never block
// an RPC. Lock order: mu_ only (never held across I/O or training).
class HistoryLearner {
 public:
  // `storage` and `models` must outlive the learner; `models` serves
  // options.registry_dir. Starts the background thread. INVALID_ARGUMENT for
  // bad options.
  static absl::StatusOr<std::unique_ptr<HistoryLearner>> Create(
      storage::Storage* storage, registry::ModelManager* models,
      LearnerOptions options);
  // Stops the thread; a training in progress stops after its current epoch
  // and publishes nothing.
  ~HistoryLearner();
  HistoryLearner(const HistoryLearner&) = delete;
  HistoryLearner& operator=(const HistoryLearner&) = delete;

  // After an Observe was stored: study `key` now holds `completed_trials`
  // COMPLETED trials. Once a study is completed and not yet counted, its
  // owner's studies are scanned (soon, on the learner thread).
  void OnObserved(const storage::StudyKey& key, int64_t completed_trials)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Scans `owner`'s studies now, on the calling thread, and trains and
  // publishes where ShouldLearn says so. Returns the first training error.
  // For tests and tools; the background thread calls the same.
  absl::Status ScanAndLearn(const std::string& owner) ABSL_LOCKS_EXCLUDED(mu_);

  LearnerStats Stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  HistoryLearner(storage::Storage* storage, registry::ModelManager* models,
                 LearnerOptions options);
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // Exports `group`, trains both models and publishes them.
  absl::Status Learn(const std::string& owner, const HistoryGroup& group)
      ABSL_LOCKS_EXCLUDED(mu_);
  bool Stopping() const ABSL_LOCKS_EXCLUDED(mu_);

  storage::Storage* const storage_;
  registry::ModelManager* const models_;
  const LearnerOptions options_;

  mutable Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // Owners whose studies are to be scanned.
  std::set<std::string> pending_ ABSL_GUARDED_BY(mu_);
  // Studies counted as completed by a scan.
  absl::flat_hash_set<storage::StudyKey> counted_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::Time> last_scan_ ABSL_GUARDED_BY(mu_);
  LearnerStats stats_ ABSL_GUARDED_BY(mu_);
  // Serializes scans (the thread's and ScanAndLearn's).
  Mutex scan_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::thread thread_;
};

}  // namespace metaopt::history

#endif  // METAOPT_CORE_HISTORY_HISTORY_LEARNER_H_
