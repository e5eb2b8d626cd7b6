#include "demotion.h"

#include <algorithm>

namespace larder {

namespace {

// Sampled requests between halvings of the hit counts, per key a shadow holds: a few of the
// cache's lifetimes, so the choice follows a change of traffic.
constexpr int64_t kDecayPerKey = 8;
// Sampled requests, per key a shadow holds, before any depth but none is chosen.
constexpr int64_t kWarmUpPerKey = 4;

}  // namespace

FirstWriteDemotion::FirstWriteDemotion() {
  for (int i = 0; i < kLevels; ++i) shadows_[i].depth = Fraction(i);
}

uint32_t FirstWriteDemotion::SampleValue(uint64_t hash) {
  return static_cast<uint32_t>((hash * 0x9E3779B97F4A7C15ull) >> 32);
}

bool FirstWriteDemotion::Shadow::Request(uint64_t key, int64_t stamp, uint64_t capacity) {
  auto it = stamp_of.find(key);
  if (it != stamp_of.end()) {
    by_stamp.erase(it->second);
    it->second = stamp;
    by_stamp.emplace(stamp, key);
    return true;
  }
  int64_t entered = stamp;
  if (depth > 0 && !by_stamp.empty()) {
    const int64_t oldest = by_stamp.begin()->first;
    entered = stamp - static_cast<int64_t>(depth * static_cast<double>(stamp - oldest));
    // Stamps stay unique: a clash moves the newcomer just below the stamp it met.
    while (by_stamp.contains(entered)) --entered;
  }
  stamp_of.emplace(key, entered);
  by_stamp.emplace(entered, key);
  Trim(capacity);
  return false;
}

void FirstWriteDemotion::Shadow::Trim(uint64_t capacity) {
  while (stamp_of.size() > capacity && !by_stamp.empty()) {
    stamp_of.erase(by_stamp.begin()->second);
    by_stamp.erase(by_stamp.begin());
  }
}

void FirstWriteDemotion::Shadow::Forget(uint32_t threshold) {
  for (auto it = by_stamp.begin(); it != by_stamp.end();) {
    if (SampleValue(it->second) < threshold) {
      ++it;
      continue;
    }
    stamp_of.erase(it->second);
    it = by_stamp.erase(it);
  }
}

void FirstWriteDemotion::Request(uint64_t hash) {
  if (SampleValue(hash) >= threshold_.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(mu_);
  if (capacity_ == 0) return;  // no eviction yet: every policy holds everything
  ++clock_;
  for (int i = 0; i < kLevels; ++i) {
    if (shadows_[i].Request(hash, clock_ * kLevels + i, capacity_)) hits_[i] += 1;
  }
  if (clock_ >= next_decay_) {
    for (double& h : hits_) h /= 2;
    next_decay_ = clock_ + kDecayPerKey * static_cast<int64_t>(capacity_);
  }
  Choose();
}

void FirstWriteDemotion::Choose() {
  int best = 0;
  for (int i = 1; i < kLevels; ++i) {
    if (hits_[i] > hits_[best]) best = i;
  }
  const bool warm = clock_ >= kWarmUpPerKey * static_cast<int64_t>(capacity_);
  const bool wins = hits_[best] > hits_[0] * (1 + kWinMargin);
  chosen_.store(warm && wins ? best : 0, std::memory_order_relaxed);
}

void FirstWriteDemotion::SetCapacity(uint64_t keys) {
  std::lock_guard lock(mu_);
  uint32_t threshold = threshold_.load(std::memory_order_relaxed);
  uint64_t capacity = (keys * threshold) >> 32;
  if (capacity > kMaxShadowKeys) {
    // Sample fewer keys so that each shadow stays within kMaxShadowKeys; the keys left out go.
    threshold = static_cast<uint32_t>((kMaxShadowKeys << 32) / keys);
    threshold_.store(threshold, std::memory_order_relaxed);
    for (Shadow& s : shadows_) s.Forget(threshold);
    capacity = kMaxShadowKeys;
  }
  capacity_ = std::max<uint64_t>(capacity, 1);
  for (Shadow& s : shadows_) s.Trim(capacity_);
  if (next_decay_ == 0) next_decay_ = clock_ + kDecayPerKey * static_cast<int64_t>(capacity_);
}

}  // namespace larder
