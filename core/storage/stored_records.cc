#include "core/storage/stored_records.h"

#include "absl/strings/str_cat.h"

namespace metaopt::storage {

absl::Status StudyNotFound(const StudyKey& key) {
  return absl::NotFoundError(absl::StrCat(Describe(key), " not found"));
}

absl::Status VersionConflict(const StudyKey& key, int64_t expected,
                             int64_t actual) {
  return absl::AbortedError(
      absl::StrCat(Describe(key),
                   " changed meanwhile: the write expected "
                   "version ",
                   expected, ", the study is at ", actual));
}

absl::Status OwnerQuotaExhausted(const StudyKey& key, int64_t owned,
                                 int64_t max_studies_of_owner) {
  return absl::ResourceExhaustedError(
      absl::StrCat("cannot create ", Describe(key), ": its owner holds ", owned,
                   " studies, the limit is ", max_studies_of_owner));
}

int64_t ToMicros(const google::protobuf::Timestamp& t) {
  return t.seconds() * 1000000 + t.nanos() / 1000;
}

absl::StatusOr<v1::Study> ParseStudy(const StudyKey& key,
                                     const std::string& blob) {
  v1::Study study;
  if (!study.ParseFromString(blob)) {
    return absl::DataLossError(
        absl::StrCat(Describe(key), ": stored study record does not parse"));
  }
  if (study.study_id() != key.study_id || study.owner() != key.owner) {
    return absl::DataLossError(absl::StrCat(
        Describe(key),
        ": stored study record has a different study_id or owner"));
  }
  return study;
}

absl::StatusOr<v1::Trial> ParseTrial(const StudyKey& key, int64_t trial_id,
                                     const std::string& blob) {
  v1::Trial trial;
  if (!trial.ParseFromString(blob)) {
    return absl::DataLossError(
        absl::StrCat(Describe(key), " trial ", trial_id,
                     ": stored trial record does not parse"));
  }
  if (trial.id() != trial_id) {
    return absl::DataLossError(absl::StrCat(Describe(key), " trial ", trial_id,
                                            ": stored trial record has id ",
                                            trial.id()));
  }
  return trial;
}

absl::StatusOr<std::string> SerializeStudy(const v1::Study& study) {
  std::string blob;
  if (!StoredStudy(study).SerializeToString(&blob)) {
    return absl::InternalError(
        absl::StrCat(Describe({study.owner(), study.study_id()}),
                     ": cannot serialize study"));
  }
  return blob;
}

absl::StatusOr<std::string> SerializeStudyRewrite(const StudyKey& key,
                                                  const StudyWrite& write) {
  if (write.study == nullptr) return std::string();
  if (write.study->owner() != key.owner ||
      write.study->study_id() != key.study_id) {
    return absl::InvalidArgumentError(
        absl::StrCat("study: the record names ",
                     Describe({write.study->owner(), write.study->study_id()}),
                     ", the write is to ", Describe(key)));
  }
  return SerializeStudy(*write.study);
}

absl::StatusOr<std::vector<std::string>> SerializeTrials(
    const StudyKey& key, absl::Span<const v1::Trial> trials) {
  std::vector<std::string> blobs(trials.size());
  for (size_t i = 0; i < trials.size(); ++i) {
    if (!trials[i].SerializeToString(&blobs[i])) {
      return absl::InternalError(absl::StrCat(Describe(key), " trial ",
                                              trials[i].id(),
                                              ": cannot serialize trial"));
    }
  }
  return blobs;
}

}  // namespace metaopt::storage
