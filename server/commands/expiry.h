// Expiry options, parsed once for every command that takes them, as Redis 7 parses them:
//   SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]   (kSetOptions)
//   GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]                      (kGetExOptions)
//   SETEX / PSETEX key time value                                      (ExpireAtOfSetTime)
//   EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT key time [NX|XX|GT|LT]     (kExpireConditions)
// Each option is a row; a new option is one more row (and, for EXPIRE, its incompatible pairs).
// Errors are Redis's texts, replied through ctx; "<cmd>" is ctx.spec.name.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "commands/context.h"

namespace larder::server {

// How a time argument reads: its unit, and whether it is a Unix time or relative to now.
struct TimeUnit {
  int64_t ms;  // 1000 for seconds, 1 for milliseconds
  bool absolute;
};
inline constexpr TimeUnit kSeconds{1000, false};
inline constexpr TimeUnit kMilliseconds{1, false};
inline constexpr TimeUnit kUnixSeconds{1000, true};
inline constexpr TimeUnit kUnixMilliseconds{1, true};

// ---- SET and GETEX ----

enum StringOption : uint32_t {
  kNx = 1u << 0,
  kXx = 1u << 1,
  kGet = 1u << 2,
  kKeepTtl = 1u << 3,
  kPersist = 1u << 4,
  kEx = 1u << 5,
  kPx = 1u << 6,
  kExAt = 1u << 7,
  kPxAt = 1u << 8,
};

struct StringOptionRow {
  std::string_view word;  // case-insensitive
  StringOption option;
  uint32_t conflicts;    // options that may not come before it
  const TimeUnit* time;  // the unit of the argument that follows it; nullptr: none
};

extern const std::span<const StringOptionRow> kSetOptions;
extern const std::span<const StringOptionRow> kGetExOptions;

struct StringOptions {
  uint32_t given = 0;              // StringOption bits
  const TimeUnit* time = nullptr;  // the last EX/PX/EXAT/PXAT's unit; nullptr: none given
  std::string_view time_arg;       // and its argument

  bool Has(StringOption o) const { return (given & o) != 0; }
};

// Parses ctx.argv[first..] against `rows` (Redis's parseExtendedStringArgumentsOrReply): a word
// that is no row's, that conflicts with an option before it, or that lacks its time argument is
// "ERR syntax error". The time argument itself is read later (ExpireAtOfSetTime), so a syntax
// error anywhere comes first. Replies the error and returns false on failure.
bool ParseStringOptions(Ctx& ctx, size_t first, std::span<const StringOptionRow> rows,
                        StringOptions* out);

// The absolute expiry (Unix ms) of a SET/GETEX/SETEX/PSETEX time argument (Redis's
// getExpireMillisecondsOrReply): "ERR value is not an integer or out of range", or "ERR invalid
// expire time in '<cmd>' command" unless it is > 0 and the absolute time is > 0 and fits.
bool ExpireAtOfSetTime(Ctx& ctx, std::string_view arg, const TimeUnit& unit, int64_t* at_ms);

// ---- EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT ----

enum ExpireCondition : uint32_t {
  kIfNoExpiry = 1u << 0,  // NX
  kIfExpiry = 1u << 1,    // XX
  kIfGreater = 1u << 2,   // GT
  kIfLess = 1u << 3,      // LT
};

struct ExpireConditionRow {
  std::string_view word;  // case-insensitive
  ExpireCondition condition;
  // Whether the new expiry `when_ms` may replace `current_ms` (0: the key has none).
  bool (*allows)(int64_t current_ms, int64_t when_ms);
};

extern const std::span<const ExpireConditionRow> kExpireConditions;

// Parses the conditions in ctx.argv[first..] (Redis's parseExtendedExpireArgumentsOrReply):
// "ERR Unsupported option <word>", then the incompatible pairs' errors ("ERR NX and XX, GT or
// LT options at the same time are not compatible", "ERR GT and LT options ..."). Replies the
// error and returns false on failure.
bool ParseExpireConditions(Ctx& ctx, size_t first, uint32_t* conditions);

// Whether every condition in `conditions` allows `when_ms` to replace `current_ms`.
bool ExpireConditionsAllow(uint32_t conditions, int64_t current_ms, int64_t when_ms);

// The absolute time (Unix ms, possibly in the past) of an EXPIRE* time argument (Redis's
// expireGenericCommand): any integer whose value in ms, made absolute, fits in int64; else
// "ERR value is not an integer or out of range" or "ERR invalid expire time in '<cmd>' command".
bool ExpireAtOfExpireTime(Ctx& ctx, std::string_view arg, const TimeUnit& unit, int64_t* at_ms);

}  // namespace larder::server
