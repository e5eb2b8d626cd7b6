#include "value_writer.h"

#include <pthread.h>

namespace larder {

ValueWriter::ValueWriter(int threads, uint64_t max_pending_bytes)
    : max_pending_(max_pending_bytes) {
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      ::pthread_setname_np(::pthread_self(), "larder:write");
      Work();
    });
  }
}

ValueWriter::~ValueWriter() {
  Drain();
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void ValueWriter::Submit(BlobFilePtr file, uint64_t offset, std::shared_ptr<PendingWrite> w,
                         bool wait_for_room) {
  const uint64_t n = w->capacity;
  std::unique_lock lock(mu_);
  // One write larger than the whole budget still goes, alone.
  if (wait_for_room) room_cv_.wait(lock, [&] { return HasRoomForLocked(n); });
  // A writer needs waking only when the queue was empty (writers wait for work, not for a
  // time) or the write is due at once; otherwise one already waits for the front's due time,
  // which a job at the back does not move. Waking one per Submit cost two context switches
  // per SET.
  const bool was_empty = queue_.empty();
  pending_ += n;
  // Nobody drops `w` before Submit returns: its index record is written after (StoreImpl).
  w->on_release = [this, n] { Released(n); };
  queue_.push_back(Job{std::move(file), offset, std::move(w), ++submitted_,
                       std::chrono::steady_clock::now() + kWriteBehind});
  if (was_empty || FrontIsDue()) work_cv_.notify_one();
}

bool ValueWriter::HasRoomFor(uint64_t n) const {
  std::lock_guard lock(mu_);
  return HasRoomForLocked(n);
}

bool ValueWriter::FrontIsDue() const {
  const Job& front = queue_.front();
  return stop_ || front.seq <= hurried_ || 2 * pending_ >= max_pending_ ||
         std::chrono::steady_clock::now() >= front.due;
}

void ValueWriter::Hurry() {
  {
    std::lock_guard lock(mu_);
    hurried_ = submitted_;
  }
  work_cv_.notify_all();
}

void ValueWriter::Work() {
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    PopReleasedFront();
    if (queue_.empty()) {
      if (stop_) return;
      continue;
    }
    if (!FrontIsDue()) {
      WaitForFront(lock);
      continue;
    }
    Job job = std::move(queue_.front());
    queue_.pop_front();
    // Another writer takes the next job, or waits for its time if none does.
    if (!queue_.empty() && (!front_timer_ || FrontIsDue())) work_cv_.notify_one();
    ++in_flight_;
    lock.unlock();
    job.file->WritePending(job.offset, *job.w);
    // Dropped unwritten: its bytes left the count then (Released).
    const uint64_t n = job.w->released ? 0 : job.w->capacity;
    job.w.reset();
    lock.lock();
    --in_flight_;
    pending_ -= n;
    room_cv_.notify_all();
    NotifyIfDrained();
  }
}

void ValueWriter::PopReleasedFront() {
  // Dropped unwritten (its bytes left the count then): nothing to write, whenever it falls due.
  // So a key overwritten in a burst leaves the writers nothing to wake for but its last version.
  while (!queue_.empty() && queue_.front().w->released) queue_.pop_front();
  NotifyIfDrained();
}

void ValueWriter::WaitForFront(std::unique_lock<std::mutex>& lock) {
  if (front_timer_) {  // another writer waits for the front's time: wait for a notify only
    work_cv_.wait(lock);
    return;
  }
  front_timer_ = true;
  work_cv_.wait_until(lock, queue_.front().due + kWakeSlack);
  front_timer_ = false;
}

void ValueWriter::NotifyIfDrained() {
  if (queue_.empty() && in_flight_ == 0) drained_cv_.notify_all();
}

void ValueWriter::Released(uint64_t n) {
  {
    std::lock_guard lock(mu_);
    pending_ -= n;
  }
  room_cv_.notify_all();
}

void ValueWriter::Drain() {
  Hurry();
  std::unique_lock lock(mu_);
  drained_cv_.wait(lock, [&] { return queue_.empty() && in_flight_ == 0; });
}

uint64_t ValueWriter::pending_bytes() const {
  std::lock_guard lock(mu_);
  return pending_;
}

}  // namespace larder
