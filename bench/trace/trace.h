// Request traces in LMCache's key scheme: a synthetic multi-turn chat trace, or a trace file in
// Mooncake's format.
//
// Model: `users` users return to the service with Zipf(`zipf_s`) popularity. `concurrency`
// sessions are active at once; each step one active session (chosen uniformly) sends its next
// turn. A session is a visit of 1..2*visit_turns_mean-1 turns (uniform) to the user's current
// conversation; when the visit or the conversation ends, the slot goes to a newly drawn user.
// A conversation has turns_min..turns_max turns (uniform) and starts with one of
// `system_prompts` shared system prompts (Zipf(1) popularity, lengths sys_tokens_min +
// id * sys_tokens_step). A turn's prompt is the whole conversation so far (system prompt, every
// earlier input and output) plus a new input of input_tokens_mean +- input_tokens_spread
// tokens (uniform); the answer then adds output_tokens_min..output_tokens_max tokens.
//
// Chunks: every full run of `chunk_tokens` tokens of a prompt is one chunk; its key is a hash
// of the whole token prefix up to the chunk's end (a hash chain over the chunks), so equal
// prefixes (shared system prompts, earlier turns) give equal keys. A partial last chunk is
// not stored (LMCache stores only full chunks with save_unfull_chunk off).
//
// Everything derives from `seed`: the same params give the same trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace larder::bench {

struct TraceParams {
  uint64_t seed = 1;
  uint64_t turns = 3000;  // requests in the trace
  uint32_t users = 600;
  double zipf_s = 1.0;
  uint32_t concurrency = 32;
  uint32_t visit_turns_mean = 3;
  uint32_t turns_min = 2, turns_max = 28;
  uint32_t system_prompts = 8;
  uint32_t sys_tokens_min = 768, sys_tokens_step = 256;
  uint32_t input_tokens_mean = 2200, input_tokens_spread = 500;
  uint32_t output_tokens_min = 100, output_tokens_max = 230;
  uint32_t chunk_tokens = 256;
  uint32_t ms_per_request = 100;  // arrival times: one request every this many ms
};

struct TraceRequest {
  uint32_t user = 0;
  int64_t arrival_ms = 0;        // since the trace's start
  uint64_t prompt_tokens = 0;    // the whole prompt, partial last chunk included
  std::vector<uint64_t> chunks;  // the prompt's full chunks' prefix hashes, in order
};

struct Trace {
  TraceParams params;
  std::vector<TraceRequest> requests;
  uint64_t unique_chunks = 0;  // distinct chunk hashes in the trace (the working set)
};

Trace GenerateTrace(const TraceParams& p);

// A trace file in the format of Mooncake's FAST'25 release: one JSON object per line with
// "timestamp" (ms), "input_length" (prompt tokens) and "hash_ids" (one id per 512-token block
// of the prompt, equal ids for equal prefixes). The chunks are the ids of the prompt's full
// blocks: as for the synthetic trace, a partial last block is not stored. params.chunk_tokens
// is `block_tokens` (Mooncake's files: 512); the other params keep their defaults. False with
// *error set (the file, the line and what is wrong) if the file cannot be read or a line is
// not in that format.
bool LoadMooncakeTrace(const std::string& path, uint32_t block_tokens, Trace* out,
                       std::string* error);

// Writes `t` in that format (hash_ids: the chunks, timestamp: arrival_ms); its blocks are
// t.params.chunk_tokens long. False with *error set if the file cannot be written.
bool WriteMooncakeTrace(const Trace& t, const std::string& path, std::string* error);

// The LMCache key of a chunk (RedisConnector layout: CacheEngineKey string + "kv_bytes").
std::string ChunkKey(uint64_t chunk_hash);

// Per-chunk cache replay, for reference policies computed from the trace alone. Prefix
// semantics as in LMCache: a request hits its leading cached chunks, then stores every chunk
// after the first miss that is not cached. Capacities are in chunks.
struct SimResult {
  uint64_t hit_tokens = 0, prompt_tokens = 0, inserted_chunks = 0;
};

// The simulated policies, by name:
// - "belady": the offline optimum (evict the chunk whose next use is furthest; do not admit a
//   chunk used later than everything cached);
// - "lru-exact": per-chunk LRU (a hit moves a chunk to the front);
// - "fifo-exact": per-chunk FIFO (hits change nothing);
// - "s3-fifo": S3-FIFO (Yang et al., SOSP'23): new chunks enter a small FIFO of 10% of the
//   capacity; a chunk hit there moves to the main FIFO when it leaves it, others leave the
//   cache and are remembered in a ghost FIFO as large as the main one; a chunk inserted while
//   in the ghost goes straight to the main FIFO, which reinserts a chunk hit since its last
//   pass (2-bit hit counter, one less per pass).
// False if `policy` is none of these names.
bool Simulate(const Trace& t, const std::string& policy, uint64_t capacity_chunks, SimResult* out);

}  // namespace larder::bench
