// larder_native.LmcachePlugin: LMCache's multi-process "native_plugin" L2 adapter contract, over
// an in-process Store or over a running larder-server (server_backend.h);
// larder.lmcache_native.LarderConnector builds one.
//
// The contract (LMCache's NativeConnectorL2Adapter, docs/lmcache.md):
//   event_fd()                       -> int, polled for POLLIN by LMCache's demux thread
//   submit_batch_get(keys, buffers)  -> future id; fills each writable buffer with its value
//   submit_batch_set(keys, buffers)  -> future id; the bytes are copied before it completes
//   submit_batch_exists(keys)        -> future id
//   submit_batch_delete(keys)        -> future id
//   drain_completions()              -> [(future_id, ok, error, [bool per key] | None)]
//   close()
// Submits only take the buffers' addresses (under the GIL), queue the batch and return: LMCache
// calls them holding its adapter lock. Worker threads (no GIL, no Python object) run batches
// with their own Runner and queue completions. In-process, a GET batch is one MultiGetInto, its
// reads spread over the engine's read threads, straight into LMCache's buffers; in server mode
// it is split into one tile per worker, each a pipeline on that worker's connection, each value
// received straight into its buffer, and the tiles' results are merged into one completion. The
// eventfd is a binary wake-up flag: written when a completion is queued and none was signalled,
// read to zero by drain_completions. LMCache keeps every buffer alive until its completion is
// drained; the plugin also holds each buffer's export until then, so that a buffer cannot be
// resized or freed while a worker writes into it or reads from it. Buffers must be contiguous
// (a strided view is refused: BufferError for a memoryview). After close(), event_fd() raises and
// drain_completions() returns what completed before it.
//
// Per key: a GET is true only if the value exists and its size is exactly the buffer's (LMCache
// loads fixed-size chunks); SET is ok only if every put succeeded (the first error is the
// message); EXISTS and DELETE answer per key. Nothing raises for a well-formed batch: failures
// are completions. An empty batch completes at once. `workers` is 1 to kMaxWorkers.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "contiguous_buffer.h"
#include "larder/larder_c.h"

namespace lmcache_plugin {

namespace py = pybind11;

inline constexpr int kMaxWorkers = 256;

enum class Op { kGet, kSet, kExists, kDelete };

// A batch split into tiles: each tile's completion is merged here; the last one completes it.
struct Join {
  size_t tiles_left;
  std::vector<bool> per_key;
  bool ok = true;
  std::string error;
};

struct Batch {
  Op op;
  int64_t id;
  std::vector<std::string> keys;
  std::vector<char*> bufs;  // GET: written; SET: read
  std::vector<size_t> lens;
  std::shared_ptr<Join> join;  // set on a tile: its keys start at `first` in the whole batch
  size_t first = 0;
};

// Splits `b` into `tiles` contiguous tiles (at most one per key) sharing one Join.
inline std::vector<Batch> SplitIntoTiles(Batch b, size_t tiles) {
  const size_t n = b.keys.size();
  tiles = std::min(tiles, n);
  if (tiles <= 1) return {std::move(b)};
  auto join = std::make_shared<Join>(Join{tiles, std::vector<bool>(n, false), true, ""});
  std::vector<Batch> out;
  for (size_t t = 0, lo = 0; t < tiles; ++t) {
    const size_t hi = lo + (n - lo) / (tiles - t);
    Batch tile{b.op, b.id, {}, {}, {}, join, lo};
    for (size_t i = lo; i < hi; ++i) {
      tile.keys.push_back(std::move(b.keys[i]));
      if (!b.bufs.empty()) tile.bufs.push_back(b.bufs[i]), tile.lens.push_back(b.lens[i]);
    }
    out.push_back(std::move(tile));
    lo = hi;
  }
  return out;
}

struct Completion {
  int64_t id;
  bool ok;
  std::string error;
  std::vector<bool> per_key;
  bool has_per_key;
};

// Runs one batch; each worker thread makes its own (a server runner owns a connection).
using Runner = std::function<Completion(const Batch&)>;
using RunnerFactory = std::function<Runner()>;

// Runs one batch against an open store.
inline Completion RunOnStore(larder_t* db, const Batch& b) {
  Completion c{b.id, true, "", {}, b.op != Op::kSet};
  const size_t n = b.keys.size();
  std::vector<const char*> kp(n);
  std::vector<size_t> kl(n);
  for (size_t i = 0; i < n; ++i) kp[i] = b.keys[i].data(), kl[i] = b.keys[i].size();
  c.per_key.assign(n, false);
  char* err = nullptr;
  if (b.op == Op::kGet) {
    std::vector<size_t> vlens(n, 0);
    std::vector<int> codes(n, LARDER_OK);
    std::vector<void*> bufs(b.bufs.begin(), b.bufs.end());
    int rc = larder_multi_get_into(db, n, kp.data(), kl.data(), bufs.data(), b.lens.data(),
                                   vlens.data(), codes.data(), &err);
    for (size_t i = 0; rc == LARDER_OK && i < n; ++i) {
      c.per_key[i] = codes[i] == LARDER_OK && vlens[i] == b.lens[i];
    }
    if (rc != LARDER_OK) c.ok = false, c.error = err ? err : "batch read failed";
  } else if (b.op == Op::kSet) {
    for (size_t i = 0; i < n; ++i) {
      if (larder_put(db, kp[i], kl[i], b.bufs[i], b.lens[i], 0, &err) < 0 && c.ok) {
        c.ok = false;
        c.error = err ? err : "put failed";
      }
      larder_free(err);
      err = nullptr;
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      if (b.op == Op::kExists) {
        c.per_key[i] = larder_exists(db, 1, &kp[i], &kl[i]) == 1;
      } else {
        c.per_key[i] = larder_delete(db, kp[i], kl[i], &err) == LARDER_OK;
        larder_free(err);
        err = nullptr;
      }
    }
  }
  larder_free(err);
  return c;
}

class Plugin {
 public:
  // `keep_alive`: a Python object the runners use (the Store), held as long as the plugin;
  // with `close_keep_alive`, Close calls its close() once the workers are done (a Store the
  // plugin's maker opened for it: its data flushed and its directory unlocked by LMCache's
  // close, not whenever the object is freed). `tiles`: how many pieces a batch is split into,
  // each run by a worker of its own (1: a batch runs whole on one worker).
  Plugin(py::object keep_alive, RunnerFactory make_runner, int workers, size_t tiles = 1,
         bool close_keep_alive = false)
      : keep_alive_(std::move(keep_alive)),
        make_runner_(std::move(make_runner)),
        tiles_(std::max<size_t>(1, tiles)),
        close_keep_alive_(close_keep_alive) {
    if (workers < 1 || workers > kMaxWorkers) {
      throw py::value_error("workers must be 1 to " + std::to_string(kMaxWorkers) + ", not " +
                            std::to_string(workers));
    }
    efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd_ < 0) throw std::runtime_error("eventfd failed");
    try {
      for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
    } catch (const std::system_error& e) {
      Stop();  // joins the workers that did start
      throw std::runtime_error("cannot start " + std::to_string(workers) +
                               " worker threads: " + e.what());
    }
  }
  ~Plugin() { Stop(); }

  int EventFd() const {
    std::lock_guard lock(mu_);
    if (efd_ < 0) throw std::runtime_error("the plugin is closed");
    return efd_;
  }

  int64_t SubmitGet(const std::vector<std::string>& keys, const py::list& bufs) {
    return Submit(Op::kGet, keys, &bufs);
  }
  int64_t SubmitSet(const std::vector<std::string>& keys, const py::list& bufs) {
    return Submit(Op::kSet, keys, &bufs);
  }
  int64_t SubmitExists(const std::vector<std::string>& keys) {
    return Submit(Op::kExists, keys, nullptr);
  }
  int64_t SubmitDelete(const std::vector<std::string>& keys) {
    return Submit(Op::kDelete, keys, nullptr);
  }

  py::list Drain() {
    std::deque<Completion> done;
    {
      py::gil_scoped_release nogil;
      std::lock_guard lock(mu_);
      uint64_t v;
      while (efd_ >= 0 && ::read(efd_, &v, sizeof v) > 0) {
      }
      signalled_ = false;
      done.swap(completions_);
    }
    py::list out;
    for (const Completion& c : done) {
      py::object per_key = py::none();
      if (c.has_per_key) per_key = py::cast(c.per_key);
      out.append(py::make_tuple(c.id, c.ok, c.error, per_key));
      held_.erase(c.id);
    }
    return out;
  }

  void Close() {
    bool stopped;
    {
      py::gil_scoped_release nogil;
      stopped = Stop();
    }
    // Only the call that joined the workers knows no worker touches a buffer any more: a
    // second Close may return while the first still waits for them.
    if (!stopped) return;
    held_.clear();
    if (close_keep_alive_) keep_alive_.attr("close")();
  }

 private:
  int64_t Submit(Op op, const std::vector<std::string>& keys, const py::list* bufs) {
    Batch b{op, next_id_.fetch_add(1), keys, {}, {}, nullptr, 0};
    const int64_t id = b.id;
    if (bufs) {
      if (py::len(*bufs) != keys.size()) {
        throw py::value_error("one buffer per key is needed");
      }
      std::vector<py::buffer_info> held;
      for (const py::handle& h : *bufs) {
        held.push_back(larder_py::ContiguousBuffer(h, /*writable=*/op == Op::kGet));
        b.bufs.push_back(static_cast<char*>(held.back().ptr));
        b.lens.push_back(larder_py::ByteSize(held.back()));
      }
      held_[id] = std::move(held);
    }
    bool closed;
    {
      py::gil_scoped_release nogil;
      std::vector<Batch> tiles;
      if (!b.keys.empty()) tiles = SplitIntoTiles(std::move(b), tiles_);
      std::lock_guard lock(mu_);
      closed = stop_;
      if (!closed && tiles.empty()) Complete(Completion{id, true, "", {}, op != Op::kSet});
      if (!closed && !tiles.empty()) {
        for (Batch& tile : tiles) queue_.push_back(std::move(tile));
        work_cv_.notify_all();
      }
    }
    if (closed) {
      held_.erase(id);
      throw std::runtime_error("the plugin is closed");
    }
    return id;
  }

  // Under mu_.
  void Complete(Completion c) {
    completions_.push_back(std::move(c));
    if (!signalled_) {
      signalled_ = true;
      const uint64_t one = 1;
      [[maybe_unused]] ssize_t w = ::write(efd_, &one, sizeof one);
    }
  }

  void Work() {
    Runner run = make_runner_();
    std::unique_lock lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      Batch b = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      Completion c = run(b);
      lock.lock();
      if (b.join && !MergeTile(b, std::move(c), &c)) continue;
      Complete(std::move(c));
    }
  }

  // Under mu_: folds a tile's completion into its batch's; true with the whole batch's
  // completion in *whole once the last tile is in.
  static bool MergeTile(const Batch& tile, Completion c, Completion* whole) {
    Join& j = *tile.join;
    for (size_t i = 0; i < c.per_key.size(); ++i) j.per_key[tile.first + i] = c.per_key[i];
    if (!c.ok && j.ok) {
      j.ok = false, j.error = std::move(c.error);  // a failed tile's error is the batch's
    } else if (j.error.empty()) {
      j.error = std::move(c.error);  // else the first per-key error, as an untiled batch has it
    }
    if (--j.tiles_left > 0) return false;
    *whole = Completion{tile.id, j.ok, std::move(j.error), std::move(j.per_key), c.has_per_key};
    return true;
  }

  // Stops the workers once; true for the call that did (and joined them).
  bool Stop() {
    {
      std::lock_guard lock(mu_);
      if (stop_) return false;
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();  // queued batches run first: every id completes
    std::lock_guard lock(mu_);
    ::close(efd_);
    efd_ = -1;
    return true;
  }

  py::object keep_alive_;
  RunnerFactory make_runner_;
  const size_t tiles_;
  const bool close_keep_alive_;
  int efd_ = -1;  // -1 once closed
  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::deque<Batch> queue_;
  std::deque<Completion> completions_;
  bool signalled_ = false;
  bool stop_ = false;
  std::atomic<int64_t> next_id_{1};
  // The exports of each batch's buffers until it is drained, so that a buffer the caller
  // resizes or frees too early cannot be written into (LMCache keeps them alive anyway).
  // Touched only with the GIL held.
  std::unordered_map<int64_t, std::vector<py::buffer_info>> held_;
  std::vector<std::thread> threads_;
};

// The in-process runner: batches on `store` (a Store whose WithOpenStore holds it open).
template <class StoreT>
RunnerFactory StoreRunners(StoreT* store) {
  return [store] {
    return [store](const Batch& b) {
      Completion c{b.id, false, "the store is closed", {}, false};
      store->WithOpenStore([&](larder_t* db) { c = RunOnStore(db, b); });
      return c;
    };
  };
}

}  // namespace lmcache_plugin
