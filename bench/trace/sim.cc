// Per-chunk reference caches replayed over a Trace: Belady's offline optimum and exact LRU.
#include <limits>
#include <list>
#include <set>
#include <unordered_map>

#include "trace.h"

namespace larder::bench {
namespace {

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

// next[a] = index of the next access to the chunk of access a (accesses numbered in request
// order, chunk order within a request), or kNever.
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

}  // namespace

SimResult SimulateBelady(const Trace& t, uint64_t capacity) {
  SimResult res;
  std::vector<uint64_t> next = NextUse(t);
  std::unordered_map<uint64_t, uint64_t> cached;    // chunk -> its next use
  std::set<std::pair<uint64_t, uint64_t>> by_next;  // (next use, chunk)
  uint64_t a = 0;
  for (const auto& r : t.requests) {
    size_t h = 0;
    while (h < r.chunks.size() && cached.count(r.chunks[h])) ++h;
    res.hit_tokens += h * t.params.chunk_tokens;
    res.prompt_tokens += r.prompt_tokens;
    for (size_t j = 0; j < r.chunks.size(); ++j, ++a) {
      uint64_t c = r.chunks[j], nu = next[a];
      auto it = cached.find(c);
      if (it != cached.end()) {
        by_next.erase({it->second, c});
        it->second = nu;
        by_next.insert({nu, c});
        continue;
      }
      if (j < h || capacity == 0) continue;
      if (cached.size() >= capacity) {
        auto last = std::prev(by_next.end());
        if (nu >= last->first) continue;  // used later than anything cached: do not admit
        cached.erase(last->second);
        by_next.erase(last);
      }
      cached[c] = nu;
      by_next.insert({nu, c});
      ++res.inserted_chunks;
    }
  }
  return res;
}

SimResult SimulateLru(const Trace& t, uint64_t capacity) {
  SimResult res;
  std::list<uint64_t> order;  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> cached;
  for (const auto& r : t.requests) {
    size_t h = 0;
    while (h < r.chunks.size() && cached.count(r.chunks[h])) ++h;
    res.hit_tokens += h * t.params.chunk_tokens;
    res.prompt_tokens += r.prompt_tokens;
    for (size_t j = 0; j < h; ++j) order.splice(order.begin(), order, cached[r.chunks[j]]);
    for (size_t j = h; j < r.chunks.size() && capacity > 0; ++j) {
      uint64_t c = r.chunks[j];
      if (cached.count(c)) continue;
      if (cached.size() >= capacity) {
        cached.erase(order.back());
        order.pop_back();
      }
      order.push_front(c);
      cached[c] = order.begin();
      ++res.inserted_chunks;
    }
  }
  return res;
}

}  // namespace larder::bench
