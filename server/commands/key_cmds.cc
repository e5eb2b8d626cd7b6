// Keyspace commands: DEL UNLINK EXISTS TYPE EXPIRE* TTL PTTL EXPIRETIME PEXPIRETIME PERSIST
// TOUCH SCAN KEYS RANDOMKEY RENAME RENAMENX OBJECT MEMORY. Only strings exist.
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "commands/expiry.h"
#include "commands/families.h"
#include "commands/subcommands.h"
#include "commands/util.h"
#include "commands/value_reply.h"

namespace larder::server {

namespace {

std::vector<std::string_view> KeysFrom(const Ctx& ctx, size_t first) {
  return std::vector<std::string_view>(ctx.argv.begin() + static_cast<ptrdiff_t>(first),
                                       ctx.argv.end());
}

// EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT key time [NX|XX|GT|LT], the time in `unit`: 1 if the
// expiry was set (a time in the past deletes the key), 0 if the key is missing or a condition
// refused.
template <const TimeUnit& unit>
void Expire(Ctx& ctx) {
  uint32_t conditions;
  int64_t at;
  if (!ParseExpireConditions(ctx, 3, &conditions)) return;
  if (!ExpireAtOfExpireTime(ctx, ctx.argv[2], unit, &at)) return;
  auto info = ctx.store().Info(ctx.argv[1]);
  if (!info.ok()) return ctx.w.Integer(0);
  if (!ExpireConditionsAllow(conditions, info->expire_at_ms, at)) return ctx.w.Integer(0);
  const bool past = at <= ctx.NowMs();
  Status s = past ? ctx.store().Delete(ctx.argv[1]) : ctx.store().SetExpiry(ctx.argv[1], at);
  if (s.IsNotFound()) return ctx.w.Integer(0);
  if (!s.ok()) return ReplyStatus(ctx, s);
  ctx.core.events.Notify(kNotifyGeneric, past ? "del" : "expire", ctx.argv[1]);
  ctx.w.Integer(1);
}

// Milliseconds (>= 0) in `unit`, rounded to the nearest as Redis's ttlGenericCommand does.
int64_t RoundedTo(const TimeUnit& unit, int64_t ms) {
  return (ms + unit.ms / 2) / unit.ms;
}

// TTL / PTTL key: the time left in `unit` (rounded), -1 without expiry, -2 without the key.
template <const TimeUnit& unit>
void Ttl(Ctx& ctx) {
  int64_t t = ctx.store().Ttl(ctx.argv[1]);
  if (t == kTtlNoKey) NotifyKeyMiss(ctx, ctx.argv[1]);
  if (t < 0) return ctx.w.Integer(t);
  ctx.w.Integer(RoundedTo(unit, t));
}

// EXPIRETIME / PEXPIRETIME key: the Unix expiry time in `unit` (rounded), -1 without expiry,
// -2 without the key.
template <const TimeUnit& unit>
void ExpireTime(Ctx& ctx) {
  auto info = ctx.store().Info(ctx.argv[1]);
  if (!info.ok()) {
    NotifyKeyMiss(ctx, ctx.argv[1]);
    return ctx.w.Integer(-2);
  }
  if (info->expire_at_ms == 0) return ctx.w.Integer(-1);
  ctx.w.Integer(RoundedTo(unit, info->expire_at_ms));
}

// A SCAN cursor as Redis reads it (strtoul): an optional sign, then decimal digits up to
// 2^64 - 1; a '-' negates modulo 2^64 ("-1" is the largest cursor); "" is 0.
bool ParseCursor(std::string_view s, uint64_t* out) {
  if (s.empty()) {
    *out = 0;
    return true;
  }
  const bool negative = s[0] == '-';
  if (s[0] == '-' || s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = negative ? 0 - v : v;
  return true;
}

// RENAME src dst; RENAMENX (nx) only when dst does not exist.
template <bool nx>
void Rename(Ctx& ctx) {
  const std::string& src = ctx.argv[1];
  const std::string& dst = ctx.argv[2];
  auto info = ctx.store().Info(src);
  if (!info.ok()) return ctx.w.Error("ERR no such key");
  if (src == dst) return nx ? ctx.w.Integer(0) : ctx.w.SimpleString("OK");
  if (nx && ctx.store().Contains(dst)) return ctx.w.Integer(0);
  auto value = ctx.store().Get(src);
  if (!value.ok()) {
    if (value.status().IsNotFound()) return ctx.w.Error("ERR no such key");
    return ReplyStatus(ctx, value.status());
  }
  PutOptions po = ctx.WriteOptions();
  po.expire_at_ms = info->expire_at_ms;
  Status s = ctx.store().Put(dst, value->view(), po);
  if (!s.ok()) return ReplyStatus(ctx, s);
  s = ctx.store().Delete(src);
  if (!s.ok() && !s.IsNotFound()) {
    ctx.core.watched.Touch(dst);  // changed, though the rename failed: no event, but WATCH
    return ReplyStatus(ctx, s);
  }
  ctx.core.events.Notify(kNotifyGeneric, "rename_from", src);
  ctx.core.events.Notify(kNotifyGeneric, "rename_to", dst);
  if (nx) return ctx.w.Integer(1);
  ctx.w.SimpleString("OK");
}

void Del(Ctx& ctx) {
  int64_t n = 0;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    bool deleted;
    if (!DeleteKey(ctx, ctx.argv[i], &deleted)) return;
    n += deleted ? 1 : 0;
  }
  ctx.w.Integer(n);
}

void Exists(Ctx& ctx) {
  const std::vector<std::string_view> keys = KeysFrom(ctx, 1);
  const uint64_t n = ctx.store().Exists(keys);
  NotifyKeyMisses(ctx, keys);
  ctx.w.Integer(static_cast<int64_t>(n));
}

void Type(Ctx& ctx) {
  const bool found = ctx.store().Contains(ctx.argv[1]);
  if (!found) NotifyKeyMiss(ctx, ctx.argv[1]);
  ctx.w.SimpleString(found ? "string" : "none");
}

void Persist(Ctx& ctx) {
  auto info = ctx.store().Info(ctx.argv[1]);
  if (!info.ok() || info->expire_at_ms == 0) return ctx.w.Integer(0);
  Status s = ctx.store().SetExpiry(ctx.argv[1], 0);
  if (s.IsNotFound()) return ctx.w.Integer(0);
  if (!s.ok()) return ReplyStatus(ctx, s);
  ctx.core.events.Notify(kNotifyGeneric, "persist", ctx.argv[1]);
  ctx.w.Integer(1);
}

void Touch(Ctx& ctx) {
  const std::vector<std::string_view> keys = KeysFrom(ctx, 1);
  const uint64_t n = ctx.store().Touch(keys);
  NotifyKeyMisses(ctx, keys);
  ctx.w.Integer(static_cast<int64_t>(n));
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
void Scan(Ctx& ctx) {
  uint64_t cursor;
  if (!ParseCursor(ctx.argv[1], &cursor)) return ctx.w.Error("ERR invalid cursor");
  std::string pattern;
  int64_t count = 10;
  bool type_ok = true, match_given = false;
  for (size_t i = 2; i < ctx.argc(); i += 2) {
    if (i + 1 >= ctx.argc()) return ctx.w.Error(kErrSyntax);
    std::string opt = ToLower(ctx.argv[i]);
    if (opt == "match") {
      pattern = ctx.argv[i + 1];
      match_given = true;
    } else if (opt == "count") {
      if (!ArgInt64(ctx, ctx.argv[i + 1], &count)) return;
      if (count < 1) return ctx.w.Error(kErrSyntax);
    } else if (opt == "type") {
      type_ok = EqualsNoCase(ctx.argv[i + 1], "string");
    } else {
      return ctx.w.Error(kErrSyntax);
    }
  }
  ScanPage page = ctx.store().Scan(cursor, pattern, static_cast<size_t>(count));
  ctx.w.ArrayHeader(2);
  ctx.w.BulkString(std::to_string(page.next_cursor));
  // A TYPE other than string, or MATCH "" (which matches only the empty key, and no key is
  // empty; the engine reads "" as no filter): the scan walks on and returns no key, as Redis's.
  if (!type_ok || (match_given && pattern.empty())) page.keys.clear();
  ctx.w.ArrayHeader(page.keys.size());
  for (const std::string& k : page.keys) ctx.w.BulkString(k);
}

void Keys(Ctx& ctx) {
  // The engine reads "" as no filter; as a pattern it matches only the empty key, and no key
  // is empty.
  if (ctx.argv[1].empty()) return ctx.w.ArrayHeader(0);
  std::vector<std::string> all;
  uint64_t cursor = 0;
  do {
    ScanPage page = ctx.store().Scan(cursor, ctx.argv[1], 1024);
    for (std::string& k : page.keys) all.push_back(std::move(k));
    cursor = page.next_cursor;
  } while (cursor != 0);
  ctx.w.ArrayHeader(all.size());
  for (const std::string& k : all) ctx.w.BulkString(k);
}

// Not uniformly random: a random pick among the first keys of the scan order.
void RandomKey(Ctx& ctx) {
  ScanPage page = ctx.store().Scan(0, "", 64);
  while (page.keys.empty() && page.next_cursor != 0) {
    page = ctx.store().Scan(page.next_cursor, "", 64);
  }
  if (page.keys.empty()) return ctx.w.Null();
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  ctx.w.BulkString(page.keys[rng() % page.keys.size()]);
}

// OBJECT <subcommand> key: the key's metadata; a null reply when the key does not exist.
void ObjectEncoding(Ctx& ctx) {
  if (!ctx.store().Info(ctx.argv[2]).ok()) return ctx.w.Null();
  ctx.w.BulkString("raw");
}

void ObjectFreq(Ctx& ctx) {
  auto info = ctx.store().Info(ctx.argv[2]);
  if (!info.ok()) return ctx.w.Null();
  ctx.w.Integer(info->reuse_count);
}

void ObjectIdleTime(Ctx& ctx) {
  auto info = ctx.store().Info(ctx.argv[2]);
  if (!info.ok()) return ctx.w.Null();
  ctx.w.Integer(std::max<int64_t>(0, (ctx.NowMs() - info->last_access_ms) / 1000));
}

void ObjectRefCount(Ctx& ctx) {
  if (!ctx.store().Info(ctx.argv[2]).ok()) return ctx.w.Null();
  ctx.w.Integer(1);
}

constexpr SubcommandRow kObjectSubcommands[] = {
    {"encoding", 3, ObjectEncoding, "ENCODING <key>", "Return the encoding of <key>: raw."},
    {"freq", 3, ObjectFreq, "FREQ <key>",
     "Return the reuse count of <key> (GET hits and TOUCHes since it was written or kept)."},
    {"idletime", 3, ObjectIdleTime, "IDLETIME <key>",
     "Return the seconds since <key> was last read or written."},
    {"refcount", 3, ObjectRefCount, "REFCOUNT <key>", "Return 1 for an existing <key>."},
};

void Object(Ctx& ctx) {
  RunSubcommand(ctx, kObjectSubcommands);
}

// MEMORY USAGE key [SAMPLES count]: value + key bytes plus a fixed per-entry overhead.
void MemoryUsage(Ctx& ctx) {
  for (size_t i = 3; i < ctx.argc(); i += 2) {
    int64_t samples;
    if (!EqualsNoCase(ctx.argv[i], "samples") || i + 1 == ctx.argc()) {
      return ctx.w.Error(kErrSyntax);
    }
    if (!ArgInt64(ctx, ctx.argv[i + 1], &samples)) return;
    if (samples < 0) return ctx.w.Error(kErrSyntax);
  }
  auto info = ctx.store().Info(ctx.argv[2]);
  if (!info.ok()) return ctx.w.Null();
  ctx.w.Integer(static_cast<int64_t>(info->value_size + ctx.argv[2].size() + 100));
}

// MEMORY PURGE: Redis hands freed allocator pages back to the system; here the value files'
// read mappings go (Store::UnmapFiles), so that their pages become droppable from the page
// cache (fadvise DONTNEED and drop_caches skip mapped pages) and leave used_memory_rss.
void MemoryPurge(Ctx& ctx) {
  ctx.store().UnmapFiles();
  ctx.w.SimpleString("OK");
}

// MEMORY MALLOC-STATS: the allocator's own report, as Redis gives jemalloc's (verbatim text):
// glibc's malloc_info (XML), or Redis's words (a bulk string) when it cannot be had.
void MemoryMallocStats(Ctx& ctx) {
  char* report = nullptr;
  size_t len = 0;
  FILE* out = open_memstream(&report, &len);
  bool made = out != nullptr && malloc_info(0, out) == 0;
  // The buffer and its length are set by a successful close, not before.
  if (out != nullptr) made = std::fclose(out) == 0 && made && report != nullptr;
  if (made) {
    ctx.w.Verbatim("txt", std::string_view(report, len));
  } else {
    ctx.w.BulkString("Stats not supported for the current allocator");
  }
  std::free(report);
}

constexpr SubcommandRow kMemorySubcommands[] = {
    {"usage", -3, MemoryUsage, "USAGE <key> [SAMPLES <count>]",
     "Return the bytes <key> takes: value, key and a fixed overhead."},
    {"purge", 2, MemoryPurge, "PURGE",
     "Unmap the value files, so the page cache can drop their pages."},
    {"malloc-stats", 2, MemoryMallocStats, "MALLOC-STATS",
     "Return internal statistics report from the memory allocator.", kSlow},
};

void Memory(Ctx& ctx) {
  RunSubcommand(ctx, kMemorySubcommands);
}

constexpr CommandRow kRows[] = {
    {"del", -2, "write", WithFlags(kEveryArgKey, "RM delete"), Del},
    {"unlink", -2, "write", WithFlags(kEveryArgKey, "RM delete"), Del},
    {"exists", -2, "readonly fast", WithFlags(kEveryArgKey, "RO"), Exists},
    {"type", 2, "readonly fast", WithFlags(kOneKey, "RO"), Type},
    {"expire", -3, "write", WithFlags(kOneKey, "RW update"), Expire<kSeconds>},
    {"pexpire", -3, "write", WithFlags(kOneKey, "RW update"), Expire<kMilliseconds>},
    {"expireat", -3, "write", WithFlags(kOneKey, "RW update"), Expire<kUnixSeconds>},
    {"pexpireat", -3, "write", WithFlags(kOneKey, "RW update"), Expire<kUnixMilliseconds>},
    {"ttl", 2, "readonly fast", WithFlags(kOneKey, "RO access"), Ttl<kSeconds>},
    {"pttl", 2, "readonly fast", WithFlags(kOneKey, "RO access"), Ttl<kMilliseconds>},
    {"expiretime", 2, "readonly fast", WithFlags(kOneKey, "RO access"), ExpireTime<kUnixSeconds>},
    {"pexpiretime", 2, "readonly fast", WithFlags(kOneKey, "RO access"),
     ExpireTime<kUnixMilliseconds>},
    {"persist", 2, "write", WithFlags(kOneKey, "RW update"), Persist},
    {"touch", -2, "readonly fast", WithFlags(kEveryArgKey, "RO"), Touch},
    {"scan", -2, "readonly", kNoKeys, Scan},
    {"keys", 2, "readonly", kNoKeys, Keys},
    {"randomkey", 1, "readonly", kNoKeys, RandomKey},
    {"rename", 3, "write exclusive", {1, 2, 1, {}, "RW access delete | OW update"}, Rename<false>},
    {"renamenx", 3, "write exclusive", {1, 2, 1, {}, "RW access delete | OW insert"}, Rename<true>},
    {"object", -2, "readonly fast", {2, 2, 1, {}, "RO"}, Object, kObjectSubcommands},
    {"memory", -2, "readonly fast", {2, 2, 1, "usage", "RO"}, Memory, kMemorySubcommands},
};

}  // namespace

std::span<const CommandRow> KeyCommands() {
  return kRows;
}

}  // namespace larder::server
