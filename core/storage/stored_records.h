// The serialized records every Storage backend keeps, and the errors they
// share: parsing a stored study or trial (DATA_LOSS when it does not parse or
// names another key), NOT_FOUND for an absent study.
#ifndef METAOPT_CORE_STORAGE_STORED_RECORDS_H_
#define METAOPT_CORE_STORAGE_STORED_RECORDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/storage/storage.h"
#include "google/protobuf/timestamp.pb.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::storage {

// NOT_FOUND `<Describe(key)> not found`.
absl::Status StudyNotFound(const StudyKey& key);

// ABORTED naming the study and both versions: a write expected `expected` but
// the study is at `actual` (another writer changed it).
absl::Status VersionConflict(const StudyKey& key, int64_t expected,
                             int64_t actual);

// RESOURCE_EXHAUSTED: the owner of `key` already holds `owned` studies, the
// limit `max_studies_of_owner`.
absl::Status OwnerQuotaExhausted(const StudyKey& key, int64_t owned,
                                 int64_t max_studies_of_owner);

int64_t ToMicros(const google::protobuf::Timestamp& t);

// The stored record of study `key`; DATA_LOSS if it does not parse or names
// another study or owner.
absl::StatusOr<v1::Study> ParseStudy(const StudyKey& key,
                                     const std::string& blob);
// The stored record of trial `trial_id`; DATA_LOSS if it does not parse or
// has another id.
absl::StatusOr<v1::Trial> ParseTrial(const StudyKey& key, int64_t trial_id,
                                     const std::string& blob);

// StoredStudy(study), serialized; INTERNAL if it cannot be.
absl::StatusOr<std::string> SerializeStudy(const v1::Study& study);
// For StudyWrite::study: StoredStudy(*write.study) serialized, or "" when
// write.study is null. INVALID_ARGUMENT if the record names another owner or
// study than `key`; INTERNAL if it cannot be serialized.
absl::StatusOr<std::string> SerializeStudyRewrite(const StudyKey& key,
                                                  const StudyWrite& write);
// The rows a write's trials and intermediate values are stored as.
struct TrialRows {
  // Each trial of StudyWrite::trials, its record serialized without its
  // intermediate values.
  struct Record {
    int64_t id = 0;
    int state = 0;
    std::string client_id;
    std::string blob;
  };
  std::vector<Record> records;
  // One row per value: the trials' own intermediate values, then
  // StudyWrite::intermediate_values; `blob` is the serialized
  // v1::IntermediateValue.
  struct Value {
    int64_t trial_id = 0;
    int64_t step = 0;
    std::string blob;
  };
  std::vector<Value> values;
  // The trials of StudyWrite::intermediate_values that are not among its
  // trials, increasing: their records must exist and are marked written.
  std::vector<int64_t> touched;
};
// INTERNAL naming the first trial or value that cannot be serialized. The
// cost is that of the written records and values (a trial written without
// intermediate values is not copied).
absl::StatusOr<TrialRows> SerializeTrials(const StudyKey& key,
                                          const StudyWrite& write);

// Inserts `value` into `trial`'s intermediate values by increasing step,
// replacing one of the same step: constant time for a step past the last,
// moving the later values for a late one.
void InsertByStep(v1::IntermediateValue value, v1::Trial& trial);

// NOT_FOUND: StudyWrite::intermediate_values names trial `trial_id`, which is
// not stored.
absl::Status ValueOfAbsentTrial(const StudyKey& key, int64_t trial_id);

// Merges stored value rows into trials read by increasing id, the rows coming
// by increasing (trial id, step). Thread-compatible.
class ValueMerger {
 public:
  ValueMerger(const StudyKey& key, std::vector<v1::Trial>& trials)
      : key_(key), trials_(trials) {}
  // Adds the value row of (trial_id, step); DATA_LOSS if it does not parse,
  // holds another step, or its trial is not among the trials.
  absl::Status Add(int64_t trial_id, int64_t step, const std::string& blob);

 private:
  const StudyKey& key_;
  std::vector<v1::Trial>& trials_;
  size_t at_ = 0;  // the trial of the last row
};

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_STORED_RECORDS_H_
