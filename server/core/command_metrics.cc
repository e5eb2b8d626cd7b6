#include "core/command_metrics.h"

#include <algorithm>
#include <bit>
#include <cstdio>

namespace larder::server {

size_t LatencyHistogram::BucketOf(uint64_t usec) {
  if (usec < kSub) return static_cast<size_t>(usec);
  const int power = std::bit_width(usec) - 1;  // >= kSubBits
  if (power >= kMaxPower) return kBuckets - 1;
  const uint64_t sub = (usec >> (power - kSubBits)) & (kSub - 1);
  return static_cast<size_t>(kSub + (power - kSubBits) * kSub + sub);
}

uint64_t LatencyHistogram::LargestIn(size_t bucket) {
  if (bucket < kSub) return bucket;
  if (bucket >= kBuckets - 1) return UINT64_MAX;
  const int power = static_cast<int>((bucket - kSub) / kSub) + kSubBits;
  const uint64_t sub = (bucket - kSub) % kSub;
  const int shift = power - kSubBits;
  return ((kSub + sub + 1) << shift) - 1;
}

uint64_t LatencyHistogram::Quantile(double p) const {
  const uint64_t total = count();
  if (total == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(p * static_cast<double>(total) + 0.5);
  rank = std::max<uint64_t>(1, std::min(rank, total));
  uint64_t seen = 0;
  for (size_t b = 0; b < kBuckets; ++b) {
    seen += buckets_[b].load(std::memory_order_relaxed);
    if (seen >= rank) return LargestIn(b);
  }
  return LargestIn(kBuckets - 2);  // counts raced ahead of the buckets
}

LatencyHistogram::Cumulative LatencyHistogram::CountsBelow(std::span<const uint64_t> bounds) const {
  Cumulative out;
  out.below.reserve(bounds.size());
  for (size_t b = 0; b < kBuckets; ++b) {
    while (out.below.size() < bounds.size() && LargestIn(b) >= bounds[out.below.size()]) {
      out.below.push_back(out.total);
    }
    out.total += buckets_[b].load(std::memory_order_relaxed);
  }
  out.below.resize(bounds.size(), out.total);
  return out;
}

void LatencyHistogram::Reset() {
  for (auto& b : buckets_) b.store(0, std::memory_order_relaxed);
  count_.store(0, std::memory_order_relaxed);
  sum_usec_.store(0, std::memory_order_relaxed);
}

void CommandStats::Reset() {
  calls.store(0, std::memory_order_relaxed);
  usec.store(0, std::memory_order_relaxed);
  rejected_calls.store(0, std::memory_order_relaxed);
  failed_calls.store(0, std::memory_order_relaxed);
  latency.Reset();
}

void CommandStatsTable::Init(std::span<const std::string_view> names) {
  names_.assign(names.begin(), names.end());
  stats_ = std::make_unique<CommandStats[]>(names_.size());
}

void CommandStatsTable::Reset() {
  for (size_t i = 0; i < names_.size(); ++i) stats_[i].Reset();
}

std::string FormatUsec(double usec) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.3f", usec);
  return buf;
}

}  // namespace larder::server
