// ValueWriter: writes acknowledged values to their blob files in the background, with O_DIRECT
// from aligned buffers the engine owns, so that a SET costs neither a copy into the page cache
// nor a wait for the disk. Used with the WAL off, where an acknowledged write that a crash
// loses is already the contract (its index record is not durable either until a flush, and a
// flush first waits for the writes it covers; see BlobFile::Sync).
//
// Until its write completes, a value is read from its buffer (BlobFile keeps the pending
// ranges). Writers wait (backpressure) while the bytes not yet written exceed the budget
// given at construction. Threads are named larder:write.
#pragma once

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
  // while too many bytes are pending. `on_error` runs on a writer thread if the write fails.
  void Submit(BlobFilePtr file, uint64_t offset, std::shared_ptr<PendingWrite> w);
  // Waits until every write queued before the call has completed.
  void Drain();
  uint64_t pending_bytes() const;

 private:
  struct Job {
    BlobFilePtr file;
    uint64_t offset;
    std::shared_ptr<PendingWrite> w;
  };
  void Work();

  const uint64_t max_pending_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, room_cv_, drained_cv_;
  std::deque<Job> queue_;
  uint64_t pending_ = 0;  // bytes queued or being written
  uint64_t in_flight_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace larder
