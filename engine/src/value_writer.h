// ValueWriter: writes acknowledged values to their blob files in the background (through the
// page cache, or with O_DIRECT from aligned buffers with Options::direct_writes), so that a SET
// waits neither for the copy into the file nor for the disk. Used with the WAL off, where an
// acknowledged write that a crash loses is already the contract (its index record is not durable
// either until a flush, and a flush first waits for the writes it covers; see BlobFile::Sync).
//
// Until its write completes, a value is read from its buffer (BlobFile keeps the pending
// ranges). Writers wait (backpressure) while the bytes not yet written exceed the budget
// given at construction. Threads are named larder:write.
//
// A write waits kWriteBehind before it starts (unless half the budget is queued, or a sync
// hurries it): a value replaced or deleted meanwhile is dropped from its file unwritten
// (BlobFile::Punch), so a key overwritten in a burst costs the disk and the page cache one
// write, not one per version. It moves a write later, never an acknowledgement.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "blob_file.h"

namespace larder {

class ValueWriter {
 public:
  ValueWriter(int threads, uint64_t max_pending_bytes);
  ~ValueWriter();  // finishes every queued write first
  ValueWriter(const ValueWriter&) = delete;
  ValueWriter& operator=(const ValueWriter&) = delete;

  // Queues `w`, already registered in `file` at `offset` (BlobFile::AppendPending). Blocks
  // while too many bytes are pending, if `wait_for_room`; else queues past the budget.
  // `on_error` runs on a writer thread if the write fails.
  void Submit(BlobFilePtr file, uint64_t offset, std::shared_ptr<PendingWrite> w,
              bool wait_for_room = true);
  // Whether Submit of a write of `n` bytes would return at once, not wait for room.
  bool HasRoomFor(uint64_t n) const;
  // Starts every write queued so far without waiting out kWriteBehind (a sync wants them).
  void Hurry();
  // Waits until every write queued before the call has completed.
  void Drain();
  static constexpr std::chrono::milliseconds kWriteBehind{20};
  // A writer waiting for the first job's time sleeps this much past it, so the jobs that fell
  // due meanwhile go in one wakeup rather than one each.
  static constexpr std::chrono::milliseconds kWakeSlack{5};
  uint64_t pending_bytes() const;

 private:
  struct Job {
    BlobFilePtr file;
    uint64_t offset;
    std::shared_ptr<PendingWrite> w;
    uint64_t seq;                               // Submit's count
    std::chrono::steady_clock::time_point due;  // when kWriteBehind is out
  };
  void Work();
  // A queued write was dropped unwritten and its buffer freed (PendingWrite::on_release).
  void Released(uint64_t n);
  // HasRoomFor, the caller holding mu_.
  bool HasRoomForLocked(uint64_t n) const { return pending_ == 0 || pending_ + n <= max_pending_; }
  // Whether the queue's first job should start now. Caller holds mu_.
  bool FrontIsDue() const;
  // The following, the caller holding mu_. Drops the jobs at the queue's front whose write was
  // dropped unwritten.
  void PopReleasedFront();
  // Waits until the front job is due, or a notify. One writer at a time waits with a deadline
  // (front_timer_); the others wait for a notify, so a due time wakes one thread, not all.
  void WaitForFront(std::unique_lock<std::mutex>& lock);
  // Wakes Drain's waiters once nothing is queued or being written.
  void NotifyIfDrained();

  const uint64_t max_pending_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, room_cv_, drained_cv_;
  std::deque<Job> queue_;
  uint64_t pending_ = 0;  // bytes queued or being written, less those dropped unwritten
  uint64_t in_flight_ = 0;
  uint64_t submitted_ = 0;
  uint64_t hurried_ = 0;  // jobs with seq <= this start at once
  bool stop_ = false;
  bool front_timer_ = false;  // a writer waits for the front job's due time
  std::vector<std::thread> threads_;
};

}  // namespace larder
