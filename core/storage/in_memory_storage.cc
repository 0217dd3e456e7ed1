#include "core/storage/in_memory_storage.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/storage/stored_records.h"

namespace metaopt::storage {
namespace {

std::pair<std::string, std::string> MapKey(const StudyKey& key) {
  return {key.owner, key.study_id};
}

}  // namespace

absl::StatusOr<std::unique_ptr<Storage>> OpenInMemoryStorage() {
  return std::unique_ptr<Storage>(std::make_unique<InMemoryStorage>());
}

v1::Trial InMemoryStorage::WholeTrial(const StudyRecord& record, int64_t id) {
  v1::Trial trial = record.trials.at(id);
  const auto values = record.values.find(id);
  if (values != record.values.end()) {
    for (const auto& [step, value] : values->second) {
      *trial.add_intermediate_values() = value;
    }
  }
  return trial;
}

absl::StatusOr<InMemoryStorage::StudyRecord*> InMemoryStorage::Find(
    const StudyKey& key) {
  auto it = studies_.find(MapKey(key));
  if (it == studies_.end()) return StudyNotFound(key);
  return &it->second;
}

absl::Status InMemoryStorage::CreateStudy(const v1::Study& study,
                                          int64_t max_studies_of_owner) {
  if (study.study_id().empty())
    return absl::InvalidArgumentError("study_id must not be empty");
  const StudyKey key{study.owner(), study.study_id()};
  MutexLock lock(&mu_);
  if (studies_.find(MapKey(key)) != studies_.end()) {
    return absl::AlreadyExistsError(
        absl::StrCat(Describe(key), " already exists"));
  }
  if (max_studies_of_owner > 0) {
    const int64_t owned = CountLocked(key.owner);
    if (owned >= max_studies_of_owner)
      return OwnerQuotaExhausted(key, owned, max_studies_of_owner);
  }
  studies_[MapKey(key)].study = StoredStudy(study);
  return absl::OkStatus();
}

absl::StatusOr<v1::Study> InMemoryStorage::GetStudy(const StudyKey& key) {
  MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(StudyRecord * record, Find(key));
  return record->study;
}

absl::StatusOr<std::vector<v1::Study>> InMemoryStorage::ListStudies(
    std::string_view owner, std::string_view after_study_id, int limit) {
  if (limit <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: ", limit, " must be positive"));
  }
  MutexLock lock(&mu_);
  std::vector<v1::Study> studies;
  for (auto it = studies_.upper_bound(
           std::make_pair(std::string(owner), std::string(after_study_id)));
       it != studies_.end() && it->first.first == owner &&
       static_cast<int>(studies.size()) < limit;
       ++it) {
    studies.push_back(it->second.study);
  }
  return studies;
}

absl::StatusOr<int64_t> InMemoryStorage::CountStudies(std::string_view owner) {
  MutexLock lock(&mu_);
  return CountLocked(owner);
}

int64_t InMemoryStorage::CountLocked(std::string_view owner) {
  int64_t count = 0;
  for (auto it = studies_.lower_bound(
           std::make_pair(std::string(owner), std::string()));
       it != studies_.end() && it->first.first == owner; ++it) {
    ++count;
  }
  return count;
}

absl::Status InMemoryStorage::DeleteStudy(const StudyKey& key) {
  MutexLock lock(&mu_);
  auto it = studies_.find(MapKey(key));
  if (it == studies_.end()) return StudyNotFound(key);
  studies_.erase(it);
  return absl::OkStatus();
}

absl::Status InMemoryStorage::WriteStudy(const StudyKey& key,
                                         const StudyWrite& write) {
  MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(StudyRecord * record, Find(key));
  if (write.expected_version.has_value() &&
      *write.expected_version != record->version) {
    return VersionConflict(key, *write.expected_version, record->version);
  }
  // The same check as the databases' (the record is kept as parsed here).
  METAOPT_RETURN_IF_ERROR(SerializeStudyRewrite(key, write).status());
  for (const TrialValue& value : write.intermediate_values) {
    const bool written = std::any_of(
        write.trials.begin(), write.trials.end(),
        [&](const v1::Trial& trial) { return trial.id() == value.trial_id; });
    if (!written && record->trials.count(value.trial_id) == 0) {
      return ValueOfAbsentTrial(key, value.trial_id);
    }
  }
  ++record->version;
  if (write.study != nullptr) record->study = StoredStudy(*write.study);
  for (const v1::Trial& trial : write.trials) {
    v1::Trial& stored = record->trials[trial.id()];
    stored = trial;
    if (!stored.intermediate_values().empty()) {
      auto& values = record->values[trial.id()];
      for (v1::IntermediateValue& value :
           *stored.mutable_intermediate_values()) {
        values[value.step()] = std::move(value);
      }
      stored.clear_intermediate_values();
    }
    record->trial_versions[trial.id()] = record->version;
  }
  for (const TrialValue& value : write.intermediate_values) {
    record->values[value.trial_id][value.value.step()] = value.value;
    record->trial_versions[value.trial_id] = record->version;
  }
  if (write.policy_state.has_value()) {
    record->policy_state = std::string(*write.policy_state);
    record->policy_state_version = record->version;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> InMemoryStorage::GetStudyVersion(const StudyKey& key) {
  MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(StudyRecord * record, Find(key));
  return record->version;
}

absl::StatusOr<std::vector<v1::Trial>> InMemoryStorage::LoadTrials(
    const StudyKey& key) {
  MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(StudyRecord * record, Find(key));
  std::vector<v1::Trial> trials;
  trials.reserve(record->trials.size());
  for (const auto& [id, trial] : record->trials) {
    trials.push_back(WholeTrial(*record, id));
  }
  return trials;
}

absl::StatusOr<Storage::Changes> InMemoryStorage::LoadChangesSince(
    const StudyKey& key, int64_t version) {
  MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(StudyRecord * record, Find(key));
  Changes changes;
  changes.version = record->version;
  for (const auto& [id, written] : record->trial_versions) {
    if (written > version) changes.trials.push_back(WholeTrial(*record, id));
  }
  if (record->policy_state_version > version)
    changes.policy_state = record->policy_state;
  return changes;
}

absl::StatusOr<std::optional<std::string>> InMemoryStorage::GetPolicyState(
    const StudyKey& key) {
  MutexLock lock(&mu_);
  METAOPT_ASSIGN_OR_RETURN(StudyRecord * record, Find(key));
  return record->policy_state;
}

}  // namespace metaopt::storage
