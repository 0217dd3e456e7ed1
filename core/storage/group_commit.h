// Group commit: concurrent writers share one durable transaction.
#ifndef METAOPT_CORE_STORAGE_GROUP_COMMIT_H_
#define METAOPT_CORE_STORAGE_GROUP_COMMIT_H_

#include <cstdint>
#include <deque>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/common/mutex.h"
#include "core/storage/storage.h"

namespace metaopt::storage {

// A leader/follower commit queue, as in LevelDB's write path (DBImpl::Write):
// each writer enqueues its change and waits; the writer at the front of the
// queue, while no batch is being committed, becomes the leader: it takes the
// queued writes (in arrival order, at most `max_batch`, at most one per study
// key, so that a study's writes keep their order and a retried batch cannot
// confuse two writes of one study), runs them through `run` (one transaction,
// one durable commit), hands every writer its status, and wakes the next
// leader. A writer returns only after the commit that holds its change, so an
// OK still means durable. With one writer at a time this is a plain
// transaction per write; under concurrency one sync serves many writes.
//
// Thread-safe. The leader runs `run` without holding the queue's mutex, so
// writers keep enqueueing while a batch commits; they form the next batch.
class GroupCommit {
 public:
  // One queued write. `apply` makes the change inside the batch's
  // transaction, on the leader's thread; the writer waits meanwhile, so it
  // may view the writer's stack.
  struct Write {
    const StudyKey* key;
    absl::FunctionRef<absl::Status()> apply;
    // Set by the batch runner: the write's own error (`apply` failed, its
    // change undone, the rest of the batch unaffected), or else the status of
    // the batch's commit.
    absl::Status status;
  };
  // Runs one batch: begins a transaction, calls every write's `apply` so that
  // a failing one leaves no change of its own (a savepoint) and fails only its
  // write, commits, and sets each write's status. If the transaction itself
  // fails (begin, commit, or an error that ends it), every write of the batch
  // gets that error: none of them was stored.
  using RunBatch = std::function<void(absl::Span<Write* const> batch)>;

  explicit GroupCommit(RunBatch run, int max_batch = 256);

  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Queues `apply` for the study `key`, and returns once the batch that holds
  // it has committed (its status) or failed.
  absl::Status Commit(const StudyKey& key,
                      absl::FunctionRef<absl::Status()> apply)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Totals since construction, for tests and monitoring.
  struct Stats {
    int64_t batches = 0;
    int64_t writes = 0;
    int64_t largest_batch = 0;
  };
  Stats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  // Writes waiting for a batch (not counting the one being committed).
  int64_t queued() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Waiter {
    GroupCommit* queue;
    Write* write;
    bool done = false;
    // Its batch committed, or it is the front of the queue while no batch
    // commits (it leads the next one). Called with queue->mu_ held.
    bool Ready() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return done || (!queue->committing_ && queue->queue_.front() == this);
    }
  };

  const RunBatch run_;
  const int max_batch_;
  mutable Mutex mu_;
  // Writes not yet taken into a batch, in arrival order.
  std::deque<Waiter*> queue_ ABSL_GUARDED_BY(mu_);
  bool committing_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_GROUP_COMMIT_H_
