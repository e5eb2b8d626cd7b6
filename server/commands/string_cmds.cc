// String commands: GET SET GETSET SETNX SETEX PSETEX GETEX GETDEL MGET MSET MSETNX STRLEN GETRANGE
// APPEND SETRANGE INCR DECR INCRBY DECRBY INCRBYFLOAT LCS. Values live in the engine;
// read-modify-write commands (flag `exclusive`) run under the exclusive server lock, so they
// are atomic.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <new>
#include <shared_mutex>

#include "commands/expiry.h"
#include "commands/families.h"
#include "commands/lcs.h"
#include "commands/string_value.h"
#include "commands/util.h"
#include "commands/value_reply.h"

namespace larder::server {

namespace {

// A value was set (SET, SETEX, MSET, ...): the set event, and expire when it got an expiry;
// an expiry already past also removed the key (the engine writes nothing), announced as
// Redis announces its removal at the next expiry cycle. Checked after the Put, so a key that
// expired meanwhile is announced too (once more when the engine then removes it).
void NotifySet(Ctx& ctx, std::string_view key, const PutOptions& po) {
  ctx.core.events.Notify(kNotifyString, "set", key);
  if (po.expire_at_ms == 0) return;
  ctx.core.events.Notify(kNotifyGeneric, "expire", key);
  if (po.expire_at_ms <= ctx.store().NowMs())
    ctx.core.events.Notify(kNotifyExpired, "expired", key);
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
  PutOptions po = ctx.WriteOptions();
  if (opts.time && !ExpireAtOfSetTime(ctx, opts.time_arg, *opts.time, &po.expire_at_ms)) return;
  po.keep_ttl = opts.Has(kKeepTtl);
  const bool nx = opts.Has(kNx), xx = opts.Has(kXx), get = opts.Has(kGet);
  po.mode = nx ? PutMode::kIfAbsent : xx ? PutMode::kIfPresent : PutMode::kAlways;
  std::optional<Value> old;
  if (get && !ReadValue(ctx, ctx.argv[1], &old)) return;
  // The value's buffer goes to the engine as it arrived (no copy).
  Status s = ctx.store().PutOwned(ctx.argv[1], std::move(ctx.argv[2]), po);
  if (!s.ok() && !s.IsConditionNotMet()) return ReplyStatus(ctx, s);
  if (s.ok()) NotifySet(ctx, ctx.argv[1], po);
  if (get) {
    if (old) return ReplyValue(ctx, std::move(*old));
    return ctx.w.Null();
  }
  if (s.IsConditionNotMet()) return ctx.w.Null();
  ctx.w.SimpleString("OK");
}

// GETSET key value: sets the value and replies the old one (or null), atomically (the row's
// `exclusive`). Redis 6.2 deprecated it for SET ... GET but still serves it.
void GetSet(Ctx& ctx) {
  std::optional<Value> old;
  if (!ReadValue(ctx, ctx.argv[1], &old)) return;
  Status s = ctx.store().Put(ctx.argv[1], ctx.argv[2], ctx.WriteOptions());
  if (!s.ok()) return ReplyStatus(ctx, s);
  NotifySet(ctx, ctx.argv[1], PutOptions{});
  if (!old) return ctx.w.Null();
  ReplyValue(ctx, std::move(*old));
}

void SetNx(Ctx& ctx) {
  PutOptions po = ctx.WriteOptions();
  po.mode = PutMode::kIfAbsent;
  Status s = ctx.store().Put(ctx.argv[1], ctx.argv[2], po);
  if (!s.ok() && !s.IsConditionNotMet()) return ReplyStatus(ctx, s);
  if (s.ok()) NotifySet(ctx, ctx.argv[1], po);
  ctx.w.Integer(s.ok() ? 1 : 0);
}

// SETEX / PSETEX key time value, the time in `unit`.
template <const TimeUnit& unit>
void SetEx(Ctx& ctx) {
  PutOptions po = ctx.WriteOptions();
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
  std::optional<Value> r;
  if (!ReadValue(ctx, ctx.argv[1], &r)) return;
  if (!r) return ctx.w.Null();
  int64_t at = 0;  // with PERSIST: no expiry
  if (opts.time && !ExpireAtOfSetTime(ctx, opts.time_arg, *opts.time, &at)) return;
  if (opts.time && at <= ctx.NowMs()) {
    // An EXAT/PXAT in the past deletes the key, as in Redis.
    if (!DeleteKey(ctx, ctx.argv[1])) return;
  } else if (opts.time || (opts.Has(kPersist) && ctx.store().Ttl(ctx.argv[1]) >= 0)) {
    Status s = ctx.store().SetExpiry(ctx.argv[1], at);
    if (!s.ok() && !s.IsNotFound()) return ReplyStatus(ctx, s);
    const std::string_view event = opts.time ? "expire" : "persist";
    if (s.ok()) ctx.core.events.Notify(kNotifyGeneric, event, ctx.argv[1]);
  }
  ReplyValue(ctx, std::move(r.value()));
}

void GetDel(Ctx& ctx) {
  std::optional<Value> r;
  if (!ReadValue(ctx, ctx.argv[1], &r)) return;
  if (!r) return ctx.w.Null();
  if (DeleteKey(ctx, ctx.argv[1])) ReplyValue(ctx, std::move(r.value()));
}

void MGet(Ctx& ctx) {
  // The disk reads every key's value at once; the replies then follow in order.
  if (ctx.argc() > 2) {
    ctx.store().Prefetch(std::vector<std::string_view>(ctx.argv.begin() + 1, ctx.argv.end()));
  }
  ctx.w.ArrayHeader(ctx.argc() - 1);
  // Misses and failures alike are nil, as Redis answers for keys of other types. A reply
  // abandoned mid-value (StreamCold) ends here: nothing more of it is ever sent.
  for (size_t i = 1; i < ctx.argc() && !ctx.w.abandoned(); ++i) {
    ReplyStored(ctx, ctx.argv[i], /*errors_as_nil=*/true);
  }
}

// MSET's and MSETNX's arguments: pairs, each checked as Put checks them before any is written,
// so a bad one (an empty or oversized key) changes nothing. False after replying the error.
bool PairsAcceptable(Ctx& ctx) {
  if (ctx.argc() % 2 == 0) {
    ReplyArity(ctx, ctx.spec.name);
    return false;
  }
  for (size_t i = 1; i < ctx.argc(); i += 2) {
    Status s = ctx.store().CheckPut(ctx.argv[i], ctx.argv[i + 1].size());
    if (!s.ok()) {
      ReplyStatus(ctx, s);
      return false;
    }
  }
  return true;
}

// The values of acceptable pairs written ahead of their keys (StagedPuts), with no server lock
// held (the rows' BeforeLock) or, inside EXEC, under its hold. False after replying the error;
// the values staged before it are freed with the Ctx.
bool StageAcceptedPairs(Ctx& ctx) {
  // Outside the lock a value may wait for the background writers' room as a SET's does.
  PutOptions po;
  po.never_wait_for_writers = ctx.in_exec;
  ctx.staged = ctx.store().StagePuts();
  for (size_t i = 1; i < ctx.argc(); i += 2) {
    if (Status s = ctx.staged->StageOwned(ctx.argv[i], std::move(ctx.argv[i + 1]), po); !s.ok()) {
      ReplyStatus(ctx, s);
      return false;
    }
  }
  return true;
}

bool StagePairs(Ctx& ctx) {
  return PairsAcceptable(ctx) && StageAcceptedPairs(ctx);
}

bool AnyKeyPresent(Ctx& ctx) {
  for (size_t i = 1; i < ctx.argc(); i += 2) {
    if (ctx.store().Contains(ctx.argv[i])) return true;
  }
  return false;
}

// Makes the staged values their keys', all or none, under the exclusive lock. False after
// replying the error.
bool CommitPairs(Ctx& ctx) {
  if (Status s = ctx.staged->Commit(); !s.ok()) {
    ReplyStatus(ctx, s);
    return false;
  }
  for (size_t i = 1; i < ctx.argc(); i += 2) NotifySet(ctx, ctx.argv[i], PutOptions{});
  return true;
}

// MSET key value [key value ...]: atomic as in Redis (the row's `exclusive`: no other command
// sees some of the keys set and not the others). The values are written before the exclusive
// lock is taken (StagePairs, the row's BeforeLock), and under it only their index records: the
// commands waiting for it wait for those, not for the bytes. The values go as they arrived
// (StageOwned, as SET's PutOwned: with the WAL off, written behind). A value that cannot be
// written (a full disk, a full budget under eviction-policy none) sets nothing, nor does a
// failed commit: the records go in one index write (also atomic across a crash).
void MSet(Ctx& ctx) {
  if (!ctx.staged && !StagePairs(ctx)) return;  // inside EXEC
  if (CommitPairs(ctx)) ctx.w.SimpleString("OK");
}

// MSETNX's BeforeLock: a key found present answers 0 at once, nothing written (what MSETNX
// answers at that moment; the look holds the lock shared, as any read, so that it never sees
// the middle of a transaction); else the values are staged, and the handler looks again under
// the exclusive lock.
bool StagePairsIfAbsent(Ctx& ctx) {
  if (!PairsAcceptable(ctx)) return false;
  bool present;
  {
    std::shared_lock<FairSharedMutex> lock(ctx.core.exec_lock, std::defer_lock);
    if (!ctx.in_exec) lock.lock();  // inside EXEC, its exclusive hold
    present = AnyKeyPresent(ctx);
  }
  if (present) {
    ctx.w.Integer(0);
    return false;
  }
  return StageAcceptedPairs(ctx);
}

void MSetNx(Ctx& ctx) {
  if (!ctx.staged) {
    // Inside EXEC: StagePairsIfAbsent looks under EXEC's hold, which nothing passes before the
    // commit.
    if (!StagePairsIfAbsent(ctx)) return;
  } else if (AnyKeyPresent(ctx)) {
    return ctx.w.Integer(0);  // set since the BeforeLock looked
  }
  if (CommitPairs(ctx)) ctx.w.Integer(1);
}

void StrLen(Ctx& ctx) {
  auto info = ctx.store().Info(ctx.argv[1]);
  if (!info.ok()) NotifyKeyMiss(ctx, ctx.argv[1]);
  ctx.w.Integer(info.ok() ? static_cast<int64_t>(info->value_size) : 0);
}

void GetRange(Ctx& ctx) {
  int64_t start, end;
  if (!ArgInt64(ctx, ctx.argv[2], &start) || !ArgInt64(ctx, ctx.argv[3], &end)) return;
  std::optional<Value> r;
  if (!ReadValue(ctx, ctx.argv[1], &r)) return;
  const int64_t len = r ? static_cast<int64_t>(r->size()) : 0;
  if (start < 0 && end < 0 && start > end) return ctx.w.BulkString("");
  const std::optional<IndexRange> range = ClampRange(start, end, len);
  if (!range) return ctx.w.BulkString("");
  ctx.w.BulkString(r->view().substr(range->first, range->last - range->first + 1));
}

void Append(Ctx& ctx) {
  std::string cur;
  bool found;
  if (!ReadString(ctx, ctx.argv[1], &cur, &found)) return;
  if (!WithinBulkLimit(ctx, cur.size() + ctx.argv[2].size())) return;
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
  std::string cur;
  bool found;
  if (!ReadString(ctx, ctx.argv[1], &cur, &found)) return;
  // As Redis: writing nothing answers the length, whatever the offset.
  if (part.empty()) return ctx.w.Integer(static_cast<int64_t>(cur.size()));
  if (!WithinBulkLimit(ctx, static_cast<uint64_t>(offset) + part.size())) return;
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

// Redis's string2ld: the whole string is a long double (strtold's syntax: decimal, hex, inf),
// without leading space, not NaN, and not overflowing.
bool ParseLongDouble(const std::string& s, long double* out) {
  constexpr size_t kMaxLongDoubleChars = 5 * 1024;
  if (s.empty() || s.size() >= kMaxLongDoubleChars ||
      std::isspace(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  char* end = nullptr;
  errno = 0;
  const long double v = std::strtold(s.c_str(), &end);
  if (end != s.c_str() + s.size() || std::isnan(v)) return false;
  if (errno == ERANGE && (std::isinf(v) || std::fpclassify(v) == FP_ZERO)) return false;
  *out = v;
  return true;
}

// Redis's ld2string(LD_STR_HUMAN): 17 decimals, trailing zeros (and a bare '.') removed, "-0"
// as "0".
std::string HumanLongDouble(long double v) {
  char buf[5 * 1024 + 64];
  int n = std::snprintf(buf, sizeof(buf), "%.17Lf", v);
  std::string out(buf, static_cast<size_t>(std::max(n, 0)));
  if (out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  return out == "-0" ? "0" : out;
}

// INCRBYFLOAT key increment: the value as a long double plus the increment, stored (TTL kept)
// and replied as Redis formats it.
void IncrByFloat(Ctx& ctx) {
  std::string cur;
  bool found;
  if (!ReadString(ctx, ctx.argv[1], &cur, &found)) return;
  long double value = 0, incr = 0;
  if ((found && !ParseLongDouble(cur, &value)) || !ParseLongDouble(ctx.argv[2], &incr)) {
    return ctx.w.Error("ERR value is not a valid float");
  }
  value += incr;
  if (std::isnan(value) || std::isinf(value)) {
    return ctx.w.Error("ERR increment would produce NaN or Infinity");
  }
  const std::string text = HumanLongDouble(value);
  if (PutKeepingTtl(ctx, ctx.argv[1], text, "incrbyfloat")) ctx.w.BulkString(text);
}

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN], as Redis 7 (commands/lcs.h); a
// missing key is the empty string. The table it needs is bounded by proto-max-bulk-len.
struct LcsOptions {
  bool len = false, idx = false, with_match_len = false;
  int64_t min_match_len = 0;
};

bool ParseLcsOptions(Ctx& ctx, LcsOptions* o) {
  for (size_t i = 3; i < ctx.argc(); ++i) {
    const std::string opt = ToLower(ctx.argv[i]);
    if (opt == "idx") {
      o->idx = true;
    } else if (opt == "len") {
      o->len = true;
    } else if (opt == "withmatchlen") {
      o->with_match_len = true;
    } else if (opt == "minmatchlen" && i + 1 < ctx.argc()) {
      if (!ArgInt64(ctx, ctx.argv[++i], &o->min_match_len)) return false;
      o->min_match_len = std::max<int64_t>(o->min_match_len, 0);
    } else {
      ctx.w.Error(kErrSyntax);
      return false;
    }
  }
  if (o->len && o->idx) {
    ctx.w.Error("ERR If you want both the length and indexes, please just use IDX.");
    return false;
  }
  return true;
}

void ReplyLcsMatches(Ctx& ctx, const LcsResult& r, bool with_match_len) {
  ctx.w.MapHeader(2);
  ctx.w.BulkString("matches");
  ctx.w.ArrayHeader(r.matches.size());
  for (const LcsMatch& m : r.matches) {
    ctx.w.ArrayHeader(with_match_len ? 3 : 2);
    for (auto [start, end] : {std::pair{m.a_start, m.a_end}, std::pair{m.b_start, m.b_end}}) {
      ctx.w.ArrayHeader(2);
      ctx.w.Integer(static_cast<int64_t>(start));
      ctx.w.Integer(static_cast<int64_t>(end));
    }
    if (with_match_len) ctx.w.Integer(static_cast<int64_t>(m.len));
  }
  ctx.w.BulkString("len");
  ctx.w.Integer(static_cast<int64_t>(r.len));
}

void Lcs(Ctx& ctx) {
  LcsOptions o;
  if (!ParseLcsOptions(ctx, &o)) return;
  std::optional<Value> stored_a, stored_b;  // a missing key is the empty string
  if (!ReadValue(ctx, ctx.argv[1], &stored_a) || !ReadValue(ctx, ctx.argv[2], &stored_b)) return;
  const std::string_view a = stored_a ? stored_a->view() : std::string_view();
  const std::string_view b = stored_b ? stored_b->view() : std::string_view();
  if (a.size() > kLcsMaxInputLen || b.size() > kLcsMaxInputLen) {
    return ctx.w.Error("ERR String too long for LCS");
  }
  if (LcsTableBytes(a.size(), b.size()) > ctx.core.config.snapshot()->proto_max_bulk_len) {
    return ctx.w.Error(
        "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
  }
  LcsResult r;
  try {
    r = ComputeLcs(a, b, !o.idx && !o.len, o.idx, static_cast<uint64_t>(o.min_match_len));
  } catch (const std::bad_alloc&) {
    return ctx.w.Error("ERR Insufficient memory, failed allocating transient memory for LCS");
  }
  if (o.idx) return ReplyLcsMatches(ctx, r, o.with_match_len);
  if (o.len) return ctx.w.Integer(static_cast<int64_t>(r.len));
  ctx.w.BulkMove(std::move(r.lcs));
}

constexpr CommandRow kRows[] = {
    {"get", 2, "readonly fast_if_in_memory", WithFlags(kOneKey, "RO access"), Get},
    {"set", -3, "write moves_args fast_if_put_in_memory", WithFlags(kOneKey, "OW update"), Set},
    {"setnx", 3, "write", WithFlags(kOneKey, "OW insert"), SetNx},
    {"getset", 3, "write exclusive", WithFlags(kOneKey, "RW access update"), GetSet},
    {"setex", 4, "write moves_args", WithFlags(kOneKey, "OW update"), SetEx<kSeconds>},
    {"psetex", 4, "write moves_args", WithFlags(kOneKey, "OW update"), SetEx<kMilliseconds>},
    {"getex", -2, "write", WithFlags(kOneKey, "RW access update"), GetEx},
    {"getdel", 2, "write", WithFlags(kOneKey, "RW access delete"), GetDel},
    {"mget", -2, "readonly", WithFlags(kEveryArgKey, "RO access"), MGet},
    {"mset",
     -3,
     "write exclusive moves_args",
     WithFlags(kKeyValuePairs, "OW update"),
     MSet,
     {},
     StagePairs},
    {"msetnx",
     -3,
     "write exclusive moves_args",
     WithFlags(kKeyValuePairs, "OW insert"),
     MSetNx,
     {},
     StagePairsIfAbsent},
    {"strlen", 2, "readonly fast", WithFlags(kOneKey, "RO"), StrLen},
    {"getrange", 4, "readonly", WithFlags(kOneKey, "RO access"), GetRange},
    {"substr", 4, "readonly", WithFlags(kOneKey, "RO access"), GetRange},
    {"append", 3, "write exclusive", WithFlags(kOneKey, "RW insert"), Append},
    {"setrange", 4, "write exclusive", WithFlags(kOneKey, "RW update"), SetRange},
    {"incr", 2, "write exclusive", WithFlags(kOneKey, "RW access update"), AddConstant<1>},
    {"decr", 2, "write exclusive", WithFlags(kOneKey, "RW access update"), AddConstant<-1>},
    {"incrby", 3, "write exclusive", WithFlags(kOneKey, "RW access update"), IncrBy},
    {"decrby", 3, "write exclusive", WithFlags(kOneKey, "RW access update"), DecrBy},
    {"incrbyfloat", 3, "write exclusive", WithFlags(kOneKey, "RW access update"), IncrByFloat},
    {"lcs", -3, "readonly", {1, 2, 1, {}, "RO access"}, Lcs},
};

}  // namespace

std::span<const CommandRow> StringCommands() {
  return kRows;
}

}  // namespace larder::server
