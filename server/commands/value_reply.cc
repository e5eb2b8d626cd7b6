// How a stored value is replied: from the engine's buffer, from its file (sendfile), or
// streamed while a cold value is read. The contracts are in value_reply.h.
#include "commands/value_reply.h"

#include <algorithm>
#include <memory>
#include <string>

#include "log.h"

namespace larder::server {

void ReplyValue(Ctx& ctx, Value value) {
  auto pinned = std::make_shared<Value>(std::move(value));
  ctx.w.BulkExternal(pinned->data(), pinned->size(), pinned);
}

void NotifyKeyMiss(Ctx& ctx, std::string_view key) {
  ctx.core.events.Notify(kNotifyKeyMiss, "keymiss", key);
}

void NotifyKeyMisses(Ctx& ctx, const std::vector<std::string_view>& keys) {
  if (!ctx.core.events.Publishes(kNotifyKeyMiss)) return;
  for (std::string_view key : keys) {
    if (!ctx.store().Contains(key)) NotifyKeyMiss(ctx, key);
  }
}

void ReplyMiss(Ctx& ctx, std::string_view key) {
  NotifyKeyMiss(ctx, key);
  ctx.w.Null();
}

bool ReadValue(Ctx& ctx, std::string_view key, std::optional<Value>* out) {
  auto r = ctx.store().Get(key);
  out->reset();
  if (r.ok()) {
    out->emplace(std::move(r.value()));
    return true;
  }
  if (!r.status().IsNotFound()) {
    ReplyStatus(ctx, r.status());
    return false;
  }
  NotifyKeyMiss(ctx, key);
  return true;
}

namespace {

// Whether GET sends from the value's file (option `sendfile`; docs/architecture.md has the
// measurements behind its default).
bool UseSendfile(const Ctx& ctx) {
  const std::string& mode = ctx.core.config.snapshot()->sendfile;
  return mode == "always" || (mode == "remote" && !ctx.client.same_host);
}

// A value the page cache does not hold is read and sent in pieces of this size (StreamCold).
constexpr size_t kStreamPieceBytes = 256 * 1024;

// Ends a streamed reply whose value could not be read whole or failed verification (a value
// replaced or evicted meanwhile is still read whole: see Store::OpenValue): nil if nothing of
// it is queued yet (as Get answers a corrupt value), otherwise the reply is abandoned and the
// connection closes.
void FailStream(Ctx& ctx, std::string_view key, bool begun, const Status& s) {
  if (!begun) return ReplyMiss(ctx, key);
  Log(LogLevel::kWarning, "closing client id=" + std::to_string(ctx.client.id) +
                              ": a value it was being sent could not be read or failed "
                              "verification (" +
                              s.ToString() + ")");
  ctx.w.AbandonReply();
}

// Replies the value of `key` while reading it, when the connection can send while a command
// runs (ReplyWriter::can_flush) and the page cache does not hold the value: each piece but the
// last is sent as soon as it is read, so the client receives one while the disk reads the next
// (the first Read queues the reads of the rest). The last piece and the CRLF follow only once the
// whole value passed its checksum, so no client ever receives a complete wrong value; one that
// fails after its first bytes were sent closes the connection (FailStream).
// Returns false, having replied nothing, where it does not apply. Errors as ReplyStored.
bool StreamCold(Ctx& ctx, std::string_view key, bool errors_as_nil) {
  if (!ctx.w.can_flush() || ctx.store().InMemory(key, UINT64_MAX)) return false;
  auto r = ctx.store().OpenValue(key);
  if (!r.ok()) {
    if (r.status().IsNotFound()) {
      ReplyMiss(ctx, key);
    } else {
      errors_as_nil ? ctx.w.Null() : ReplyStatus(ctx, r.status());
    }
    return true;
  }
  ValueReader& reader = **r;
  const uint64_t size = reader.size();
  std::shared_ptr<char[]> buf(new char[size]);  // not zeroed: the reads fill it
  uint64_t queued = 0;                          // bytes of the value in the reply so far
  for (;;) {
    const size_t n = std::min<uint64_t>(kStreamPieceBytes, size - queued);
    // A failed read is reported by Finish; the last piece waits for the checksum.
    if (!reader.Read(buf.get() + queued, n).ok() || queued + n == size) break;
    if (queued == 0) {
      ctx.w.BulkBegin(size);
      ServerStats::Count(ctx.core.stats.gets_streamed);
    }
    ctx.w.BulkPart(buf.get() + queued, n, buf);
    ctx.w.Flush();
    queued += n;
  }
  if (Status s = reader.Finish(); !s.ok()) {
    FailStream(ctx, key, queued > 0, s);
    return true;
  }
  if (queued == 0) {
    ctx.w.BulkExternal(buf.get(), size, buf);
    return true;
  }
  ctx.w.BulkPart(buf.get() + queued, size - queued, buf);
  ctx.w.BulkEnd();
  return true;
}

}  // namespace

void ReplyStored(Ctx& ctx, std::string_view key, bool errors_as_nil) {
  auto fail = [&](const Status& s) { errors_as_nil ? ctx.w.Null() : ReplyStatus(ctx, s); };
  if (StreamCold(ctx, key, errors_as_nil)) return;
  if (UseSendfile(ctx)) {
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

}  // namespace larder::server
