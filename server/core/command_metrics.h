// Per-command statistics: calls, time, failures and a latency histogram for every command of
// the table. INFO commandstats / latencystats, LATENCY HISTOGRAM and the Prometheus endpoint's
// larder_command_* families all read them; dispatch records one call per executed command.
//
// Thread-safe: recording is a few relaxed atomic adds; readers see each counter consistently
// but not the set of them as one snapshot (as INFO in Redis).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace larder::server {

// Durations in whole microseconds, in log-linear buckets: exact below 16 us, then 16 buckets per
// power of two (each within 1/16 = 6.25% of its values), up to 2^40 us (12.7 days; longer ones
// count in the last bucket).
class LatencyHistogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  static constexpr int kMaxPower = 40;
  static constexpr size_t kBuckets = kSub + (kMaxPower - kSubBits) * kSub;

  void Record(uint64_t usec) {
    buckets_[BucketOf(usec)].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_usec_.fetch_add(usec, std::memory_order_relaxed);
  }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t sum_usec() const { return sum_usec_.load(std::memory_order_relaxed); }

  // The smallest bucket bound at or above which fraction p (0..1] of the recorded values
  // lie, in microseconds: the largest value the p-quantile's bucket holds. 0 if empty.
  uint64_t Quantile(double p) const;
  // The cumulative distribution at `bounds` (increasing): below[i] counts the values of the
  // buckets wholly below bounds[i] (exactly the values below it when it is a power of two or at
  // most 16), and `total` all values. One pass over the buckets, so the counts agree with each
  // other even while values are being recorded.
  struct Cumulative {
    std::vector<uint64_t> below;
    uint64_t total = 0;
  };
  Cumulative CountsBelow(std::span<const uint64_t> bounds) const;
  void Reset();

  static size_t BucketOf(uint64_t usec);
  static uint64_t LargestIn(size_t bucket);  // the largest value bucket `bucket` holds

 private:
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
  std::atomic<uint64_t> count_{0}, sum_usec_{0};
};

struct CommandStats {
  std::atomic<uint64_t> calls{0};           // executed (queued by MULTI: when EXEC runs them)
  std::atomic<uint64_t> usec{0};            // time spent executing
  std::atomic<uint64_t> rejected_calls{0};  // refused before running (arity, auth, context)
  std::atomic<uint64_t> failed_calls{0};    // ran and replied an error
  LatencyHistogram latency;

  void Reset();
};

// One CommandStats per command, indexed by the command's position in the table.
class CommandStatsTable {
 public:
  // Sizes the table for `names` (the command table's, in order). Called once, before any
  // command runs.
  void Init(std::span<const std::string_view> names);

  size_t size() const { return names_.size(); }
  std::string_view name(size_t id) const { return names_[id]; }
  CommandStats& at(size_t id) { return stats_[id]; }
  const CommandStats& at(size_t id) const { return stats_[id]; }
  void Reset();  // CONFIG RESETSTAT

 private:
  std::vector<std::string_view> names_;
  std::unique_ptr<CommandStats[]> stats_;
};

// Microseconds with Redis's three decimals ("12.000"), as INFO's latency fields print them.
std::string FormatUsec(double usec);

}  // namespace larder::server
