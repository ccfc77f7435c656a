// Group commit for the durable stores: many threads each hand over one item
// and wait; the first waiter becomes the writer and commits everything queued
// in one transaction (one fsync, or one PostgreSQL COMMIT), then wakes the
// others; whoever queued meanwhile goes in the next batch. Invariant: Submit
// returns only after the batch holding its item was committed (or failed).
// Used by the record store and both exchange stores.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "base/status.h"

namespace stet::forensics {

template <typename Item>
class GroupCommit {
 public:
  // Commits a batch. A failed batch fails every item; otherwise an item gets
  // what CommitFn set in item_status (Ok unless set: an item refused alone).
  using CommitFn = std::function<Status(const std::vector<const Item*>& batch,
                                        std::vector<Status>* item_status)>;
  explicit GroupCommit(CommitFn commit) : commit_(std::move(commit)) {}

  Status Submit(const Item& item) {
    Pending me{&item, Status::Ok(), false};
    std::unique_lock<std::mutex> lock(mu_);
    queue_.push_back(&me);
    while (!me.done) {
      if (writing_) {
        cv_.wait(lock);
        continue;
      }
      writing_ = true;
      std::vector<Pending*> batch;
      batch.swap(queue_);
      lock.unlock();
      std::vector<const Item*> items;
      items.reserve(batch.size());
      for (Pending* p : batch) items.push_back(p->item);
      std::vector<Status> item_status(batch.size(), Status::Ok());
      Status st = commit_(items, &item_status);
      lock.lock();
      for (size_t i = 0; i < batch.size(); ++i) {
        batch[i]->status = st.ok() ? item_status[i] : st;
        batch[i]->done = true;
      }
      writing_ = false;
      cv_.notify_all();
    }
    return me.status;
  }

  // Runs `fn` while no batch is being committed (readers and maintenance).
  Status Exclusive(const std::function<Status()>& fn) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !writing_; });
      writing_ = true;
    }
    Status st = fn();
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_ = false;
    }
    cv_.notify_all();
    return st;
  }

 private:
  struct Pending {
    const Item* item;
    Status status;
    bool done;
  };
  CommitFn commit_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool writing_ = false;
  std::vector<Pending*> queue_;
};

}  // namespace stet::forensics
