#include "core/storage/storage.h"

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"

namespace metaopt::storage {

std::string Describe(const StudyKey& key) {
  if (key.owner.empty()) return absl::StrCat("study \"", key.study_id, "\"");
  return absl::StrCat("study \"", key.study_id, "\" of owner \"", key.owner,
                      "\"");
}

v1::Study StoredStudy(const v1::Study& study) {
  v1::Study stored = study;
  stored.clear_trial_count();
  stored.clear_best_trial();
  stored.clear_state();
  stored.clear_update_time();
  return stored;
}

absl::StatusOr<std::shared_ptr<PendingWrite>> Storage::StartWriteStudy(
    const StudyKey& key, const StudyWrite& write,
    const std::shared_ptr<PendingWrite>& after) {
  if (after != nullptr) {
    const absl::Status stored = after->Wait();
    if (!stored.ok()) {
      return absl::AbortedError(absl::StrCat(
          "an earlier write of study ", Describe(key),
          " that this one builds on failed (", stored.message(), ")"));
    }
  }
  METAOPT_RETURN_IF_ERROR(WriteStudy(key, write));
  return nullptr;
}

}  // namespace metaopt::storage
