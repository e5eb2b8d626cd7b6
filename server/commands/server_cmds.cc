// Server commands: CONFIG DBSIZE FLUSHDB FLUSHALL TIME LASTSAVE SAVE BGSAVE SHUTDOWN WAIT
// COMMAND. (INFO is in info.cc.)
#include <sys/time.h>

#include <set>

#include "commands/command_table.h"
#include "commands/util.h"

namespace larder::server {
namespace cmd {

namespace {

void FlagNames(uint32_t flags, std::vector<std::string_view>* out) {
  if (flags & kWrite) out->push_back("write");
  if (flags & kReadonly) out->push_back("readonly");
  if (flags & kAdmin) out->push_back("admin");
  if (flags & kNoauth) out->push_back("no_auth");
  if (flags & kLoading) out->push_back("loading");
  if (flags & kStale) out->push_back("stale");
  if (flags & kFast) out->push_back("fast");
  if (flags & kNoMulti) out->push_back("no_multi");
}

// One COMMAND INFO entry: name, arity, flags, first key, last key, step, ACL categories,
// tips, key specs, subcommands.
void CommandInfo(Ctx& ctx, const CommandSpec& spec) {
  ctx.w.ArrayHeader(10);
  ctx.w.BulkString(spec.name);
  ctx.w.Integer(spec.arity);
  std::vector<std::string_view> flags;
  FlagNames(spec.flags, &flags);
  ctx.w.SetHeader(flags.size());
  for (std::string_view f : flags) ctx.w.SimpleString(f);
  ctx.w.Integer(spec.first_key);
  ctx.w.Integer(spec.last_key);
  ctx.w.Integer(spec.step);
  ctx.w.SetHeader(0);
  ctx.w.SetHeader(0);
  ctx.w.ArrayHeader(0);
  ctx.w.ArrayHeader(0);
}

}  // namespace

void Config(Ctx& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "get" && ctx.argc() >= 3) {
    std::vector<std::pair<std::string, std::string>> all;
    std::set<std::string> seen;
    for (size_t i = 2; i < ctx.argc(); ++i) {
      for (auto& kv : ctx.core.ConfigGet(ctx.argv[i])) {
        if (seen.insert(kv.first).second) all.push_back(std::move(kv));
      }
    }
    ctx.w.MapHeader(all.size());
    for (const auto& [name, value] : all) {
      ctx.w.BulkString(name);
      ctx.w.BulkString(value);
    }
    return;
  }
  if (sub == "set" && ctx.argc() >= 4 && ctx.argc() % 2 == 0) {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (size_t i = 2; i < ctx.argc(); i += 2) pairs.emplace_back(ctx.argv[i], ctx.argv[i + 1]);
    if (auto err = ctx.core.ConfigSet(pairs)) return ctx.w.Error(*err);
    return ctx.w.SimpleString("OK");
  }
  if (sub == "resetstat" && ctx.argc() == 2) {
    ctx.store().ResetCounters();
    ctx.core.ResetStats();
    return ctx.w.SimpleString("OK");
  }
  if (sub == "rewrite" && ctx.argc() == 2) {
    if (auto err = ctx.core.ConfigRewrite()) return ctx.w.Error(*err);
    return ctx.w.SimpleString("OK");
  }
  if (sub == "help") {
    ctx.w.ArrayHeader(1);
    return ctx.w.SimpleString("CONFIG GET <pattern>|SET <name> <value>|RESETSTAT|REWRITE");
  }
  if (sub == "get" || sub == "set" || sub == "resetstat" || sub == "rewrite") {
    return ReplyArity(ctx, "config|" + sub);
  }
  ReplyUnknownSub(ctx, ctx.argv[1], "CONFIG");
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
  Status s = ctx.store().Clear();
  if (!s.ok()) return ReplyStatus(ctx, s);
  ctx.w.SimpleString("OK");
}

void Time(Ctx& ctx) {
  struct timeval tv;
  gettimeofday(&tv, nullptr);
  ctx.w.ArrayHeader(2);
  ctx.w.BulkString(std::to_string(tv.tv_sec));
  ctx.w.BulkString(std::to_string(tv.tv_usec));
}

void LastSave(Ctx& ctx) {
  ctx.w.Integer(ctx.core.lastsave_s.load());
}

void Save(Ctx& ctx) {
  Status s = ctx.store().Flush();
  if (!s.ok()) return ReplyStatus(ctx, s);
  ctx.core.lastsave_s = NowMs() / 1000;
  ctx.w.SimpleString("OK");
}

// BGSAVE [SCHEDULE]: flushes now (on the engine pool), then answers as Redis does.
void BgSave(Ctx& ctx) {
  if (ctx.argc() > 2 || (ctx.argc() == 2 && !EqualsNoCase(ctx.argv[1], "schedule"))) {
    return ctx.w.Error(kErrSyntax);
  }
  Status s = ctx.store().Flush();
  if (!s.ok()) return ReplyStatus(ctx, s);
  ctx.core.lastsave_s = NowMs() / 1000;
  ctx.w.SimpleString("Background saving started");
}

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]: the store is always closed cleanly (flushed), so
// NOSAVE and SAVE behave alike. No reply: the connection closes, as with Redis.
void Shutdown(Ctx& ctx) {
  for (size_t i = 1; i < ctx.argc(); ++i) {
    std::string opt = ToLower(ctx.argv[i]);
    if (opt == "abort") return ctx.w.Error("ERR No shutdown in progress.");
    if (opt != "nosave" && opt != "save" && opt != "now" && opt != "force") {
      return ctx.w.Error(kErrSyntax);
    }
  }
  ctx.client.close_after_reply = true;
  ctx.core.RequestShutdown();
}

void Wait(Ctx& ctx) {
  int64_t n, timeout;
  if (!ArgInt64(ctx, ctx.argv[1], &n) || !ArgInt64(ctx, ctx.argv[2], &timeout)) return;
  if (timeout < 0) return ctx.w.Error("ERR timeout is negative");
  ctx.w.Integer(0);
}

// COMMAND [COUNT | LIST | INFO name... | DOCS name... | GETKEYS cmd args...]
void Command(Ctx& ctx) {
  const auto& table = CommandTable();
  if (ctx.argc() == 1) {
    ctx.w.ArrayHeader(table.size());
    for (const CommandSpec& spec : table) CommandInfo(ctx, spec);
    return;
  }
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "count" && ctx.argc() == 2) return ctx.w.Integer(static_cast<int64_t>(table.size()));
  if (sub == "list") {
    ctx.w.ArrayHeader(table.size());
    for (const CommandSpec& spec : table) ctx.w.BulkString(spec.name);
    return;
  }
  if (sub == "info") {
    if (ctx.argc() == 2) {
      ctx.w.ArrayHeader(table.size());
      for (const CommandSpec& spec : table) CommandInfo(ctx, spec);
      return;
    }
    ctx.w.ArrayHeader(ctx.argc() - 2);
    for (size_t i = 2; i < ctx.argc(); ++i) {
      const CommandSpec* spec = FindCommand(ctx.argv[i]);
      if (spec == nullptr) {
        ctx.w.Null();  // Redis: addReplyNull
      } else {
        CommandInfo(ctx, *spec);
      }
    }
    return;
  }
  if (sub == "docs") {
    std::vector<const CommandSpec*> specs;
    if (ctx.argc() == 2) {
      for (const CommandSpec& spec : table) specs.push_back(&spec);
    } else {
      for (size_t i = 2; i < ctx.argc(); ++i) {
        if (const CommandSpec* spec = FindCommand(ctx.argv[i])) specs.push_back(spec);
      }
    }
    ctx.w.MapHeader(specs.size());
    for (const CommandSpec* spec : specs) {
      ctx.w.BulkString(spec->name);
      ctx.w.MapHeader(0);
    }
    return;
  }
  if (sub == "getkeys" && ctx.argc() >= 3) {
    const CommandSpec* spec = FindCommand(ctx.argv[2]);
    if (spec == nullptr) return ctx.w.Error("ERR Invalid command specified");
    size_t argc = ctx.argc() - 2;
    if (!ArityOk(*spec, argc)) {
      return ctx.w.Error("ERR Invalid number of arguments specified for command");
    }
    if (spec->first_key == 0) return ctx.w.Error("ERR The command has no key arguments");
    size_t last = spec->last_key < 0 ? argc - 1 : static_cast<size_t>(spec->last_key);
    std::vector<std::string_view> keys;
    for (size_t i = static_cast<size_t>(spec->first_key); i <= last && i < argc;
         i += static_cast<size_t>(spec->step)) {
      keys.push_back(ctx.argv[i + 2]);
    }
    ctx.w.ArrayHeader(keys.size());
    for (std::string_view k : keys) ctx.w.BulkString(k);
    return;
  }
  if (sub == "count" || sub == "getkeys") return ReplyArity(ctx, "command|" + sub);
  ReplyUnknownSub(ctx, ctx.argv[1], "COMMAND");
}

}  // namespace cmd
}  // namespace larder::server
