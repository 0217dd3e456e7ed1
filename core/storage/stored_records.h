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
// Each trial serialized; INTERNAL naming the first that cannot be.
absl::StatusOr<std::vector<std::string>> SerializeTrials(
    const StudyKey& key, absl::Span<const v1::Trial> trials);

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_STORED_RECORDS_H_
