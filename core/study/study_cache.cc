#include "core/study/study_cache.h"

#include <algorithm>
#include <utility>

#include "core/common/memory.h"
#include "core/common/status_macros.h"

namespace metaopt::study {

StudyCache::StudyCache(storage::Storage* storage,
                       registry::ModelManager* models, int max_loaded_studies)
    : storage_(storage),
      models_(models),
      max_loaded_studies_(max_loaded_studies) {}

absl::StatusOr<std::shared_ptr<LiveStudy>> StudyCache::Find(
    const storage::StudyKey& key) {
  {
    std::shared_ptr<LiveStudy> found;
    std::vector<std::shared_ptr<LiveStudy>> cooled;
    {
      MutexLock lock(&mu_);
      auto it = studies_.find(key);
      if (it != studies_.end() && !it->second->dropped) {
        found = it->second;
        found->last_use = Tick(cooled);
      }
    }
    ReleaseParsedTrials(cooled);
    if (found != nullptr) return found;
  }
  // Load outside the map lock; if two threads race, the first insert wins.
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<LiveStudy> loaded,
                           LoadStudy(*storage_, models_, key));
  std::shared_ptr<LiveStudy> found;
  std::vector<std::shared_ptr<LiveStudy>> unloaded;
  std::vector<std::shared_ptr<LiveStudy>> cooled;
  {
    MutexLock lock(&mu_);
    std::shared_ptr<LiveStudy>& slot = studies_[key];
    if (slot == nullptr || slot->dropped) slot = std::move(loaded);
    slot->last_use = Tick(cooled);
    found = slot;  // held: never unloaded below
    if (max_loaded_studies_ > 0 &&
        studies_.size() > static_cast<size_t>(max_loaded_studies_)) {
      unloaded = UnloadIdleStudies();
    }
  }
  ReleaseParsedTrials(cooled);
  if (!unloaded.empty()) {
    unloaded.clear();  // freed outside the map lock
    ReleaseFreedMemory();
  }
  return found;
}

std::shared_ptr<LiveStudy> StudyCache::FindLoaded(
    const storage::StudyKey& key) {
  MutexLock lock(&mu_);
  auto it = studies_.find(key);
  return it == studies_.end() ? nullptr : it->second;
}

void StudyCache::Remove(const std::shared_ptr<LiveStudy>& study) {
  MutexLock lock(&mu_);
  auto it = studies_.find(study->key);
  if (it != studies_.end() && it->second == study) studies_.erase(it);
}

int64_t StudyCache::Tick(std::vector<std::shared_ptr<LiveStudy>>& cooled) {
  const int64_t now = ++use_clock_;
  if (now % kParsedTrialsIdleUses != 0) return now;
  // Each sweep takes the studies last used in the period before the last
  // one, so that every use is looked at by exactly one sweep.
  for (const auto& [key, entry] : studies_) {
    const int64_t used = entry->last_use.load();
    if (used >= now - 2 * kParsedTrialsIdleUses &&
        used < now - kParsedTrialsIdleUses) {
      cooled.push_back(entry);
    }
  }
  return now;
}

void StudyCache::ReleaseParsedTrials(
    const std::vector<std::shared_ptr<LiveStudy>>& cooled) {
  for (const std::shared_ptr<LiveStudy>& study : cooled) {
    MutexLock lock(&study->mu);
    study->trials.ReleaseParsed();
  }
}

std::vector<std::shared_ptr<LiveStudy>> StudyCache::UnloadIdleStudies() {
  // Only the map holds an idle study: a call in progress holds a reference.
  std::vector<std::pair<int64_t, storage::StudyKey>> idle;
  for (const auto& [key, entry] : studies_) {
    if (entry.use_count() == 1) idle.emplace_back(entry->last_use.load(), key);
  }
  const size_t target = static_cast<size_t>(max_loaded_studies_) / 8 * 7;
  const size_t excess = studies_.size() - std::min(target, studies_.size());
  const size_t count = std::min(excess, idle.size());
  std::nth_element(
      idle.begin(), idle.begin() + count, idle.end(),
      [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::shared_ptr<LiveStudy>> unloaded;
  unloaded.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    auto it = studies_.find(idle[i].second);
    unloaded.push_back(std::move(it->second));
    studies_.erase(it);
  }
  unloaded_studies_ += static_cast<int64_t>(count);
  return unloaded;
}

StudyCache::Stats StudyCache::stats() {
  std::vector<std::shared_ptr<LiveStudy>> entries;
  Stats stats;
  {
    MutexLock lock(&mu_);
    for (const auto& [key, entry] : studies_) entries.push_back(entry);
    stats.unloaded_studies = unloaded_studies_;
  }
  stats.trials_by_state.assign(v1::TrialState_ARRAYSIZE, 0);
  for (const auto& entry : entries) {
    MutexLock lock(&entry->mu);
    if (entry->deleted) continue;
    ++stats.studies;
    for (int64_t id = 1; id <= entry->trials.size(); ++id) {
      ++stats.trials_by_state[entry->trials.summary(id).state];
    }
  }
  return stats;
}

}  // namespace metaopt::study
