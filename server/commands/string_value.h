// A string value read whole and written back: what the read-modify-write commands of the string
// and bitmap families (APPEND, SETRANGE, INCR*, SETBIT, BITFIELD, ...) share. They run under the
// exclusive server lock (their rows' `exclusive`), so nothing changes the key in between.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "commands/util.h"

namespace larder::server {

// Reads `key` as a full string; false (and an error reply) on engine failure. A miss sets
// *found = false and leaves *out empty.
bool ReadString(Ctx& ctx, std::string_view key, std::string* out, bool* found);

// Writes `value` to `key`, keeping its expiry, and notifies string event `event` (none if
// empty); false (after replying the error) on failure.
bool PutKeepingTtl(Ctx& ctx, std::string_view key, std::string_view value, std::string_view event);

// The part [first, last] of a sequence of `total` units (bytes, bits) that GETRANGE, BITCOUNT
// and BITPOS ranges name, Redis's way: a negative index counts from the end, both are clamped
// into the sequence; nothing (nullopt) when start ends up past end. (GETRANGE and BITCOUNT
// first answer an empty range for two negative indexes with start > end themselves.)
struct IndexRange {
  uint64_t first, last;
};
std::optional<IndexRange> ClampRange(int64_t start, int64_t end, int64_t total);

// Redis's checkStringLength: false (after the error reply) when a string the command would
// make is longer than proto-max-bulk-len.
bool WithinBulkLimit(Ctx& ctx, uint64_t bytes);

}  // namespace larder::server
