// RAM per key after a restart (larder-bench --parts ram): write LMCache-shaped keys with small
// blob-file values, close the store, then open it in a fresh process (this binary re-executed)
// and measure the resident memory Store::Open adds.
#pragma once

#include <cstdint>
#include <string>

namespace larder::bench {

struct RamPerKeyConfig {
  uint64_t keys = 300000;
  uint64_t value_bytes = 16 << 10;       // the smallest values that go to blob files
  uint64_t max_disk_bytes = 5ull << 30;  // the store's budget: bounds the disk used
};

// LMCache's MP key of the i-th value: "<model>@<kv_rank:08x>@<object_group_id:x>@<64 hex>",
// eight tensor-parallel ranks per chunk (rank = i % 8, chunk = i / 8).
std::string LmcacheKey(uint64_t i);

// Writes c.keys keys into a new store under `dir`, closes it, re-executes /proc/self/exe with
// `--ram_measure_dir=<dir> --ram_max_disk_bytes=<budget>` and reads the child's JSON line
// (see RamMeasureChild). On success *json is one JSON object (no newline) with both sides'
// figures and the function returns 0; otherwise a message on stderr and a non-zero status.
// Fails before writing if the filesystem has less free space than the values need.
int RamPerKey(const std::string& dir, const RamPerKeyConfig& c, std::string* json);

// The re-executed process: VmRSS (/proc/self/status) just before and just after Store::Open
// of `dir` (the open loads the index), the engine's keys and index_memory_bytes; prints them
// as the members of one JSON object on one line and returns 0 (non-zero if the open failed).
int RamMeasureChild(const std::string& dir, uint64_t max_disk_bytes);

}  // namespace larder::bench
