// Replaying a Trace into Larder, as LMCache drives a store: per request, how many leading chunk
// keys are stored (one ordered lookup), a checked read of each of them, then a write of every
// later chunk the store does not hold. Two backends run the same loop (ReplayTrace): liblarder
// in this process, and a larder-server this tool starts, spoken to over RESP.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "larder/options.h"
#include "trace.h"

namespace larder::bench {

// What one replay measured.
struct ReplayResult {
  uint64_t hit_tokens = 0, prompt_tokens = 0;
  uint64_t written_bytes = 0;     // value bytes the store wrote: Puts and reinsertions
  uint64_t reinserted_bytes = 0;  // of which reinsertions
  uint64_t device_bytes = 0;      // bytes the store's process caused to be written (/proc io)
  uint64_t live_bytes = 0;        // value bytes held at the end
  uint64_t max_disk_bytes = 0;    // the budget in force
  uint64_t bad = 0;               // reads of wrong or missing bytes, failed writes
  double seconds = 0;
};

// The store a replay runs against.
class ChunkStore {
 public:
  virtual ~ChunkStore() = default;
  // How many leading keys are stored.
  virtual uint64_t PrefixCount(const std::vector<std::string>& keys) = 0;
  // Reads keys[0..n); returns how many leading ones came back whole with the value stamped
  // with their chunk (chunks[i] in the first 8 bytes).
  virtual uint64_t ReadChecked(const std::vector<std::string>& keys,
                               const std::vector<uint64_t>& chunks, uint64_t n) = 0;
  // For i in [from, keys.size()): stores `value` stamped with chunks[i] under keys[i] unless
  // the key is stored. Returns the failed writes.
  virtual uint64_t StoreMissing(const std::vector<std::string>& keys,
                                const std::vector<uint64_t>& chunks, uint64_t from,
                                std::string& value) = 0;
  // The store's clock is now `ms` after the trace's start (the server keeps its own).
  virtual void AdvanceTo(int64_t ms) = 0;
  // Flushes, and fills the result's store-side figures.
  virtual void Finish(ReplayResult* r) = 0;
};

// How each replay's store is configured.
struct ReplayConfig {
  uint64_t max_disk_bytes = 0;
  std::string policy;  // an eviction-policy name (larder::ParseEvictionPolicy)
  std::string dir;     // the store's directory (created; removed by the caller)
};

// liblarder in this process, on engine defaults but for the budget and the policy. nullptr
// with a message on stderr if it cannot open.
std::unique_ptr<ChunkStore> OpenEngineStore(const ReplayConfig& c);

// A larder-server started from `server_bin` on a free local port, on its defaults but for the
// budget, the policy and the directory (its log: <dir>.log; its INFO larder at the end of the
// replay: <dir>.info); stopped when the ChunkStore goes.
// Reads values of up to `value_bytes`. nullptr with a message on stderr if it does not start.
std::unique_ptr<ChunkStore> StartServerStore(const ReplayConfig& c, const std::string& server_bin,
                                             uint64_t value_bytes);

// Replays `t` into `store` with values of `value_bytes` bytes (incompressible).
ReplayResult ReplayTrace(const Trace& t, ChunkStore& store, uint64_t value_bytes);

}  // namespace larder::bench
