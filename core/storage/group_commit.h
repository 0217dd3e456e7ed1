// Group commit: concurrent writers share one durable transaction.
#ifndef METAOPT_CORE_STORAGE_GROUP_COMMIT_H_
#define METAOPT_CORE_STORAGE_GROUP_COMMIT_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/common/mutex.h"
#include "core/storage/storage.h"

namespace metaopt::storage {

// A leader/follower commit queue, as in LevelDB's write path (DBImpl::Write):
// each writer enqueues its change and waits; a waiting writer, while no batch
// is being committed, becomes the leader: it takes the queued writes (in
// arrival order, at most `max_batch`, and, unless the queue was built with
// Options::writes_of_a_study_share_a_batch, at most one per study key, so
// that a retried batch cannot confuse two writes of one study), runs them
// through `run` (one transaction, one durable commit), hands every writer its
// status, and wakes the waiters. A writer's Wait returns only after the commit
// that holds its change, so an OK still means durable. With one writer at a
// time this is a plain transaction per write; under concurrency one sync
// serves many writes.
//
// Writes of one study are applied in the order they were enqueued, whether in
// one batch or in successive ones. Enqueue and Wait may be called apart (the
// study engine enqueues under its study lock and waits after releasing it, so
// that the writes of one study share a sync); a write may name an earlier
// write of its study it builds on (`after`), and then fails ABORTED, storing
// nothing, unless that one was stored.
//
// Thread-safe. The leader runs `run` without holding the queue's mutex, so
// writers keep enqueueing while a batch commits; they form the next batch.
class GroupCommit {
 public:
  // One queued write as the batch runner sees it. `apply` makes the change
  // inside the batch's transaction, on the leader's thread.
  struct Write {
    const StudyKey* key;
    absl::FunctionRef<absl::Status()> apply;
    // Set by the batch runner: the write's own error (`apply` failed, its
    // change undone, the rest of the batch unaffected), or else the status of
    // the batch's commit.
    absl::Status status;
  };
  // Runs one batch: begins a transaction, calls every write's `apply` in
  // order so that a failing one leaves no change of its own (a savepoint) and
  // fails only its write, commits, and sets each write's status. If the
  // transaction itself fails (begin, commit, or an error that ends it), every
  // write of the batch gets that error: none of them was stored.
  using RunBatch = std::function<void(absl::Span<Write* const> batch)>;

  struct Options {
    int max_batch = 256;
    // Whether a batch may hold several writes of one study (in their order).
    // Not for a runner that retries a failed batch as a whole.
    bool writes_of_a_study_share_a_batch = false;
  };

  // A write enqueued by Enqueue; owned by its writer and the queue.
  class Ticket {
   public:
    explicit Ticket(StudyKey key) : key_(std::move(key)) {}

   private:
    friend class GroupCommit;
    const StudyKey key_;
    absl::AnyInvocable<absl::Status()> apply_;
    // Null, or an earlier write of the study that must be stored first.
    // Dropped once this write is done, so that tickets do not chain.
    std::shared_ptr<Ticket> after_;
    // Set under the queue's mutex by the leader of the write's batch; read
    // by that leader while it runs the batch, and by waiters under the mutex.
    absl::Status status_;  // the write's outcome once done_
    bool done_ = false;
    // While its batch runs: the write the runner sees.
    Write* write_ = nullptr;
  };

  explicit GroupCommit(RunBatch run, int max_batch = 256);
  GroupCommit(RunBatch run, Options options);

  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Queues `apply` for the study `key`, and returns once the batch that holds
  // it has committed (its status) or failed.
  absl::Status Commit(const StudyKey& key,
                      absl::FunctionRef<absl::Status()> apply)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Queues `apply` (which must stay valid until the write is done) for the
  // study `key` behind `after` (null, or an earlier write of the same study
  // that this one builds on: if that one is not stored, this one fails
  // ABORTED without running `apply`), and returns at once. Its writer must
  // Wait for it (some waiter must lead its batch).
  std::shared_ptr<Ticket> Enqueue(const StudyKey& key,
                                  absl::AnyInvocable<absl::Status()> apply,
                                  std::shared_ptr<Ticket> after)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Returns once `ticket`'s batch has committed (its status) or failed,
  // leading batches meanwhile when no other writer does.
  absl::Status Wait(Ticket& ticket) ABSL_LOCKS_EXCLUDED(mu_);
  // `ticket`'s status if it is done, std::nullopt while it is queued or in a
  // batch being committed.
  std::optional<absl::Status> Poll(const Ticket& ticket) const
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
  // Takes a batch from the queue, runs it with mu_ released, and marks its
  // writes done.
  void LeadBatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RunBatch run_;
  const Options options_;
  mutable Mutex mu_;
  // Writes not yet taken into a batch, in arrival order.
  std::deque<std::shared_ptr<Ticket>> queue_ ABSL_GUARDED_BY(mu_);
  bool committing_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metaopt::storage

#endif  // METAOPT_CORE_STORAGE_GROUP_COMMIT_H_
