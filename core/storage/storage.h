// Durable state of studies and trials.
#ifndef METAOPT_CORE_STORAGE_STORAGE_H_
#define METAOPT_CORE_STORAGE_STORAGE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::storage {

// What is stored of a study: its id, spec, create time and bound model (the
// fields of v1::Study other than the derived trial_count / best_trial / state,
// which the engine computes from trials). Implementations are thread-safe;
// every mutating call is one transaction that is durable when it returns OK (an
// acknowledged write survives kill -9). Values are copied in and out, never
// shared.
class Storage {
 public:
  virtual ~Storage() = default;

  // ALREADY_EXISTS if a study with this id exists; INVALID_ARGUMENT if the id
  // is empty.
  virtual absl::Status CreateStudy(const v1::Study& study) = 0;
  // NOT_FOUND if absent.
  virtual absl::StatusOr<v1::Study> GetStudy(std::string_view study_id) = 0;
  // Up to `limit` studies with study_id > `after_study_id`, ordered by study_id
  // (byte-wise), so passing the last id returned pages through all studies.
  // INVALID_ARGUMENT if limit <= 0.
  virtual absl::StatusOr<std::vector<v1::Study>> ListStudies(
      std::string_view after_study_id, int limit) = 0;
  // Removes the study, its trials and its surrogate state. NOT_FOUND if absent.
  virtual absl::Status DeleteStudy(std::string_view study_id) = 0;

  // Inserts or replaces the given trials (keyed by study_id and trial id) in
  // one transaction; trials not named are kept, and of two with the same id in
  // `trials` the later wins. NOT_FOUND if the study is absent.
  virtual absl::Status PutTrials(std::string_view study_id,
                                 const std::vector<v1::Trial>& trials) = 0;
  // All trials of the study by increasing id. NOT_FOUND if the study is absent.
  virtual absl::StatusOr<std::vector<v1::Trial>> LoadTrials(
      std::string_view study_id) = 0;

  // Opaque per-study surrogate/policy state (a serialized proto), replaced as a
  // whole. NOT_FOUND if the study is absent.
  virtual absl::Status PutPolicyState(std::string_view study_id,
                                      std::string_view blob) = 0;
  // std::nullopt if none was stored. NOT_FOUND if the study is absent.
  virtual absl::StatusOr<std::optional<std::string>> GetPolicyState(
      std::string_view study_id) = 0;
};

struct SqliteOptions {
  // Milliseconds a writer waits for a lock held by another connection.
  int busy_timeout_ms = 5000;
};

// Opens (creating if needed) the SQLite database at `path` in WAL mode with
// synchronous=FULL, and brings its schema to the current version (a
// schema_version table drives migrations). A database written by a newer
// metaopt (higher schema version) is FAILED_PRECONDITION.
absl::StatusOr<std::unique_ptr<Storage>> OpenSqliteStorage(
    const std::string& path, const SqliteOptions& options = {});

// The schema version this build writes.
int CurrentSchemaVersion();

// A thread-safe Storage held in memory (lost when destroyed), for tests and
// benchmarks. It has the same contracts as the SQLite storage, without
// durability.
absl::StatusOr<std::unique_ptr<Storage>> OpenInMemoryStorage();

// The part of `study` that Storage keeps: a copy with the derived fields
// (trial_count, best_trial, state) cleared. GetStudy and ListStudies return
// exactly this for a created study.
v1::Study StoredStudy(const v1::Study& study);

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_STORAGE_H_
