// The longest common subsequence of two strings, computed as Redis 7's LCS command computes it
// (LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]), so that the string, the length
// and the match ranges equal Redis's byte for byte. Pure: no keyspace, no replies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace larder::server {

// Inputs longer than this are refused by Redis with "ERR String too long for LCS" (the DP table
// holds uint32_t lengths and indexes); ComputeLcs requires both lengths <= kLcsMaxInputLen.
inline constexpr uint64_t kLcsMaxInputLen = UINT32_MAX - 2;

// One run of consecutive common bytes: a[a_start..a_end] == b[b_start..b_end], both ranges
// inclusive, len = a_end - a_start + 1 (IDX's WITHMATCHLEN value).
struct LcsMatch {
  uint64_t a_start, a_end, b_start, b_end, len;
};

struct LcsResult {
  std::string lcs;                // the subsequence; empty unless want_string
  uint64_t len;                   // its length (LEN's reply, IDX's "len"), always set
  std::vector<LcsMatch> matches;  // empty unless want_matches
};

// Computes the LCS of `a` and `b` with Redis's table and walk-back, so ties between equal
// subsequences resolve as Redis resolves them. `matches` lists the runs from the end of the
// strings backwards (Redis's IDX order), keeping only runs with len >= min_match_len (0 keeps
// all; the command maps a negative MINMATCHLEN to 0).
// Requires a.size(), b.size() <= kLcsMaxInputLen. Allocates LcsTableBytes(a.size(), b.size())
// bytes for the duration of the call, so the caller checks that first; throws std::bad_alloc
// if that allocation fails (Redis then replies "ERR Insufficient memory, failed allocating
// transient memory for LCS").
LcsResult ComputeLcs(std::string_view a, std::string_view b, bool want_string, bool want_matches,
                     uint64_t min_match_len);

// The transient memory ComputeLcs needs: (alen+1)*(blen+1)*sizeof(uint32_t), or UINT64_MAX when
// that does not fit in 64 bits. Redis refuses (before allocating) when this exceeds
// proto-max-bulk-len: "ERR Insufficient memory, transient memory for LCS exceeds
// proto-max-bulk-len".
uint64_t LcsTableBytes(size_t alen, size_t blen);

}  // namespace larder::server
