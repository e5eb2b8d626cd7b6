// Store: the Larder engine. A disk-budgeted, TTL-aware store of large immutable values kept in
// RocksDB blob files, evicting the entries least recently reused when the budget is reached.
//
// Thread-safety: every method may be called from any number of threads at once.
// Keys are binary strings of 1..Options::max_key_bytes bytes; values are binary strings of
// 0..Options::max_value_bytes bytes. Times are Unix milliseconds from Options::clock.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "larder/options.h"
#include "larder/stats.h"
#include "larder/status.h"

namespace larder {

// A value read from the store, verified against its checksum. It pins the bytes RocksDB read
// (no copy after the read); the bytes stay valid as long as the Value lives.
class Value {
 public:
  Value();
  ~Value();
  Value(Value&&) noexcept;
  Value& operator=(Value&&) noexcept;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }

 private:
  friend class StoreImpl;
  struct Pin;
  std::unique_ptr<Pin> pin_;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// TTL sentinels returned by Store::Ttl (Redis's TTL/PTTL conventions).
inline constexpr int64_t kTtlNoKey = -2;     // the key does not exist
inline constexpr int64_t kTtlNoExpiry = -1;  // the key exists and has no expiry

// Put modes (Redis SET NX / XX).
enum class PutMode { kAlways, kIfAbsent, kIfPresent };

struct PutOptions {
  // Absolute expiry (Unix ms); 0 = none.
  int64_t expire_at_ms = 0;
  PutMode mode = PutMode::kAlways;
  // Keep the existing entry's expiry (Redis KEEPTTL); expire_at_ms is then ignored.
  bool keep_ttl = false;
};

// One page of a Scan.
struct ScanPage {
  uint64_t next_cursor = 0;  // 0 when the scan is complete
  std::vector<std::string> keys;
};

// What the store knows of a key without reading its value.
struct KeyInfo {
  uint64_t value_size = 0;
  int64_t expire_at_ms = 0;    // 0 = none
  int64_t created_ms = 0;      // when this version was written
  int64_t last_access_ms = 0;  // last write, hit or touch
  uint32_t reuse_count = 0;    // hits + touches since the write
  uint64_t generation = 0;
};

class Store {
 public:
  // Opens (or creates) the store in `dir`. Fails with Busy if another process holds it.
  static Result<std::unique_ptr<Store>> Open(const Options& options, const std::string& dir);

  virtual ~Store() = default;

  // Stores `value` under `key`, replacing any previous value. Evicts as needed to stay within
  // the disk budget; with EvictionPolicy::kNone a write that does not fit fails with NoSpace.
  // Returns ConditionNotMet (nothing written) when `opts.mode` is kIfAbsent/kIfPresent and the
  // condition does not hold.
  virtual Status Put(std::string_view key, std::string_view value, const PutOptions& opts) = 0;
  Status Put(std::string_view key, std::string_view value, int64_t ttl_ms = 0);

  // The value of `key`, verified, or NotFound (absent, expired, or failed verification — the
  // last is counted in Stats::corruptions and the key removed). Counts a reuse.
  virtual Result<Value> Get(std::string_view key) = 0;

  // Get for many keys; one Result per key, in order.
  virtual std::vector<Result<Value>> MultiGet(const std::vector<std::string_view>& keys) = 0;

  // How many of `keys` exist (a key listed twice counts twice), from the index; no disk I/O.
  virtual uint64_t Exists(const std::vector<std::string_view>& keys) = 0;
  bool Contains(std::string_view key) { return Exists({key}) == 1; }

  // How many leading keys of the ordered list exist: the length of the cached prefix.
  virtual uint64_t PrefixCount(const std::vector<std::string_view>& keys) = 0;

  // Removes `key`. NotFound if it did not exist.
  virtual Status Delete(std::string_view key) = 0;

  // Sets an absolute expiry (Unix ms) on an existing key; 0 removes it (Persist). A time in the
  // past deletes the key. NotFound if the key does not exist.
  virtual Status SetExpiry(std::string_view key, int64_t expire_at_ms) = 0;
  Status Expire(std::string_view key, int64_t ttl_ms);
  Status Persist(std::string_view key) { return SetExpiry(key, 0); }

  // Remaining time to live in ms, or kTtlNoKey / kTtlNoExpiry.
  virtual int64_t Ttl(std::string_view key) = 0;

  // Metadata of a live key, without reading its value. NotFound if absent or expired.
  virtual Result<KeyInfo> Info(std::string_view key) = 0;

  // Counts a reuse of `key` without reading it (what a hit would do for eviction). Returns how
  // many of the keys existed.
  virtual uint64_t Touch(const std::vector<std::string_view>& keys) = 0;

  // Iterates live keys in a stable order (by key hash). Start with cursor 0; continue with
  // next_cursor until it is 0. Every key present for the whole scan is returned at least once.
  // `pattern` is a Redis glob ("" or "*" = all); `count` bounds the keys examined per call.
  virtual ScanPage Scan(uint64_t cursor, std::string_view pattern, size_t count) = 0;

  // Removes every key and drops every generation.
  virtual Status Clear() = 0;

  // Drops expired entries and fully expired generations now (also runs in the background).
  virtual void Maintain() = 0;

  // Evicts whole generations, by the configured policy, until disk usage is at most
  // `target_bytes` (or only the newest generation is left). EvictionPolicy::kNone evicts
  // in FIFO order here, since the caller asked explicitly.
  virtual Status EvictTo(uint64_t target_bytes) = 0;

  // A snapshot of the counters.
  virtual Stats GetStats() = 0;
  virtual void ResetCounters() = 0;

  // Writes memtables to disk (blob files), so that a crash loses nothing written before.
  virtual Status Flush() = 0;

  // Compacts the metadata and the generations' SSTs (tiny: keys and blob references). Never
  // rewrites values: blob garbage collection is off, space comes back by dropping generations.
  virtual Status Compact() = 0;

  // Flushes (when the WAL is off) and closes. Further calls return IOError. Also called by
  // the destructor.
  virtual Status Close() = 0;
};

// Checks a data directory's values and metadata without serving it (the directory must not be
// open elsewhere): every value against its XXH3 and RocksDB's blob-record CRC, and every block
// of every SST file (metadata, inline values) against RocksDB's block checksums. `progress` is
// called with (entries done, entries total) now and then. A directory too damaged to open is
// an error status naming the file.
struct VerifyReport {
  uint64_t entries = 0;
  uint64_t ok = 0;
  uint64_t corrupt = 0;               // value or metadata failed verification
  uint64_t missing = 0;               // metadata without its value
  uint64_t sst_files = 0;             // SST files checked
  uint64_t corrupt_sst_files = 0;     // SST files with a block failing its checksum
  std::vector<std::string> problems;  // one line per bad entry or file (first 1000)
  bool clean() const { return corrupt == 0 && missing == 0 && corrupt_sst_files == 0; }
};
Result<VerifyReport> Verify(const std::string& dir,
                            void (*progress)(uint64_t done, uint64_t total, void* arg) = nullptr,
                            void* arg = nullptr);

}  // namespace larder
