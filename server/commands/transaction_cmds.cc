// Transactions: MULTI EXEC DISCARD WATCH UNWATCH. Queued commands were validated (lookup,
// arity, auth) when queued; EXEC runs them back to back under the exclusive server lock, so no
// other client's command interleaves, unless a WATCHed key changed since it was watched
// (core/watched_keys.h): then it runs none and answers a null reply.
#include <mutex>
#include <shared_mutex>

#include "commands/dispatch.h"
#include "commands/families.h"
#include "commands/util.h"

namespace larder::server {

namespace {
void Multi(Ctx& ctx) {
  if (ctx.client.in_multi) return ctx.w.Error("ERR MULTI calls can not be nested");
  ctx.client.BeginTransaction();
  ctx.client.multi_error = false;
  ctx.client.queued.clear();
  ctx.w.SimpleString("OK");
}

void Exec(Ctx& ctx) {
  ClientState& c = ctx.client;
  if (!c.in_multi) return ctx.w.Error("ERR EXEC without MULTI");
  if (c.multi_error) {
    ctx.core.EndTransaction(c);
    return ctx.w.Error("EXECABORT Transaction discarded because of previous errors.");
  }
  std::vector<QueuedRequest> queued = std::move(c.queued);
  // The row's `locks_itself`: dispatch took no lock; one exclusive hold covers every command,
  // and the check of the watched keys before them.
  std::unique_lock<FairSharedMutex> lock(ctx.core.exec_lock);
  const bool watched_changed = c.watching && ctx.core.watched.Changed(c.id, ctx.store());
  ctx.core.EndTransaction(c);
  // Each command was routed when queued; the slot may have moved since (a migration, a new
  // topology). As Redis, the whole transaction is routed again, its keys in one slot, and a
  // redirect discards it.
  if (auto redirect = TransactionRedirect(ctx.core, c, queued)) return ctx.w.Error(*redirect);
  if (watched_changed) return ctx.w.NullArray();
  ctx.w.ArrayHeader(queued.size());
  for (QueuedRequest& request : queued) {
    // Once the reply is abandoned (past the client's hard output limit: it is closed), a
    // read's reply would be thrown away; the writes still run, the transaction being atomic.
    if (ctx.w.abandoned() && request.spec->Has(kReadonly)) continue;
    RunQueued(ctx.core, c, request, ctx.w);
  }
}

void Discard(Ctx& ctx) {
  if (!ctx.client.in_multi) return ctx.w.Error("ERR DISCARD without MULTI");
  ctx.core.EndTransaction(ctx.client);
  ctx.w.SimpleString("OK");
}

void Watch(Ctx& ctx) {
  if (ctx.client.in_multi) return ctx.w.Error("ERR WATCH inside MULTI is not allowed");
  ctx.client.watching = true;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    ctx.core.watched.Watch(ctx.client.id, ctx.argv[i], ctx.store());
  }
  ctx.w.SimpleString("OK");
}

void Unwatch(Ctx& ctx) {
  ctx.core.Unwatch(ctx.client);
  ctx.w.SimpleString("OK");
}

constexpr CommandRow kRows[] = {
    {"multi", 1, "fast loading stale runs_in_multi", kNoKeys, Multi},
    {"exec", 1, "loading stale skip_slowlog runs_in_multi locks_itself", kNoKeys, Exec},
    {"discard", 1, "fast loading stale runs_in_multi", kNoKeys, Discard},
    {"watch", -2, "fast loading stale runs_in_multi", WithFlags(kEveryArgKey, "RO"), Watch},
    {"unwatch", 1, "fast loading stale", kNoKeys, Unwatch},
};

}  // namespace

std::span<const CommandRow> TransactionCommands() {
  return kRows;
}

}  // namespace larder::server
