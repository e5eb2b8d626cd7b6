// Server commands: CONFIG DBSIZE FLUSHDB FLUSHALL TIME LASTSAVE SAVE BGSAVE SHUTDOWN WAIT.
// (INFO is in info_cmds.cc, COMMAND in command_cmds.cc.)
#include <set>

#include "commands/families.h"
#include "commands/subcommands.h"
#include "commands/util.h"

namespace larder::server {

namespace {

// CONFIG GET pattern [pattern ...]: every matching option once, in table order per pattern.
// As Redis, an option asked for by its name (no glob character) is looked up exactly and
// named as it was first asked ("TIMEOUT"), one a pattern matched by its own name.
void ConfigGet(Ctx& ctx) {
  std::vector<std::pair<std::string, std::string>> all;
  std::set<std::string> seen;
  for (size_t i = 2; i < ctx.argc(); ++i) {
    const std::string& arg = ctx.argv[i];
    const bool by_name = arg.find_first_of("[*?") == std::string::npos;
    for (auto& [name, value] : ctx.core.config.Get(arg)) {
      if (by_name && !EqualsNoCase(name, arg)) continue;  // "time\\out" is a name, not a glob
      if (seen.insert(name).second) all.emplace_back(by_name ? arg : name, std::move(value));
    }
  }
  ctx.w.MapHeader(all.size());
  for (const auto& [name, value] : all) {
    ctx.w.BulkString(name);
    ctx.w.BulkString(value);
  }
}

// CONFIG SET name value [name value ...]: all or nothing.
void ConfigSet(Ctx& ctx) {
  if (ctx.argc() % 2 != 0) return ctx.w.Error(kErrSyntax);  // Redis: an unpaired name
  std::vector<std::pair<std::string, std::string>> pairs;
  for (size_t i = 2; i < ctx.argc(); i += 2) pairs.emplace_back(ctx.argv[i], ctx.argv[i + 1]);
  if (auto err = ctx.core.config.Set(pairs)) return ctx.w.Error(*err);
  ctx.w.SimpleString("OK");
}

// CONFIG RESETSTAT: every monotonic counter, the engine's and the server's, and the per-command
// statistics back to 0 (the slow log and the latency monitor have their own RESET, as in Redis).
void ConfigResetStat(Ctx& ctx) {
  ctx.store().ResetCounters();
  ctx.core.stats.Reset();
  ctx.core.commands.Reset();
  ctx.core.errors.Reset();
  ctx.w.SimpleString("OK");
}

void ConfigRewrite(Ctx& ctx) {
  if (auto err = ctx.core.config.Rewrite()) return ctx.w.Error(*err);
  ctx.w.SimpleString("OK");
}

constexpr SubcommandRow kConfigSubcommands[] = {
    {"get", -3, ConfigGet, "GET <pattern> [<pattern> ...]",
     "Return parameters matching the glob-like <pattern> and their values."},
    {"set", -4, ConfigSet, "SET <directive> <value> [<directive> <value> ...]",
     "Set the configuration <directive> to <value>."},
    {"resetstat", 2, ConfigResetStat, "RESETSTAT",
     "Reset statistics reported by the INFO command."},
    {"rewrite", 2, ConfigRewrite, "REWRITE", "Rewrite the configuration file."},
};

void Config(Ctx& ctx) {
  RunSubcommand(ctx, kConfigSubcommands);
}

void DbSize(Ctx& ctx) {
  ctx.w.Integer(static_cast<int64_t>(ctx.store().GetStats().keys));
}

// FLUSHDB / FLUSHALL [ASYNC|SYNC]
void FlushAll(Ctx& ctx) {
  if (ctx.argc() > 2 || (ctx.argc() == 2 && !EqualsNoCase(ctx.argv[1], "async") &&
                         !EqualsNoCase(ctx.argv[1], "sync"))) {
    return ctx.w.Error(kErrSyntax);
  }
  // A migration from this node would go on sending values that are gone: it fails instead.
  ctx.core.migrator.Abort("FLUSHALL ran on the source");
  Status s = ctx.store().Clear();
  ctx.core.tracking.InvalidateAll();  // a Clear that failed may have removed keys too
  if (!s.ok()) return ReplyStatus(ctx, s);
  ctx.w.SimpleString("OK");
}

// TIME: the server's clock (millisecond resolution: the microseconds are a multiple of 1000).
void Time(Ctx& ctx) {
  const int64_t now = ctx.NowMs();
  ctx.w.ArrayHeader(2);
  ctx.w.BulkString(std::to_string(now / 1000));
  ctx.w.BulkString(std::to_string(now % 1000 * 1000));
}

void LastSave(Ctx& ctx) {
  ctx.w.Integer(ctx.core.process.lastsave_s.load());
}

// Flushes the store; true, with LASTSAVE updated, on success (else the error is replied).
bool FlushStore(Ctx& ctx) {
  Status s = ctx.store().Flush();
  if (!s.ok()) {
    ReplyStatus(ctx, s);
    return false;
  }
  ctx.core.process.lastsave_s = ctx.NowMs() / 1000;
  return true;
}

void Save(Ctx& ctx) {
  if (FlushStore(ctx)) ctx.w.SimpleString("OK");
}

// BGSAVE [SCHEDULE]: flushes now (on the engine pool), then answers as Redis does (which, in a
// transaction, schedules its save for after it).
void BgSave(Ctx& ctx) {
  if (ctx.argc() > 2 || (ctx.argc() == 2 && !EqualsNoCase(ctx.argv[1], "schedule"))) {
    return ctx.w.Error(kErrSyntax);
  }
  if (FlushStore(ctx)) {
    ctx.w.SimpleString(ctx.in_exec ? "Background saving scheduled" : "Background saving started");
  }
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: the store is always closed cleanly (flushed),
// so NOSAVE and SAVE behave alike. No reply: the connection closes, as with Redis. The options
// are checked as Redis checks them: all known, NOSAVE not with SAVE, ABORT alone (and with
// nothing to abort: Larder's shutdown does not wait).
void Shutdown(Ctx& ctx) {
  bool nosave = false, save = false, other = false, abort = false;
  for (size_t i = 1; i < ctx.argc(); ++i) {
    const std::string opt = ToLower(ctx.argv[i]);
    if (opt == "nosave") {
      nosave = true;
    } else if (opt == "save") {
      save = true;
    } else if (opt == "now" || opt == "force") {
      other = true;
    } else if (opt == "abort") {
      abort = true;
    } else {
      return ctx.w.Error(kErrSyntax);
    }
  }
  if ((abort && (nosave || save || other)) || (nosave && save)) return ctx.w.Error(kErrSyntax);
  if (abort) return ctx.w.Error("ERR No shutdown in progress.");
  ctx.client.close_after_reply = true;
  if (ctx.core.request_shutdown) ctx.core.request_shutdown();
}

void Wait(Ctx& ctx) {
  int64_t n, timeout;
  if (!ArgInt64(ctx, ctx.argv[1], &n)) return;
  if (!ParseInt64(ctx.argv[2], &timeout)) {
    return ctx.w.Error("ERR timeout is not an integer or out of range");
  }
  if (timeout < 0) return ctx.w.Error("ERR timeout is negative");
  ctx.w.Integer(0);
}

// ROLE: as Redis answers on a master with no replicas (`master`, replication offset 0, no
// replicas), as INFO replication describes this node; Larder does not replicate.
void Role(Ctx& ctx) {
  ctx.w.ArrayHeader(3);
  ctx.w.BulkString("master");
  ctx.w.Integer(0);
  ctx.w.ArrayHeader(0);
}

// SWAPDB index1 index2: of the one database, only SWAPDB 0 0, which changes nothing, as in
// Redis run with `databases 1`.
void SwapDb(Ctx& ctx) {
  if (RefusedInClusterMode(ctx)) return;
  int64_t first, second;
  if (!ArgDbIndex(ctx, ctx.argv[1], &first, "ERR invalid first DB index") ||
      !ArgDbIndex(ctx, ctx.argv[2], &second, "ERR invalid second DB index")) {
    return;
  }
  if (first != 0 || second != 0) return ctx.w.Error(kErrDbRange);
  ctx.w.SimpleString("OK");
}

constexpr CommandRow kRows[] = {
    {"config", -2, "admin loading stale", kNoKeys, Config, kConfigSubcommands},
    {"dbsize", 1, "readonly fast", kNoKeys, DbSize},
    {"flushdb", -1, "write", kNoKeys, FlushAll},
    {"flushall", -1, "write", kNoKeys, FlushAll},
    {"swapdb", 3, "write fast", kNoKeys, SwapDb},
    {"time", 1, "fast loading stale", kNoKeys, Time},
    {"lastsave", 1, "fast loading stale", kNoKeys, LastSave},
    {"save", 1, "admin no_multi", kNoKeys, Save},
    {"bgsave", -1, "admin", kNoKeys, BgSave},
    {"shutdown", -1, "admin loading stale no_multi", kNoKeys, Shutdown},
    {"wait", 3, "fast", kNoKeys, Wait},
    {"role", 1, "loading stale fast", kNoKeys, Role},
};

}  // namespace

std::span<const CommandRow> ServerCommands() {
  return kRows;
}

}  // namespace larder::server
