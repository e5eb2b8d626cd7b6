#include "commands/expiry.h"

#include "commands/util.h"

namespace larder::server {

namespace {

constexpr uint32_t kAnyTime = kKeepTtl | kPersist | kEx | kPx | kExAt | kPxAt;

// Redis lets EX follow EX (the last wins) but no other way of setting the expiry.
constexpr StringOptionRow kEx_{"ex", kEx, kAnyTime & ~kEx, &kSeconds};
constexpr StringOptionRow kPx_{"px", kPx, kAnyTime & ~kPx, &kMilliseconds};
constexpr StringOptionRow kExAt_{"exat", kExAt, kAnyTime & ~kExAt, &kUnixSeconds};
constexpr StringOptionRow kPxAt_{"pxat", kPxAt, kAnyTime & ~kPxAt, &kUnixMilliseconds};

constexpr StringOptionRow kSetRows[] = {
    {"nx", kNx, kXx, nullptr},
    {"xx", kXx, kNx, nullptr},
    {"get", kGet, 0, nullptr},
    {"keepttl", kKeepTtl, kAnyTime & ~kKeepTtl, nullptr},
    kEx_,
    kPx_,
    kExAt_,
    kPxAt_,
};

constexpr StringOptionRow kGetExRows[] = {
    {"persist", kPersist, kAnyTime & ~kPersist, nullptr}, kEx_, kPx_, kExAt_, kPxAt_,
};

constexpr ExpireConditionRow kExpireRows[] = {
    {"nx", kIfNoExpiry, [](int64_t cur, int64_t) { return cur == 0; }},
    {"xx", kIfExpiry, [](int64_t cur, int64_t) { return cur != 0; }},
    // No expiry counts as infinite: nothing is greater, anything is less.
    {"gt", kIfGreater, [](int64_t cur, int64_t when) { return cur != 0 && when > cur; }},
    {"lt", kIfLess, [](int64_t cur, int64_t when) { return cur == 0 || when < cur; }},
};

// Conditions that may not be combined, and Redis's error for each pair, checked in order.
struct Incompatible {
  uint32_t conditions;
  std::string_view error;
};
constexpr std::string_view kErrNxAndOthers =
    "ERR NX and XX, GT or LT options at the same time are not compatible";
constexpr Incompatible kIncompatible[] = {
    {kIfNoExpiry | kIfExpiry, kErrNxAndOthers},
    {kIfNoExpiry | kIfGreater, kErrNxAndOthers},
    {kIfNoExpiry | kIfLess, kErrNxAndOthers},
    {kIfGreater | kIfLess, "ERR GT and LT options at the same time are not compatible"},
};

bool ReplyInvalidExpireTime(Ctx& ctx) {
  ctx.w.Error("ERR invalid expire time in '" + std::string(ctx.spec.name) + "' command");
  return false;
}

}  // namespace

const std::span<const StringOptionRow> kSetOptions = kSetRows;
const std::span<const StringOptionRow> kGetExOptions = kGetExRows;
const std::span<const ExpireConditionRow> kExpireConditions = kExpireRows;

bool ParseStringOptions(Ctx& ctx, size_t first, std::span<const StringOptionRow> rows,
                        StringOptions* out) {
  *out = StringOptions{};
  for (size_t i = first; i < ctx.argc(); ++i) {
    const StringOptionRow* row = nullptr;
    for (const StringOptionRow& r : rows) {
      if (EqualsNoCase(ctx.argv[i], r.word)) row = &r;
    }
    const bool has_time_arg = i + 1 < ctx.argc();
    if (row == nullptr || (out->given & row->conflicts) || (row->time && !has_time_arg)) {
      ctx.w.Error(kErrSyntax);
      return false;
    }
    out->given |= row->option;
    if (row->time) {
      out->time = row->time;
      out->time_arg = ctx.argv[++i];
    }
  }
  return true;
}

bool ExpireAtOfSetTime(Ctx& ctx, std::string_view arg, const TimeUnit& unit, int64_t* at_ms) {
  int64_t v;
  if (!ArgInt64(ctx, arg, &v)) return false;
  if (v <= 0 || v > INT64_MAX / unit.ms) return ReplyInvalidExpireTime(ctx);
  int64_t ms = v * unit.ms;
  if (!unit.absolute) {
    const int64_t now = ctx.NowMs();
    if (ms > INT64_MAX - now) return ReplyInvalidExpireTime(ctx);
    ms += now;
  }
  *at_ms = ms;
  return true;
}

bool ParseExpireConditions(Ctx& ctx, size_t first, uint32_t* conditions) {
  *conditions = 0;
  for (size_t i = first; i < ctx.argc(); ++i) {
    const ExpireConditionRow* row = nullptr;
    for (const ExpireConditionRow& r : kExpireRows) {
      if (EqualsNoCase(ctx.argv[i], r.word)) row = &r;
    }
    if (row == nullptr) {
      ctx.w.Error("ERR Unsupported option " + ctx.argv[i]);
      return false;
    }
    *conditions |= row->condition;
  }
  for (const Incompatible& pair : kIncompatible) {
    if ((*conditions & pair.conditions) == pair.conditions) {
      ctx.w.Error(pair.error);
      return false;
    }
  }
  return true;
}

bool ExpireConditionsAllow(uint32_t conditions, int64_t current_ms, int64_t when_ms) {
  for (const ExpireConditionRow& row : kExpireRows) {
    if ((conditions & row.condition) && !row.allows(current_ms, when_ms)) return false;
  }
  return true;
}

bool ExpireAtOfExpireTime(Ctx& ctx, std::string_view arg, const TimeUnit& unit, int64_t* at_ms) {
  int64_t when;
  if (!ArgInt64(ctx, arg, &when)) return false;
  if (when > INT64_MAX / unit.ms || when < INT64_MIN / unit.ms) return ReplyInvalidExpireTime(ctx);
  when *= unit.ms;
  const int64_t base = unit.absolute ? 0 : ctx.NowMs();
  if (when > INT64_MAX - base) return ReplyInvalidExpireTime(ctx);
  *at_ms = when + base;
  return true;
}

}  // namespace larder::server
