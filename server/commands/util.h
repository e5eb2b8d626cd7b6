// Small helpers shared by the command families: Redis-exact integer parsing, error replies,
// engine Status → reply mapping.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "commands/context.h"
#include "common/text.h"
#include "resp/request_parser.h"

namespace larder::server {

// Redis's exact error texts (without '-' and CRLF).
inline constexpr std::string_view kErrSyntax = "ERR syntax error";
inline constexpr std::string_view kErrNotInt = "ERR value is not an integer or out of range";
// Larder has one database, 0: Redis's reply for any other index.
inline constexpr std::string_view kErrDbRange = "ERR DB index is out of range";
inline constexpr std::string_view kErrSameObject =
    "ERR source and destination objects are the same";
inline constexpr std::string_view kErrOom =
    "OOM command not allowed when used memory > 'maxmemory'.";

// Keyspace notification classes (config/server_config.h), for ctx.core.events.Notify.
using config::kNotifyExpired;
using config::kNotifyGeneric;
using config::kNotifyKeyMiss;
using config::kNotifyString;

using common::EqualsNoCase;
using common::ToLower;
using common::ToUpper;
using resp::ParseInt64;  // Redis's string2ll, shared with the protocol parser

// Parses like ParseInt64 and replies kErrNotInt on failure.
bool ArgInt64(Ctx& ctx, std::string_view s, int64_t* out);
// A database index as Redis's getIntFromObjectOrReply reads it: an integer in int32's range,
// else replies `invalid` (Redis's own texts when empty) and returns false.
bool ArgDbIndex(Ctx& ctx, std::string_view s, int64_t* db, std::string_view invalid = {});
// In cluster mode, replies Redis's "ERR <COMMAND> is not allowed in cluster mode" (SELECT of
// another database, SWAPDB, MOVE) and returns true; else false.
bool RefusedInClusterMode(Ctx& ctx);
// A database index as COPY ... DB reads it (ArgDbIndex, then Redis's database
// check): true for 0, the only one; else replies Redis's error and false.
bool ArgDbZero(Ctx& ctx, std::string_view s);

// Replies the error for a failed engine call (NoSpace → OOM, others → ERR <message>).
void ReplyStatus(Ctx& ctx, const Status& s);
// Deletes `key`, announcing the `del` event if it was there (*deleted, if given, says whether);
// a missing key is no error. False after replying an engine error.
bool DeleteKey(Ctx& ctx, std::string_view key, bool* deleted = nullptr);
// "ERR wrong number of arguments for '<name>' command" (`name` lowercased).
void ReplyArity(Ctx& ctx, std::string_view name);
std::string ArityError(std::string_view name);  // its text
// "ERR unknown subcommand '<sub>'. Try <CMD> HELP." with `cmd` uppercased.
std::string UnknownSubError(std::string_view sub, std::string_view cmd);
// "ERR unknown subcommand or wrong number of arguments for '<argv[1], at most 128 bytes>'. Try
// <CMD> HELP.": what Redis replies when a subcommand's own check of its arguments fails.
void ReplySubcommandSyntax(Ctx& ctx);

}  // namespace larder::server
