// Connection commands: PING ECHO HELLO AUTH SELECT QUIT RESET. (CLIENT is in client_cmds.cc.)
#include "commands/client_name.h"
#include "commands/families.h"
#include "commands/util.h"

namespace larder::server {

namespace {

// Checks `pass` for user `user` against requirepass; replies the error on failure.
bool CheckPassword(Ctx& ctx, std::string_view user, std::string_view pass) {
  auto cfg = ctx.core.config.snapshot();
  if (EqualsNoCase(user, "default") && !cfg->requirepass.empty() && pass == cfg->requirepass) {
    ctx.client.authenticated = true;
    return true;
  }
  if (EqualsNoCase(user, "default") && cfg->requirepass.empty()) {
    ctx.client.authenticated = true;  // Redis: any password works for nopass `default`
    return true;
  }
  ctx.w.Error("WRONGPASS invalid username-password pair or user is disabled.");
  return false;
}

// PING [message]; a RESP2 client with a subscription gets ["pong", message or ""], as in Redis.
void Ping(Ctx& ctx) {
  if (ctx.argc() > 2) return ReplyArity(ctx, ctx.spec.name);
  if (ctx.client.subscribed() && ctx.w.protocol() == 2) {
    ctx.w.ArrayHeader(2);
    ctx.w.BulkString("pong");
    return ctx.w.BulkString(ctx.argc() == 2 ? ctx.argv[1] : "");
  }
  if (ctx.argc() == 2) return ctx.w.BulkString(ctx.argv[1]);
  ctx.w.SimpleString("PONG");
}

void Echo(Ctx& ctx) {
  ctx.w.BulkString(ctx.argv[1]);
}

void Hello(Ctx& ctx) {
  int64_t proto = ctx.client.resp;
  size_t i = 1;
  if (ctx.argc() >= 2) {
    if (!ParseInt64(ctx.argv[1], &proto)) {
      return ctx.w.Error("ERR Protocol version is not an integer or out of range");
    }
    i = 2;
    if (proto != 2 && proto != 3) return ctx.w.Error("NOPROTO unsupported protocol version");
  }
  std::string setname;
  bool has_setname = false;
  bool authed_here = false;
  for (; i < ctx.argc(); ++i) {
    bool more = i + 1 < ctx.argc();
    if (EqualsNoCase(ctx.argv[i], "AUTH") && i + 2 < ctx.argc()) {
      if (!CheckPassword(ctx, ctx.argv[i + 1], ctx.argv[i + 2])) return;
      authed_here = true;
      i += 2;
    } else if (EqualsNoCase(ctx.argv[i], "SETNAME") && more) {
      setname = ctx.argv[++i];
      has_setname = true;
      if (!ValidClientName(setname)) {
        return ctx.w.Error(kErrClientName);
      }
    } else {
      return ctx.w.Error("ERR Syntax error in HELLO option '" + ctx.argv[i] + "'");
    }
  }
  if (!ctx.client.authenticated && !authed_here &&
      !ctx.core.config.snapshot()->requirepass.empty()) {
    return ctx.w.Error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
        "HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and "
        "select the RESP protocol version at the same time");
  }
  if (has_setname) {
    std::lock_guard<std::mutex> lock(ctx.client.mu);
    ctx.client.name = setname;
  }
  ctx.client.resp = static_cast<int>(proto);
  ctx.w.set_protocol(static_cast<int>(proto));
  ctx.w.MapHeader(7);
  ctx.w.BulkString("server");
  ctx.w.BulkString("larder");
  ctx.w.BulkString("version");
  ctx.w.BulkString("7.2.0");
  ctx.w.BulkString("proto");
  ctx.w.Integer(proto);
  ctx.w.BulkString("id");
  ctx.w.Integer(static_cast<int64_t>(ctx.client.id));
  ctx.w.BulkString("mode");
  ctx.w.BulkString(ctx.core.cluster.enabled() ? "cluster" : "standalone");  // as Redis
  ctx.w.BulkString("role");
  ctx.w.BulkString("master");
  ctx.w.BulkString("modules");
  ctx.w.ArrayHeader(0);
}

void Auth(Ctx& ctx) {
  if (ctx.argc() > 3) return ctx.w.Error(kErrSyntax);
  if (ctx.argc() == 2 && ctx.core.config.snapshot()->requirepass.empty()) {
    return ctx.w.Error(
        "ERR AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?");
  }
  std::string_view user = ctx.argc() == 3 ? std::string_view(ctx.argv[1]) : "default";
  if (CheckPassword(ctx, user, ctx.argv.back())) ctx.w.SimpleString("OK");
}

void Select(Ctx& ctx) {
  int64_t db;
  if (!ArgDbIndex(ctx, ctx.argv[1], &db)) return;
  if (db == 0) return ctx.w.SimpleString("OK");
  if (!RefusedInClusterMode(ctx)) ctx.w.Error(kErrDbRange);
}

void Quit(Ctx& ctx) {
  ctx.client.close_after_reply = true;
  ctx.w.SimpleString("OK");
}

void Reset(Ctx& ctx) {
  // As Redis's: replies back on, but for a SKIP this very command obeys.
  ctx.client.reply_off = ctx.client.reply_skip_next = false;
  ctx.w.set_dropping(ctx.client.replies_dropped());
  ctx.core.EndTransaction(ctx.client);
  ctx.core.Forget(ctx.client, Core::FailedImportKeys::kDelete);
  ctx.client.cluster_readonly = false;  // Redis's RESET also ends READONLY and ASKING
  ctx.client.asking = false;
  ctx.client.importing = false;
  ctx.client.resp = 2;
  ctx.w.set_protocol(2);
  {
    std::lock_guard<std::mutex> lock(ctx.client.mu);
    ctx.client.name.clear();
  }
  if (!ctx.core.config.snapshot()->requirepass.empty()) ctx.client.authenticated = false;
  ctx.w.SimpleString("RESET");
}

constexpr CommandRow kRows[] = {
    {"ping", -1, "fast loading stale pubsub_context", kNoKeys, Ping},
    {"echo", 2, "fast loading stale", kNoKeys, Echo},
    {"hello", -1, "no_auth fast loading stale", kNoKeys, Hello},
    {"auth", -2, "no_auth fast loading stale", kNoKeys, Auth},
    {"select", 2, "fast loading stale", kNoKeys, Select},
    {"quit", -1, "no_auth fast loading stale runs_in_multi pubsub_context", kNoKeys, Quit},
    {"reset", 1, "no_auth fast loading stale runs_in_multi pubsub_context", kNoKeys, Reset},
};

}  // namespace

std::span<const CommandRow> ConnectionCommands() {
  return kRows;
}

}  // namespace larder::server
