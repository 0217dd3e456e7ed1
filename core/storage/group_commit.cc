#include "core/storage/group_commit.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace metaopt::storage {

GroupCommit::GroupCommit(RunBatch run, int max_batch)
    : run_(std::move(run)), max_batch_(std::max(1, max_batch)) {}

absl::Status GroupCommit::Commit(const StudyKey& key,
                                 absl::FunctionRef<absl::Status()> apply) {
  Write write{&key, apply, absl::OkStatus()};
  Waiter self{this, &write};
  MutexLock lock(&mu_);
  queue_.push_back(&self);
  // Done by another leader's batch, or the front of the queue while no batch
  // commits: then this writer leads.
  mu_.Await(absl::Condition(&self, &Waiter::Ready));
  if (self.done) return write.status;

  // Leader: take the batch, in arrival order, one write per study.
  committing_ = true;
  std::vector<Waiter*> taken;
  std::vector<Write*> batch;
  absl::flat_hash_set<StudyKey> keys;
  for (auto it = queue_.begin();
       it != queue_.end() && static_cast<int>(batch.size()) < max_batch_;) {
    if (keys.insert(*(*it)->write->key).second) {
      taken.push_back(*it);
      batch.push_back((*it)->write);
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  mu_.Unlock();
  run_(batch);
  mu_.Lock();
  for (Waiter* waiter : taken) waiter->done = true;
  committing_ = false;
  ++stats_.batches;
  stats_.writes += static_cast<int64_t>(batch.size());
  stats_.largest_batch = std::max<int64_t>(stats_.largest_batch,
                                           static_cast<int64_t>(batch.size()));
  return write.status;
}

GroupCommit::Stats GroupCommit::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

int64_t GroupCommit::queued() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size());
}

}  // namespace metaopt::storage
