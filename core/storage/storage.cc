#include "core/storage/storage.h"

#include "absl/strings/str_cat.h"

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

}  // namespace metaopt::storage
