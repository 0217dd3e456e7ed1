#include "core/storage/storage.h"

namespace metaopt::storage {

v1::Study StoredStudy(const v1::Study& study) {
  v1::Study stored = study;
  stored.clear_trial_count();
  stored.clear_best_trial();
  stored.clear_state();
  return stored;
}

}  // namespace metaopt::storage
