#include "core/storage/group_commit.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace metaopt::storage {

GroupCommit::GroupCommit(RunBatch run, int max_batch)
    : GroupCommit(std::move(run), Options{max_batch, false}) {}

GroupCommit::GroupCommit(RunBatch run, Options options)
    : run_(std::move(run)), options_(options) {}

absl::Status GroupCommit::Commit(const StudyKey& key,
                                 absl::FunctionRef<absl::Status()> apply) {
  // `apply` stays valid: this call waits for the write.
  std::shared_ptr<Ticket> ticket = Enqueue(
      key, [apply] { return apply(); }, nullptr);
  return Wait(*ticket);
}

std::shared_ptr<GroupCommit::Ticket> GroupCommit::Enqueue(
    const StudyKey& key, absl::AnyInvocable<absl::Status()> apply,
    std::shared_ptr<Ticket> after) {
  auto ticket = std::make_shared<Ticket>(key);
  ticket->apply_ = std::move(apply);
  MutexLock lock(&mu_);
  // A write whose predecessor is already stored needs no check.
  if (after != nullptr && !(after->done_ && after->status_.ok())) {
    ticket->after_ = std::move(after);
  }
  queue_.push_back(ticket);
  return ticket;
}

absl::Status GroupCommit::Wait(Ticket& ticket) {
  MutexLock lock(&mu_);
  struct Waiting {
    GroupCommit* queue;
    Ticket* ticket;
    // Its batch committed, or writes wait while no batch commits: then this
    // writer leads.
    bool Ready() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return ticket->done_ || (!queue->committing_ && !queue->queue_.empty());
    }
  } waiting{this, &ticket};
  while (true) {
    mu_.Await(absl::Condition(&waiting, &Waiting::Ready));
    if (ticket.done_) return ticket.status_;
    LeadBatch();
  }
}

std::optional<absl::Status> GroupCommit::Poll(const Ticket& ticket) const {
  MutexLock lock(&mu_);
  if (!ticket.done_) return std::nullopt;
  return ticket.status_;
}

void GroupCommit::LeadBatch() {
  committing_ = true;
  // The batch, in arrival order; one write per study unless they may share.
  std::vector<std::shared_ptr<Ticket>> taken;
  absl::flat_hash_set<StudyKey> keys;
  for (auto it = queue_.begin();
       it != queue_.end() &&
       static_cast<int>(taken.size()) < std::max(1, options_.max_batch);) {
    if (options_.writes_of_a_study_share_a_batch ||
        keys.insert((*it)->key_).second) {
      taken.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  mu_.Unlock();
  // A write runs only if the write it builds on (earlier in this batch, or
  // done in an earlier one) was stored; its status is final by then, but for
  // the batch's commit, which fails both alike.
  const auto run_after_check = [](Ticket* ticket) -> absl::Status {
    const Ticket* after = ticket->after_.get();
    if (after != nullptr) {
      const absl::Status& stored =
          after->write_ != nullptr ? after->write_->status : after->status_;
      if (!stored.ok()) {
        return absl::AbortedError(absl::StrCat(
            "an earlier write of study ", Describe(ticket->key_),
            " that this one builds on failed (", stored.message(), ")"));
      }
    }
    return ticket->apply_();
  };
  std::vector<std::function<absl::Status()>> applies;
  applies.reserve(taken.size());
  for (const std::shared_ptr<Ticket>& ticket : taken) {
    applies.push_back(
        [&run_after_check, t = ticket.get()] { return run_after_check(t); });
  }
  std::vector<Write> writes;
  writes.reserve(taken.size());
  for (size_t i = 0; i < taken.size(); ++i) {
    writes.push_back(Write{&taken[i]->key_, applies[i], absl::OkStatus()});
  }
  std::vector<Write*> batch;
  batch.reserve(taken.size());
  for (size_t i = 0; i < taken.size(); ++i) {
    taken[i]->write_ = &writes[i];
    batch.push_back(&writes[i]);
  }
  run_(batch);
  mu_.Lock();
  for (size_t i = 0; i < taken.size(); ++i) {
    Ticket& ticket = *taken[i];
    ticket.status_ = std::move(writes[i].status);
    ticket.write_ = nullptr;
    ticket.after_ = nullptr;
    ticket.apply_ = nullptr;  // frees what it captured
    ticket.done_ = true;
  }
  committing_ = false;
  ++stats_.batches;
  stats_.writes += static_cast<int64_t>(taken.size());
  stats_.largest_batch = std::max<int64_t>(stats_.largest_batch,
                                           static_cast<int64_t>(taken.size()));
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
