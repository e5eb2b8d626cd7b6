// String commands: GET SET GETSET SETNX SETEX PSETEX GETEX GETDEL MGET MSET MSETNX STRLEN GETRANGE
// APPEND SETRANGE INCR DECR INCRBY DECRBY. Values live in the engine; read-modify-write
// commands (flag `exclusive`) run under the exclusive server lock, so they are atomic.
#include "commands/expiry.h"
#include "commands/families.h"
#include "commands/util.h"

namespace larder::server {

namespace {

// Replies a value without copying it (the reply holds the engine's buffer).
void ReplyValue(Ctx& ctx, Value value) {
  auto pinned = std::make_shared<Value>(std::move(value));
  ctx.w.BulkExternal(pinned->data(), pinned->size(), pinned);
}

// A read found no `key`: nil, and the keymiss event.
void ReplyMiss(Ctx& ctx, std::string_view key) {
  ctx.core.events.Notify(kNotifyKeyMiss, "keymiss", key);
  ctx.w.Null();
}

// Replies the value of `key` (nil on a miss; the engine's error, or nil if `errors_as_nil`):
// sent from its file where it is in one (sendfile: no copy in user space), through a buffer
// otherwise.
void ReplyStored(Ctx& ctx, std::string_view key, bool errors_as_nil = false) {
  auto fail = [&](const Status& s) { errors_as_nil ? ctx.w.Null() : ReplyStatus(ctx, s); };
  if (ctx.client.sendfile_ok) {
    auto range = ctx.store().GetFileRange(key);
    if (range.ok()) {
      return ctx.w.BulkFile(range->fd, range->offset, range->size, std::move(range->keepalive));
    }
    if (range.status().IsNotFound()) return ReplyMiss(ctx, key);
    if (!range.status().IsNotSupported()) return fail(range.status());
  }
  auto r = ctx.store().Get(key);
  if (r.ok()) return ReplyValue(ctx, std::move(r.value()));
  if (r.status().IsNotFound()) return ReplyMiss(ctx, key);
  fail(r.status());
}

// Reads `key` as a full string; false (and an error reply) on engine failure. A miss sets
// *found = false.
bool ReadString(Ctx& ctx, std::string_view key, std::string* out, bool* found) {
  auto r = ctx.store().Get(key);
  if (r.ok()) {
    out->assign(r->data(), r->size());
    *found = true;
    return true;
  }
  *found = false;
  out->clear();
  if (r.status().IsNotFound()) return true;
  ReplyStatus(ctx, r.status());
  return false;
}

// Writes `value` to `key`, keeping its expiry, and notifies string event `event`; false (after
// replying the error) on failure.
bool PutKeepingTtl(Ctx& ctx, std::string_view key, std::string_view value, std::string_view event) {
  PutOptions po;
  po.keep_ttl = true;
  Status s = ctx.store().Put(key, value, po);
  if (!s.ok()) {
    ReplyStatus(ctx, s);
    return false;
  }
  ctx.core.events.Notify(kNotifyString, event, key);
  return true;
}

// A value was set (SET, SETEX, MSET, ...): the set event, and expire when it got an expiry.
void NotifySet(Ctx& ctx, std::string_view key, const PutOptions& po) {
  ctx.core.events.Notify(kNotifyString, "set", key);
  if (po.expire_at_ms != 0) ctx.core.events.Notify(kNotifyGeneric, "expire", key);
}

void IncrDecr(Ctx& ctx, int64_t delta) {
  std::string cur;
  bool found;
  if (!ReadString(ctx, ctx.argv[1], &cur, &found)) return;
  int64_t v = 0;
  if (found && !ParseInt64(cur, &v)) return ctx.w.Error(kErrNotInt);
  if ((delta > 0 && v > INT64_MAX - delta) || (delta < 0 && v < INT64_MIN - delta)) {
    return ctx.w.Error("ERR increment or decrement would overflow");
  }
  v += delta;
  if (PutKeepingTtl(ctx, ctx.argv[1], std::to_string(v), "incrby")) ctx.w.Integer(v);
}

void Get(Ctx& ctx) {
  ReplyStored(ctx, ctx.argv[1]);
}

// SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]
void Set(Ctx& ctx) {
  StringOptions opts;
  if (!ParseStringOptions(ctx, 3, kSetOptions, &opts)) return;
  PutOptions po;
  if (opts.time && !ExpireAtOfSetTime(ctx, opts.time_arg, *opts.time, &po.expire_at_ms)) return;
  po.keep_ttl = opts.Has(kKeepTtl);
  const bool nx = opts.Has(kNx), xx = opts.Has(kXx), get = opts.Has(kGet);
  po.mode = nx ? PutMode::kIfAbsent : xx ? PutMode::kIfPresent : PutMode::kAlways;
  std::optional<Result<Value>> old;
  if (get) old.emplace(ctx.store().Get(ctx.argv[1]));
  if (old && !old->ok() && !old->status().IsNotFound()) return ReplyStatus(ctx, old->status());
  // The value's buffer goes to the engine as it arrived (no copy).
  Status s = ctx.store().PutOwned(ctx.argv[1], std::move(ctx.argv[2]), po);
  if (!s.ok() && !s.IsConditionNotMet()) return ReplyStatus(ctx, s);
  if (s.ok()) NotifySet(ctx, ctx.argv[1], po);
  if (get) {
    if (old->ok()) return ReplyValue(ctx, std::move(old->value()));
    return ctx.w.Null();
  }
  if (s.IsConditionNotMet()) return ctx.w.Null();
  ctx.w.SimpleString("OK");
}

// GETSET key value: sets the value and replies the old one (or null), atomically (the row's
// `exclusive`). Redis 6.2 deprecated it for SET ... GET but still serves it.
void GetSet(Ctx& ctx) {
  auto old = ctx.store().Get(ctx.argv[1]);
  if (!old.ok() && !old.status().IsNotFound()) return ReplyStatus(ctx, old.status());
  Status s = ctx.store().Put(ctx.argv[1], ctx.argv[2], PutOptions{});
  if (!s.ok()) return ReplyStatus(ctx, s);
  NotifySet(ctx, ctx.argv[1], PutOptions{});
  if (!old.ok()) return ctx.w.Null();
  ReplyValue(ctx, std::move(old.value()));
}

void SetNx(Ctx& ctx) {
  PutOptions po;
  po.mode = PutMode::kIfAbsent;
  Status s = ctx.store().Put(ctx.argv[1], ctx.argv[2], po);
  if (!s.ok() && !s.IsConditionNotMet()) return ReplyStatus(ctx, s);
  if (s.ok()) NotifySet(ctx, ctx.argv[1], po);
  ctx.w.Integer(s.ok() ? 1 : 0);
}

// SETEX / PSETEX key time value, the time in `unit`.
template <const TimeUnit& unit>
void SetEx(Ctx& ctx) {
  PutOptions po;
  if (!ExpireAtOfSetTime(ctx, ctx.argv[2], unit, &po.expire_at_ms)) return;
  Status s = ctx.store().PutOwned(ctx.argv[1], std::move(ctx.argv[3]), po);
  if (!s.ok()) return ReplyStatus(ctx, s);
  NotifySet(ctx, ctx.argv[1], po);
  ctx.w.SimpleString("OK");
}

// GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]: as in Redis, a missing key is a null reply
// before the time argument is read.
void GetEx(Ctx& ctx) {
  StringOptions opts;
  if (!ParseStringOptions(ctx, 2, kGetExOptions, &opts)) return;
  auto r = ctx.store().Get(ctx.argv[1]);
  if (!r.ok()) {
    if (r.status().IsNotFound()) return ctx.w.Null();
    return ReplyStatus(ctx, r.status());
  }
  int64_t at = 0;  // with PERSIST: no expiry
  if (opts.time && !ExpireAtOfSetTime(ctx, opts.time_arg, *opts.time, &at)) return;
  if (opts.time && at <= ctx.NowMs()) {
    // An EXAT/PXAT in the past deletes the key, as in Redis.
    Status s = ctx.store().Delete(ctx.argv[1]);
    if (!s.ok() && !s.IsNotFound()) return ReplyStatus(ctx, s);
    if (s.ok()) ctx.core.events.Notify(kNotifyGeneric, "del", ctx.argv[1]);
  } else if (opts.time || (opts.Has(kPersist) && ctx.store().Ttl(ctx.argv[1]) >= 0)) {
    Status s = ctx.store().SetExpiry(ctx.argv[1], at);
    if (!s.ok() && !s.IsNotFound()) return ReplyStatus(ctx, s);
    const std::string_view event = opts.time ? "expire" : "persist";
    if (s.ok()) ctx.core.events.Notify(kNotifyGeneric, event, ctx.argv[1]);
  }
  ReplyValue(ctx, std::move(r.value()));
}

void GetDel(Ctx& ctx) {
  auto r = ctx.store().Get(ctx.argv[1]);
  if (!r.ok()) {
    if (r.status().IsNotFound()) return ctx.w.Null();
    return ReplyStatus(ctx, r.status());
  }
  Status s = ctx.store().Delete(ctx.argv[1]);
  if (!s.ok() && !s.IsNotFound()) return ReplyStatus(ctx, s);
  if (s.ok()) ctx.core.events.Notify(kNotifyGeneric, "del", ctx.argv[1]);
  ReplyValue(ctx, std::move(r.value()));
}

void MGet(Ctx& ctx) {
  // The disk reads every key's value at once; the replies then follow in order.
  if (ctx.argc() > 2) {
    ctx.store().Prefetch(std::vector<std::string_view>(ctx.argv.begin() + 1, ctx.argv.end()));
  }
  ctx.w.ArrayHeader(ctx.argc() - 1);
  // Misses and failures alike are nil, as Redis answers for keys of other types.
  for (size_t i = 1; i < ctx.argc(); ++i) ReplyStored(ctx, ctx.argv[i], /*errors_as_nil=*/true);
}

void MSet(Ctx& ctx) {
  if (ctx.argc() % 2 == 0) return ReplyArity(ctx, ctx.spec.name);
  for (size_t i = 1; i < ctx.argc(); i += 2) {
    Status s = ctx.store().Put(ctx.argv[i], ctx.argv[i + 1], PutOptions{});
    if (!s.ok()) return ReplyStatus(ctx, s);
    NotifySet(ctx, ctx.argv[i], PutOptions{});
  }
  ctx.w.SimpleString("OK");
}

void MSetNx(Ctx& ctx) {
  if (ctx.argc() % 2 == 0) return ReplyArity(ctx, ctx.spec.name);
  for (size_t i = 1; i < ctx.argc(); i += 2) {
    if (ctx.store().Contains(ctx.argv[i])) return ctx.w.Integer(0);
  }
  for (size_t i = 1; i < ctx.argc(); i += 2) {
    Status s = ctx.store().Put(ctx.argv[i], ctx.argv[i + 1], PutOptions{});
    if (!s.ok()) return ReplyStatus(ctx, s);
    NotifySet(ctx, ctx.argv[i], PutOptions{});
  }
  ctx.w.Integer(1);
}

void StrLen(Ctx& ctx) {
  auto info = ctx.store().Info(ctx.argv[1]);
  ctx.w.Integer(info.ok() ? static_cast<int64_t>(info->value_size) : 0);
}

void GetRange(Ctx& ctx) {
  int64_t start, end;
  if (!ArgInt64(ctx, ctx.argv[2], &start) || !ArgInt64(ctx, ctx.argv[3], &end)) return;
  auto r = ctx.store().Get(ctx.argv[1]);
  if (!r.ok() && !r.status().IsNotFound()) return ReplyStatus(ctx, r.status());
  int64_t len = r.ok() ? static_cast<int64_t>(r->size()) : 0;
  if (start < 0 && end < 0 && start > end) return ctx.w.BulkString("");
  if (start < 0) start = len + start;
  if (end < 0) end = len + end;
  if (start < 0) start = 0;
  if (end < 0) end = 0;
  if (end >= len) end = len - 1;
  if (len == 0 || start > end) return ctx.w.BulkString("");
  ctx.w.BulkString(
      r->view().substr(static_cast<size_t>(start), static_cast<size_t>(end - start + 1)));
}

void Append(Ctx& ctx) {
  std::string cur;
  bool found;
  if (!ReadString(ctx, ctx.argv[1], &cur, &found)) return;
  cur += ctx.argv[2];
  if (PutKeepingTtl(ctx, ctx.argv[1], cur, "append")) {
    ctx.w.Integer(static_cast<int64_t>(cur.size()));
  }
}

void SetRange(Ctx& ctx) {
  int64_t offset;
  if (!ArgInt64(ctx, ctx.argv[2], &offset)) return;
  if (offset < 0) return ctx.w.Error("ERR offset is out of range");
  const std::string& part = ctx.argv[3];
  if (static_cast<uint64_t>(offset) + part.size() >
      ctx.core.config.snapshot()->proto_max_bulk_len) {
    return ctx.w.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
  }
  std::string cur;
  bool found;
  if (!ReadString(ctx, ctx.argv[1], &cur, &found)) return;
  if (part.empty()) return ctx.w.Integer(static_cast<int64_t>(cur.size()));
  size_t need = static_cast<size_t>(offset) + part.size();
  if (cur.size() < need) cur.resize(need, '\0');
  cur.replace(static_cast<size_t>(offset), part.size(), part);
  if (PutKeepingTtl(ctx, ctx.argv[1], cur, "setrange")) {
    ctx.w.Integer(static_cast<int64_t>(cur.size()));
  }
}

// INCR / DECR key.
template <int64_t delta>
void AddConstant(Ctx& ctx) {
  IncrDecr(ctx, delta);
}

void IncrBy(Ctx& ctx) {
  int64_t d;
  if (ArgInt64(ctx, ctx.argv[2], &d)) IncrDecr(ctx, d);
}

void DecrBy(Ctx& ctx) {
  int64_t d;
  if (!ArgInt64(ctx, ctx.argv[2], &d)) return;
  if (d == INT64_MIN) return ctx.w.Error("ERR decrement would overflow");
  IncrDecr(ctx, -d);
}

constexpr CommandRow kRows[] = {
    {"get", 2, "readonly", kOneKey, Get},
    {"set", -3, "write", kOneKey, Set},
    {"setnx", 3, "write", kOneKey, SetNx},
    {"getset", 3, "write exclusive", kOneKey, GetSet},
    {"setex", 4, "write", kOneKey, SetEx<kSeconds>},
    {"psetex", 4, "write", kOneKey, SetEx<kMilliseconds>},
    {"getex", -2, "write", kOneKey, GetEx},
    {"getdel", 2, "write", kOneKey, GetDel},
    {"mget", -2, "readonly", kEveryArgKey, MGet},
    {"mset", -3, "write", kKeyValuePairs, MSet},
    {"msetnx", -3, "write exclusive", kKeyValuePairs, MSetNx},
    {"strlen", 2, "readonly fast", kOneKey, StrLen},
    {"getrange", 4, "readonly", kOneKey, GetRange},
    {"substr", 4, "readonly", kOneKey, GetRange},
    {"append", 3, "write exclusive", kOneKey, Append},
    {"setrange", 4, "write exclusive", kOneKey, SetRange},
    {"incr", 2, "write exclusive", kOneKey, AddConstant<1>},
    {"decr", 2, "write exclusive", kOneKey, AddConstant<-1>},
    {"incrby", 3, "write exclusive", kOneKey, IncrBy},
    {"decrby", 3, "write exclusive", kOneKey, DecrBy},
};

}  // namespace

std::span<const CommandRow> StringCommands() {
  return kRows;
}

}  // namespace larder::server
