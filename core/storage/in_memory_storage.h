// Storage in process memory: std::maps behind one mutex. For unit tests and
// benchmarks.
#ifndef METAOPT_CORE_STORAGE_IN_MEMORY_STORAGE_H_
#define METAOPT_CORE_STORAGE_IN_MEMORY_STORAGE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/storage/storage.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::storage {

// Storage with the same contracts as SqliteStorage except durability:
// everything is lost when the object is destroyed. Values are copied in and
// out. Thread-safe: every call holds `mu_` for its whole duration, so each call
// is atomic.
class InMemoryStorage : public Storage {
 public:
  InMemoryStorage() = default;
  InMemoryStorage(const InMemoryStorage&) = delete;
  InMemoryStorage& operator=(const InMemoryStorage&) = delete;

  absl::Status CreateStudy(const v1::Study& study) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1::Study> GetStudy(std::string_view study_id) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<v1::Study>> ListStudies(
      std::string_view after_study_id, int limit) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DeleteStudy(std::string_view study_id) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status PutTrials(std::string_view study_id,
                         const std::vector<v1::Trial>& trials) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<v1::Trial>> LoadTrials(
      std::string_view study_id) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status PutPolicyState(std::string_view study_id,
                              std::string_view blob) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::optional<std::string>> GetPolicyState(
      std::string_view study_id) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct StudyRecord {
    v1::Study study;  // The stored part only (see StoredStudy).
    std::map<int64_t, v1::Trial> trials;  // By trial id.
    std::optional<std::string> policy_state;
  };
  using StudyMap = std::map<std::string, StudyRecord, std::less<>>;

  // The study's record, or NOT_FOUND.
  absl::StatusOr<StudyRecord*> Find(std::string_view study_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  StudyMap studies_
      ABSL_GUARDED_BY(mu_);  // By study_id; std::string order is byte order.
};

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_IN_MEMORY_STORAGE_H_
