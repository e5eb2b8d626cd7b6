#include "read_pool.h"

#include <pthread.h>

#include <atomic>

namespace larder {

struct ReadPool::Batch {
  size_t n;
  const std::function<void(size_t)>* fn;
  std::atomic<size_t> next{0};
  std::atomic<size_t> finished{0};
  std::mutex mu;
  std::condition_variable done_cv;

  // Claims and runs items until none is left.
  void Drain() {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      (*fn)(i);
      if (finished.fetch_add(1) + 1 == n) {
        std::lock_guard lock(mu);
        done_cv.notify_all();
      }
    }
  }
};

ReadPool::ReadPool(int threads) : threads_(threads < 1 ? 1 : threads) {}

ReadPool::~ReadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ReadPool::StartLocked() {
  if (!workers_.empty()) return;
  for (int i = 0; i < threads_; ++i) {
    workers_.emplace_back([this] {
      ::pthread_setname_np(::pthread_self(), "larder:read");
      Work();
    });
  }
}

void ReadPool::Work() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    std::shared_ptr<Batch> b = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    b->Drain();
    lock.lock();
  }
}

void ReadPool::ParallelFor(size_t n, const std::function<void(size_t)>& fn) {
  if (n == 0) return;
  auto b = std::make_shared<Batch>();
  b->n = n;
  b->fn = &fn;
  const size_t helpers = std::min(n - 1, static_cast<size_t>(threads_));
  if (helpers > 0) {
    {
      std::lock_guard lock(mu_);
      StartLocked();
      for (size_t i = 0; i < helpers; ++i) queue_.push_back(b);
    }
    cv_.notify_all();
  }
  b->Drain();
  std::unique_lock lock(b->mu);
  b->done_cv.wait(lock, [&] { return b->finished.load() == n; });
}

}  // namespace larder
