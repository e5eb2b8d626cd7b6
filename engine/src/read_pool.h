// ReadPool: the engine's read threads, which keep several reads in flight for MultiGetInto so
// that a batch of cold values keeps the disk's queue full. Threads start on first use and are
// named larder:read.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace larder {

class ReadPool {
 public:
  explicit ReadPool(int threads);
  ~ReadPool();
  ReadPool(const ReadPool&) = delete;
  ReadPool& operator=(const ReadPool&) = delete;

  // Runs fn(i) for every i in [0, n), on up to `threads` pool threads plus the calling thread,
  // and returns when all have returned.
  void ParallelFor(size_t n, const std::function<void(size_t)>& fn);

 private:
  struct Batch;
  void Work();
  void StartLocked();

  const int threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Batch>> queue_;  // one entry per helper thread wanted
  std::vector<std::thread> workers_;
  bool stop_ = false;
};

}  // namespace larder
