// Per-chunk reference caches replayed over a Trace: Belady's offline optimum, exact LRU, FIFO
// and S3-FIFO. One replay loop (Replay) drives them all through the same three calls, so they
// see the same accesses as each other and as the replays through Larder.
#include <deque>
#include <limits>
#include <list>
#include <set>
#include <unordered_map>

#include "trace.h"

namespace larder::bench {
namespace {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

// Replays `t` into `cache` as LMCache would: for each request the leading cached chunks are
// hits (Hit), the other chunks are stored (Insert) unless cached (Seen). `a` numbers the
// accesses: request order, chunk order within a request.
template <typename Cache>
SimResult Replay(const Trace& t, Cache& cache) {
  SimResult res;
  uint64_t a = 0;
  for (const auto& r : t.requests) {
    size_t h = 0;
    while (h < r.chunks.size() && cache.Contains(r.chunks[h])) ++h;
    res.hit_tokens += h * t.params.chunk_tokens;
    res.prompt_tokens += r.prompt_tokens;
    for (size_t j = 0; j < r.chunks.size(); ++j, ++a) {
      const uint64_t c = r.chunks[j];
      if (j < h) {
        cache.Hit(c, a);
      } else if (cache.Contains(c)) {
        cache.Seen(c, a);
      } else if (cache.Insert(c, a)) {
        ++res.inserted_chunks;
      }
    }
  }
  return res;
}

// next[a] = index of the next access to the chunk of access a, or kNever.
std::vector<uint64_t> NextUse(const Trace& t) {
  uint64_t total = 0;
  for (const auto& r : t.requests) total += r.chunks.size();
  std::vector<uint64_t> next(total, kNever);
  std::unordered_map<uint64_t, uint64_t> later;
  uint64_t a = total;
  for (auto r = t.requests.rbegin(); r != t.requests.rend(); ++r) {
    for (auto c = r->chunks.rbegin(); c != r->chunks.rend(); ++c) {
      --a;
      auto it = later.find(*c);
      if (it != later.end()) next[a] = it->second;
      later[*c] = a;
    }
  }
  return next;
}

class Belady {
 public:
  Belady(const Trace& t, uint64_t capacity) : next_(NextUse(t)), capacity_(capacity) {}
  bool Contains(uint64_t c) const { return cached_.count(c) != 0; }
  void Hit(uint64_t c, uint64_t a) { Seen(c, a); }
  void Seen(uint64_t c, uint64_t a) {
    auto it = cached_.find(c);
    by_next_.erase({it->second, c});
    it->second = next_[a];
    by_next_.insert({next_[a], c});
  }
  bool Insert(uint64_t c, uint64_t a) {
    if (capacity_ == 0) return false;
    const uint64_t nu = next_[a];
    if (cached_.size() >= capacity_) {
      auto last = std::prev(by_next_.end());
      if (nu >= last->first) return false;  // used later than anything cached: do not admit
      cached_.erase(last->second);
      by_next_.erase(last);
    }
    cached_[c] = nu;
    by_next_.insert({nu, c});
    return true;
  }

 private:
  std::vector<uint64_t> next_;
  uint64_t capacity_;
  std::unordered_map<uint64_t, uint64_t> cached_;    // chunk -> its next use
  std::set<std::pair<uint64_t, uint64_t>> by_next_;  // (next use, chunk)
};

// LRU (hits move a chunk to the front) or FIFO (they do not).
class Queue {
 public:
  Queue(uint64_t capacity, bool lru) : capacity_(capacity), lru_(lru) {}
  bool Contains(uint64_t c) const { return cached_.count(c) != 0; }
  void Hit(uint64_t c, uint64_t) {
    if (lru_) order_.splice(order_.begin(), order_, cached_[c]);
  }
  void Seen(uint64_t, uint64_t) {}
  bool Insert(uint64_t c, uint64_t) {
    if (capacity_ == 0) return false;
    if (cached_.size() >= capacity_) {
      cached_.erase(order_.back());
      order_.pop_back();
    }
    order_.push_front(c);
    cached_[c] = order_.begin();
    return true;
  }

 private:
  uint64_t capacity_;
  bool lru_;
  std::list<uint64_t> order_;  // front: most recent
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> cached_;
};

class S3Fifo {
 public:
  explicit S3Fifo(uint64_t capacity)
      : small_cap_(std::max<uint64_t>(1, capacity / 10)), capacity_(capacity) {}
  bool Contains(uint64_t c) const { return freq_.count(c) != 0; }
  void Hit(uint64_t c, uint64_t) {
    uint8_t& f = freq_[c];
    if (f < 3) ++f;
  }
  void Seen(uint64_t, uint64_t) {}
  bool Insert(uint64_t c, uint64_t) {
    if (capacity_ == 0) return false;
    while (freq_.size() >= capacity_) Evict();
    freq_[c] = 0;
    if (ghost_seq_.erase(c)) {
      main_.push_back(c);
    } else {
      small_.push_back(c);
    }
    return true;
  }

 private:
  void Evict() {
    if (small_.size() >= small_cap_ || main_.empty()) {
      const uint64_t c = small_.front();
      small_.pop_front();
      if (freq_[c] > 0) {
        freq_[c] = 0;
        main_.push_back(c);
        return;
      }
      freq_.erase(c);
      Remember(c);
      return;
    }
    const uint64_t c = main_.front();
    main_.pop_front();
    if (uint8_t& f = freq_[c]; f > 0) {
      --f;
      main_.push_back(c);
      return;
    }
    freq_.erase(c);
  }
  void Remember(uint64_t c) {
    ghost_.push_back({c, ++ghost_serial_});
    ghost_seq_[c] = ghost_serial_;
    while (ghost_.size() > capacity_ - small_cap_) {
      auto [old, seq] = ghost_.front();
      ghost_.pop_front();
      // Only its latest entry in the FIFO stands for it (it may have come back since).
      if (auto it = ghost_seq_.find(old); it != ghost_seq_.end() && it->second == seq) {
        ghost_seq_.erase(it);
      }
    }
  }

  uint64_t small_cap_, capacity_;
  std::unordered_map<uint64_t, uint8_t> freq_;  // cached chunks and their hit counters
  std::deque<uint64_t> small_, main_;
  std::deque<std::pair<uint64_t, uint64_t>> ghost_;   // (chunk, serial), oldest first
  std::unordered_map<uint64_t, uint64_t> ghost_seq_;  // chunks in the ghost -> latest serial
  uint64_t ghost_serial_ = 0;
};

}  // namespace

bool Simulate(const Trace& t, const std::string& policy, uint64_t capacity, SimResult* out) {
  if (policy == "belady") {
    Belady c(t, capacity);
    *out = Replay(t, c);
  } else if (policy == "lru-exact" || policy == "fifo-exact") {
    Queue c(capacity, policy == "lru-exact");
    *out = Replay(t, c);
  } else if (policy == "s3-fifo") {
    S3Fifo c(capacity);
    *out = Replay(t, c);
  } else {
    return false;
  }
  return true;
}

}  // namespace larder::bench
