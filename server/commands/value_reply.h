// Replies of stored values, shared by the commands that answer one (GET, MGET, GETEX, ...).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "commands/util.h"

namespace larder::server {

// Replies `value` without copying it (the reply holds the engine's buffer).
void ReplyValue(Ctx& ctx, Value value);

// A read found no `key`: the keymiss event (notify-keyspace-events class m), which Redis sends
// for a read of a missing key by any command that looks it up for reading.
void NotifyKeyMiss(Ctx& ctx, std::string_view key);

// The keymiss event of each of `keys` that is missing, in order (EXISTS, TOUCH): looked up
// one by one only while keymiss events are published.
void NotifyKeyMisses(Ctx& ctx, const std::vector<std::string_view>& keys);

// A read found no `key`: nil, and the keymiss event.
void ReplyMiss(Ctx& ctx, std::string_view key);

// Reads `key` for a command that reads it (GETEX, GETDEL, SET ... GET, COPY, DUMP, LCS, the
// bitmap reads, ...): its value where the engine keeps it (no copy), or nullopt for a miss,
// announced as Redis's lookupKeyRead announces one (keymiss). False after replying an engine
// error.
bool ReadValue(Ctx& ctx, std::string_view key, std::optional<Value>* out);

// Replies the value of `key` (nil on a miss; the engine's error, or nil if `errors_as_nil`):
// streamed while it is read when the connection can send while a command runs and the page
// cache does not hold the value (no client ever receives a complete wrong value: the last
// piece waits for the checksum, and a value that fails after its first bytes were sent closes
// the connection); otherwise sent from its file where it is in one and option `sendfile`
// allows (no copy in user space), through a buffer otherwise.
void ReplyStored(Ctx& ctx, std::string_view key, bool errors_as_nil = false);

}  // namespace larder::server
