#include "core/storage/in_memory_storage.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"

namespace metaopt::storage {

absl::StatusOr<std::unique_ptr<Storage>> OpenInMemoryStorage() {
  return std::unique_ptr<Storage>(std::make_unique<InMemoryStorage>());
}

absl::StatusOr<InMemoryStorage::StudyRecord*> InMemoryStorage::Find(
    std::string_view study_id) {
  auto it = studies_.find(study_id);
  if (it == studies_.end()) {
    return absl::NotFoundError(
        absl::StrCat("study \"", std::string(study_id), "\" not found"));
  }
  return &it->second;
}

absl::Status InMemoryStorage::CreateStudy(const v1::Study& study) {
  if (study.study_id().empty())
    return absl::InvalidArgumentError("study_id must not be empty");
  absl::MutexLock lock(&mu_);
  if (studies_.find(study.study_id()) != studies_.end()) {
    return absl::AlreadyExistsError(
        absl::StrCat("study \"", study.study_id(), "\" already exists"));
  }
  studies_[study.study_id()].study = StoredStudy(study);
  return absl::OkStatus();
}

absl::StatusOr<v1::Study> InMemoryStorage::GetStudy(std::string_view study_id) {
  absl::MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(StudyRecord * record, Find(study_id));
  return record->study;
}

absl::StatusOr<std::vector<v1::Study>> InMemoryStorage::ListStudies(
    std::string_view after_study_id, int limit) {
  if (limit <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: ", limit, " must be positive"));
  }
  absl::MutexLock lock(&mu_);
  std::vector<v1::Study> studies;
  for (auto it = studies_.upper_bound(after_study_id);
       it != studies_.end() && static_cast<int>(studies.size()) < limit; ++it) {
    studies.push_back(it->second.study);
  }
  return studies;
}

absl::Status InMemoryStorage::DeleteStudy(std::string_view study_id) {
  absl::MutexLock lock(&mu_);
  auto it = studies_.find(study_id);
  if (it == studies_.end()) {
    return absl::NotFoundError(
        absl::StrCat("study \"", std::string(study_id), "\" not found"));
  }
  studies_.erase(it);
  return absl::OkStatus();
}

absl::Status InMemoryStorage::PutTrials(std::string_view study_id,
                                        const std::vector<v1::Trial>& trials) {
  absl::MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(StudyRecord * record, Find(study_id));
  for (const v1::Trial& trial : trials) record->trials[trial.id()] = trial;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::Trial>> InMemoryStorage::LoadTrials(
    std::string_view study_id) {
  absl::MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(StudyRecord * record, Find(study_id));
  std::vector<v1::Trial> trials;
  trials.reserve(record->trials.size());
  for (const auto& [id, trial] : record->trials) trials.push_back(trial);
  return trials;
}

absl::Status InMemoryStorage::PutPolicyState(std::string_view study_id,
                                             std::string_view blob) {
  absl::MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(StudyRecord * record, Find(study_id));
  record->policy_state = std::string(blob);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> InMemoryStorage::GetPolicyState(
    std::string_view study_id) {
  absl::MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(StudyRecord * record, Find(study_id));
  return record->policy_state;
}

}  // namespace metaopt::storage
