// Stats: a snapshot of a Store's counters.
#pragma once

#include <cstdint>

namespace larder {

struct Stats {
  uint64_t keys = 0;            // live entries (expired ones not counted)
  uint64_t live_bytes = 0;      // sum of live value sizes
  uint64_t disk_bytes = 0;      // bytes of the data directory's SST + blob + WAL files
  uint64_t pending_bytes = 0;   // memtable bytes not yet flushed to disk
  uint64_t max_disk_bytes = 0;  // the budget in force
  uint64_t generations = 0;     // value column families alive
  uint64_t hits = 0;            // Get/MultiGet calls that returned a value
  uint64_t misses = 0;          // Get/MultiGet calls that returned NotFound
  uint64_t reuses = 0;          // hits + Touch calls on live keys (what eviction counts)
  uint64_t evicted_keys = 0;    // live entries dropped by eviction
  uint64_t evicted_bytes = 0;
  uint64_t reinserted_keys = 0;  // entries kept by eviction (re-written to the newest generation)
  uint64_t reinserted_bytes = 0;
  uint64_t expired_keys = 0;   // entries removed because their TTL passed
  uint64_t corruptions = 0;    // values that failed verification (served as misses)
  uint64_t bytes_read = 0;     // value bytes returned to callers
  uint64_t bytes_written = 0;  // value bytes accepted by Put (reinsertions not included)
};

}  // namespace larder
