#include "core/storage/stored_records.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"

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

namespace {

absl::Status AddValueRow(const StudyKey& key, int64_t trial_id,
                         const v1::IntermediateValue& value,
                         std::vector<TrialRows::Value>& rows) {
  TrialRows::Value& row = rows.emplace_back();
  row.trial_id = trial_id;
  row.step = value.step();
  if (!value.SerializeToString(&row.blob)) {
    return absl::InternalError(absl::StrCat(
        Describe(key), " trial ", trial_id, " step ", value.step(),
        ": cannot serialize intermediate value"));
  }
  return absl::OkStatus();
}

}  // namespace

void InsertByStep(v1::IntermediateValue value, v1::Trial& trial) {
  auto* values = trial.mutable_intermediate_values();
  if (values->empty() || values->rbegin()->step() < value.step()) {
    *values->Add() = std::move(value);
    return;
  }
  const auto at =
      std::lower_bound(values->begin(), values->end(), value.step(),
                       [](const v1::IntermediateValue& v, int64_t step) {
                         return v.step() < step;
                       });
  if (at->step() == value.step()) {
    *at = std::move(value);
    return;
  }
  const int index = static_cast<int>(at - values->begin());
  *values->Add() = std::move(value);
  for (int i = values->size() - 1; i > index; --i)
    values->SwapElements(i, i - 1);
}

absl::StatusOr<TrialRows> SerializeTrials(const StudyKey& key,
                                          const StudyWrite& write) {
  TrialRows rows;
  rows.records.reserve(write.trials.size());
  absl::flat_hash_set<int64_t> written;
  for (const v1::Trial& trial : write.trials) {
    TrialRows::Record& record = rows.records.emplace_back();
    record.id = trial.id();
    record.state = static_cast<int>(trial.state());
    record.client_id = trial.client_id();
    written.insert(trial.id());
    bool serialized;
    if (trial.intermediate_values().empty()) {
      serialized = trial.SerializeToString(&record.blob);
    } else {
      v1::Trial without = trial;
      without.clear_intermediate_values();
      serialized = without.SerializeToString(&record.blob);
      for (const v1::IntermediateValue& value : trial.intermediate_values()) {
        METAOPT_RETURN_IF_ERROR(AddValueRow(key, trial.id(), value, rows.values));
      }
    }
    if (!serialized) {
      return absl::InternalError(absl::StrCat(
          Describe(key), " trial ", trial.id(), ": cannot serialize trial"));
    }
  }
  for (const TrialValue& value : write.intermediate_values) {
    METAOPT_RETURN_IF_ERROR(
        AddValueRow(key, value.trial_id, value.value, rows.values));
    if (!written.contains(value.trial_id)) {
      rows.touched.push_back(value.trial_id);
    }
  }
  std::sort(rows.touched.begin(), rows.touched.end());
  rows.touched.erase(std::unique(rows.touched.begin(), rows.touched.end()),
                     rows.touched.end());
  return rows;
}

absl::Status ValueOfAbsentTrial(const StudyKey& key, int64_t trial_id) {
  return absl::NotFoundError(
      absl::StrCat(Describe(key), " has no trial ", trial_id,
                   " to store an intermediate value of"));
}

absl::Status ValueMerger::Add(int64_t trial_id, int64_t step,
                              const std::string& blob) {
  if (at_ >= trials_.size() || trials_[at_].id() != trial_id) {
    const auto it = std::lower_bound(
        trials_.begin(), trials_.end(), trial_id,
        [](const v1::Trial& trial, int64_t id) { return trial.id() < id; });
    if (it == trials_.end() || it->id() != trial_id) {
      return absl::DataLossError(
          absl::StrCat(Describe(key_), " trial ", trial_id, " step ", step,
                       ": stored intermediate value without its trial"));
    }
    at_ = static_cast<size_t>(it - trials_.begin());
  }
  v1::IntermediateValue value;
  if (!value.ParseFromString(blob) || value.step() != step) {
    return absl::DataLossError(
        absl::StrCat(Describe(key_), " trial ", trial_id, " step ", step,
                     ": stored intermediate value does not parse or has "
                     "another step"));
  }
  InsertByStep(std::move(value), trials_[at_]);
  return absl::OkStatus();
}

}  // namespace metaopt::storage
