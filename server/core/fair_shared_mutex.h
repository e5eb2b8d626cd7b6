// FairSharedMutex: a reader/writer lock that lets a waiting writer in before new readers.
// (glibc's rwlock prefers readers, so EXEC/INCR could starve behind a steady stream of GETs
// each holding the shared side across a disk read.) Meets SharedMutex: usable with
// std::shared_lock / std::unique_lock.
#pragma once

#include <condition_variable>
#include <mutex>

namespace larder::server {

class FairSharedMutex {
 public:
  void lock() {
    std::unique_lock<std::mutex> l(mu_);
    ++writers_waiting_;
    cv_.wait(l, [this] { return !writer_ && readers_ == 0; });
    --writers_waiting_;
    writer_ = true;
  }
  void unlock() {
    {
      std::lock_guard<std::mutex> l(mu_);
      writer_ = false;
    }
    cv_.notify_all();
  }
  // lock_shared without waiting: false where lock_shared would wait (a writer holds the lock
  // or waits for it).
  bool try_lock_shared() {
    std::lock_guard<std::mutex> l(mu_);
    if (writer_ || writers_waiting_ > 0) return false;
    ++readers_;
    return true;
  }
  void lock_shared() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [this] { return !writer_ && writers_waiting_ == 0; });
    ++readers_;
  }
  void unlock_shared() {
    bool last;
    {
      std::lock_guard<std::mutex> l(mu_);
      last = --readers_ == 0;
    }
    if (last) cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int readers_ = 0;
  int writers_waiting_ = 0;
  bool writer_ = false;
};

}  // namespace larder::server
