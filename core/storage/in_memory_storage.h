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
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/common/mutex.h"
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

  using Storage::CreateStudy;
  absl::Status CreateStudy(const v1::Study& study,
                           int64_t max_studies_of_owner) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<v1::Study> GetStudy(const StudyKey& key) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<v1::Study>> ListStudies(
      std::string_view owner, std::string_view after_study_id,
      int limit) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> CountStudies(std::string_view owner) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status DeleteStudy(const StudyKey& key) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status WriteStudy(const StudyKey& key, const StudyWrite& write) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<int64_t> GetStudyVersion(const StudyKey& key) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::vector<v1::Trial>> LoadTrials(
      const StudyKey& key) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<Changes> LoadChangesSince(const StudyKey& key,
                                           int64_t version) override
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::optional<std::string>> GetPolicyState(
      const StudyKey& key) override ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct StudyRecord {
    v1::Study study;  // The stored part only (see StoredStudy).
    // By trial id, without their intermediate values, which are kept apart
    // (by trial id, then step) as the databases keep them.
    std::map<int64_t, v1::Trial> trials;
    std::map<int64_t, std::map<int64_t, v1::IntermediateValue>> values;
    std::optional<std::string> policy_state;
    int64_t version = 0;
    // The study version each trial (by id) and the policy state were last
    // written at.
    std::map<int64_t, int64_t> trial_versions;
    int64_t policy_state_version = 0;
  };
  // By (owner, study_id); std::string order is byte order.
  using StudyMap =
      std::map<std::pair<std::string, std::string>, StudyRecord, std::less<>>;

  // Studies of `owner`.
  int64_t CountLocked(std::string_view owner)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Trial `id` of `record` with its intermediate values.
  static v1::Trial WholeTrial(const StudyRecord& record, int64_t id);
  // The study's record, or NOT_FOUND.
  absl::StatusOr<StudyRecord*> Find(const StudyKey& key)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Mutex mu_;
  StudyMap studies_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_IN_MEMORY_STORAGE_H_
