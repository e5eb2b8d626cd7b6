// Moving values between keys, databases and servers: COPY, MOVE, DUMP, RESTORE, with Redis 7's
// semantics and error texts. DUMP/RESTORE payloads are Redis's (commands/dump_payload.h), so
// migration tools move values from Redis to Larder and back.
#include "commands/dump_payload.h"
#include "commands/families.h"
#include "commands/util.h"
#include "commands/value_reply.h"

namespace larder::server {

namespace {

// COPY source destination [DB destination-db] [REPLACE]: the value and its expiry. Only db 0
// exists. 1 if copied; 0 if the source is missing or the destination exists without REPLACE.
void Copy(Ctx& ctx) {
  bool replace = false;
  for (size_t i = 3; i < ctx.argc(); ++i) {
    if (EqualsNoCase(ctx.argv[i], "replace")) {
      replace = true;
    } else if (EqualsNoCase(ctx.argv[i], "db") && i + 1 < ctx.argc()) {
      if (!ArgDbZero(ctx, ctx.argv[++i])) return;
    } else {
      return ctx.w.Error(kErrSyntax);
    }
  }
  const std::string& src = ctx.argv[1];
  const std::string& dst = ctx.argv[2];
  if (src == dst) return ctx.w.Error(kErrSameObject);
  std::optional<Value> value;
  if (!ReadValue(ctx, src, &value)) return;
  if (!value) return ctx.w.Integer(0);
  auto info = ctx.store().Info(src);
  if (!info.ok()) return ctx.w.Integer(0);  // expired between the two reads
  PutOptions po = ctx.WriteOptions();
  po.expire_at_ms = info->expire_at_ms;
  po.mode = replace ? PutMode::kAlways : PutMode::kIfAbsent;
  Status s = ctx.store().Put(dst, value->view(), po);
  if (s.IsConditionNotMet()) return ctx.w.Integer(0);
  if (!s.ok()) return ReplyStatus(ctx, s);
  ctx.core.events.Notify(kNotifyGeneric, "copy_to", dst);
  ctx.w.Integer(1);
}

// DUMP key: the value as a Redis DUMP payload, or nil.
void Dump(Ctx& ctx) {
  std::optional<Value> value;
  if (!ReadValue(ctx, ctx.argv[1], &value)) return;
  if (!value) return ctx.w.Null();
  ctx.w.BulkMove(EncodeDumpPayload(value->view()));
}

struct RestoreOptions {
  bool replace = false, absttl = false;
};

// REPLACE, ABSTTL, IDLETIME seconds | FREQ frequency (checked as Redis checks them, then
// ignored: Larder's eviction counts reuse itself). Replies the error and returns false if bad.
bool ParseRestoreOptions(Ctx& ctx, RestoreOptions* o) {
  auto fail = [&](std::string_view error) {
    ctx.w.Error(error);
    return false;
  };
  bool idle = false, freq = false;
  for (size_t i = 4; i < ctx.argc(); ++i) {
    const bool has_arg = i + 1 < ctx.argc();
    int64_t n;
    if (EqualsNoCase(ctx.argv[i], "replace")) {
      o->replace = true;
    } else if (EqualsNoCase(ctx.argv[i], "absttl")) {
      o->absttl = true;
    } else if (EqualsNoCase(ctx.argv[i], "idletime") && has_arg && !freq) {
      if (!ArgInt64(ctx, ctx.argv[++i], &n)) return false;
      if (n < 0) return fail("ERR Invalid IDLETIME value, must be >= 0");
      idle = true;
    } else if (EqualsNoCase(ctx.argv[i], "freq") && has_arg && !idle) {
      if (!ArgInt64(ctx, ctx.argv[++i], &n)) return false;
      if (n < 0 || n > 255) return fail("ERR Invalid FREQ value, must be >= 0 and <= 255");
      freq = true;
    } else {
      return fail(kErrSyntax);
    }
  }
  return true;
}

// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]: the checks in Redis's
// order (options, existing key, TTL, payload), then the key with its expiry. A TTL already
// past creates nothing (and, with REPLACE, deletes the key that was there).
void Restore(Ctx& ctx) {
  RestoreOptions o;
  if (!ParseRestoreOptions(ctx, &o)) return;
  const std::string& key = ctx.argv[1];
  if (!o.replace && ctx.store().Contains(key)) {
    return ctx.w.Error("BUSYKEY Target key name already exists.");
  }
  int64_t ttl;
  if (!ArgInt64(ctx, ctx.argv[2], &ttl)) return;
  if (ttl < 0) return ctx.w.Error("ERR Invalid TTL value, must be >= 0");
  std::string value;
  const uint64_t max_bytes = ctx.core.config.snapshot()->proto_max_bulk_len;
  if (auto err = DecodeDumpPayload(ctx.argv[3], max_bytes, &value)) return ctx.w.Error(*err);
  const int64_t now = ctx.NowMs();
  const int64_t at = ttl == 0   ? 0
                     : o.absttl ? ttl
                                : (ttl > INT64_MAX - now ? INT64_MAX : now + ttl);
  if (at != 0 && at <= now) {
    if (o.replace && !DeleteKey(ctx, key)) return;
    return ctx.w.SimpleString("OK");
  }
  PutOptions po = ctx.WriteOptions();
  po.expire_at_ms = at;
  Status s = ctx.store().PutOwned(key, std::move(value), po);
  if (!s.ok()) return ReplyStatus(ctx, s);
  ctx.core.events.Notify(kNotifyGeneric, "restore", key);
  ctx.w.SimpleString("OK");
}

// MOVE key db: the one database is both source and target, so every call is refused as Redis
// run with `databases 1` refuses it (db 0: the same object; any other: out of range).
void Move(Ctx& ctx) {
  if (RefusedInClusterMode(ctx)) return;
  int64_t db;
  if (!ArgDbIndex(ctx, ctx.argv[2], &db)) return;
  ctx.w.Error(db == 0 ? kErrSameObject : kErrDbRange);
}

constexpr CommandRow kRows[] = {
    {"copy", -3, "write exclusive", {1, 2, 1, {}, "RO access | OW update"}, Copy},
    {"dump", 2, "readonly", WithFlags(kOneKey, "RO access"), Dump},
    {"move", 3, "write fast", WithFlags(kOneKey, "RW access update"), Move},
    {"restore", -4, "write exclusive", WithFlags(kOneKey, "OW update"), Restore},
};

}  // namespace

std::span<const CommandRow> MigrationCommands() {
  return kRows;
}

}  // namespace larder::server
