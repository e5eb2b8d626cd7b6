#include "commands/string_value.h"

#include <algorithm>

namespace larder::server {

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

bool PutKeepingTtl(Ctx& ctx, std::string_view key, std::string_view value, std::string_view event) {
  PutOptions po = ctx.WriteOptions();
  po.keep_ttl = true;
  Status s = ctx.store().Put(key, value, po);
  if (!s.ok()) {
    ReplyStatus(ctx, s);
    return false;
  }
  if (!event.empty()) ctx.core.events.Notify(kNotifyString, event, key);
  return true;
}

std::optional<IndexRange> ClampRange(int64_t start, int64_t end, int64_t total) {
  if (start < 0) start = std::max<int64_t>(0, total + start);
  if (end < 0) end = std::max<int64_t>(0, total + end);
  end = std::min(end, total - 1);
  if (start > end) return std::nullopt;
  return IndexRange{static_cast<uint64_t>(start), static_cast<uint64_t>(end)};
}

bool WithinBulkLimit(Ctx& ctx, uint64_t bytes) {
  if (bytes <= ctx.core.config.snapshot()->proto_max_bulk_len) return true;
  ctx.w.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
  return false;
}

}  // namespace larder::server
