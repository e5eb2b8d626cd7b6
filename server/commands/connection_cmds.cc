// Connection commands: PING ECHO HELLO AUTH SELECT QUIT RESET CLIENT.
#include <unistd.h>

#include "commands/client_list.h"
#include "commands/command_table.h"
#include "commands/util.h"

namespace larder::server {

std::string ClientInfoLine(const ClientState& c, int64_t now_ms) {
  std::string name, lib_name, lib_ver, last;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    name = c.name;
    lib_name = c.lib_name;
    lib_ver = c.lib_ver;
    last = c.last_cmd;
  }
  int64_t age = (now_ms - c.created_ms) / 1000;
  int64_t idle = (now_ms - c.last_active_ms.load()) / 1000;
  std::string flags = c.unix_socket ? "U" : "N";
  return "id=" + std::to_string(c.id) + " addr=" + c.addr + " laddr=" + c.laddr +
         " fd=" + std::to_string(c.fd) + " name=" + name + " age=" + std::to_string(age) +
         " idle=" + std::to_string(idle < 0 ? 0 : idle) + " flags=" + flags +
         " db=0 sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0"
         " rbp=0 obl=0 oll=0 omem=" +
         std::to_string(c.output_bytes.load()) +
         " tot-mem=0 events=r cmd=" + (last.empty() ? "NULL" : last) +
         " user=default redir=-1 resp=" + std::to_string(c.resp.load()) + " lib-name=" + lib_name +
         " lib-ver=" + lib_ver + "\n";
}

namespace cmd {

namespace {

// Checks `pass` for user `user` against requirepass; replies the error on failure.
bool CheckPassword(Ctx& ctx, std::string_view user, std::string_view pass) {
  auto cfg = ctx.core.cfg();
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

// Client names may not hold spaces, newlines or other non-printable bytes.
bool ValidClientName(std::string_view name) {
  for (char c : name) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

}  // namespace

void Ping(Ctx& ctx) {
  if (ctx.argc() > 2) return ReplyArity(ctx, "ping");
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
        return ctx.w.Error(
            "ERR Client names cannot contain spaces, newlines or special characters.");
      }
    } else {
      return ctx.w.Error("ERR Syntax error in HELLO option '" + ctx.argv[i] + "'");
    }
  }
  if (!ctx.client.authenticated && !authed_here && !ctx.core.cfg()->requirepass.empty()) {
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
  ctx.w.BulkString("standalone");
  ctx.w.BulkString("role");
  ctx.w.BulkString("master");
  ctx.w.BulkString("modules");
  ctx.w.ArrayHeader(0);
}

void Auth(Ctx& ctx) {
  if (ctx.argc() > 3) return ctx.w.Error(kErrSyntax);
  if (ctx.argc() == 2 && ctx.core.cfg()->requirepass.empty()) {
    return ctx.w.Error(
        "ERR AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?");
  }
  std::string_view user = ctx.argc() == 3 ? std::string_view(ctx.argv[1]) : "default";
  if (CheckPassword(ctx, user, ctx.argv.back())) ctx.w.SimpleString("OK");
}

void Select(Ctx& ctx) {
  int64_t db;
  if (!ParseInt64(ctx.argv[1], &db)) return ctx.w.Error(kErrNotInt);
  if (db != 0) return ctx.w.Error("ERR DB index is out of range");
  ctx.w.SimpleString("OK");
}

void Quit(Ctx& ctx) {
  ctx.client.close_after_reply = true;
  ctx.w.SimpleString("OK");
}

void Reset(Ctx& ctx) {
  ctx.client.in_multi = false;
  ctx.client.multi_error = false;
  ctx.client.queued.clear();
  ctx.client.resp = 2;
  ctx.w.set_protocol(2);
  {
    std::lock_guard<std::mutex> lock(ctx.client.mu);
    ctx.client.name.clear();
  }
  if (!ctx.core.cfg()->requirepass.empty()) ctx.client.authenticated = false;
  ctx.w.SimpleString("RESET");
}

void Client(Ctx& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  ClientState& me = ctx.client;
  if (sub == "id" && ctx.argc() == 2) return ctx.w.Integer(static_cast<int64_t>(me.id));
  if (sub == "setname" && ctx.argc() == 3) {
    if (!ValidClientName(ctx.argv[2])) {
      return ctx.w.Error("ERR Client names cannot contain spaces, newlines or special characters.");
    }
    std::lock_guard<std::mutex> lock(me.mu);
    me.name = ctx.argv[2];
    return ctx.w.SimpleString("OK");
  }
  if (sub == "getname" && ctx.argc() == 2) {
    std::string name;
    {
      std::lock_guard<std::mutex> lock(me.mu);
      name = me.name;
    }
    if (name.empty()) return ctx.w.Null();
    return ctx.w.BulkString(name);
  }
  if (sub == "setinfo" && ctx.argc() == 4) {
    std::string attr = ToLower(ctx.argv[2]);
    std::lock_guard<std::mutex> lock(me.mu);
    if (attr == "lib-name") {
      me.lib_name = ctx.argv[3];
    } else if (attr == "lib-ver") {
      me.lib_ver = ctx.argv[3];
    } else {
      return ctx.w.Error("ERR Unrecognized option '" + ctx.argv[2] + "'");
    }
    return ctx.w.SimpleString("OK");
  }
  int64_t now = NowMs();
  if (sub == "info" && ctx.argc() == 2) return ctx.w.Verbatim("txt", ClientInfoLine(me, now));
  if (sub == "list") {
    std::string out;
    ctx.core.clients().ForEach([&](const ClientState& c) { out += ClientInfoLine(c, now); });
    return ctx.w.Verbatim("txt", out);
  }
  if ((sub == "no-evict" || sub == "no-touch") && ctx.argc() == 3) {
    return ctx.w.SimpleString("OK");
  }
  if (sub == "kill" && ctx.argc() >= 3) {
    if (ctx.argc() == 3) {  // old form: CLIENT KILL addr
      std::string addr = ctx.argv[2];
      size_t n = ctx.core.clients().Kill([&](const ClientState& c) { return c.addr == addr; });
      if (n == 0) return ctx.w.Error("ERR No such client");
      return ctx.w.SimpleString("OK");
    }
    if (ctx.argc() % 2 != 0) return ctx.w.Error(kErrSyntax);
    uint64_t want_id = 0;
    std::string want_addr;
    bool skipme = true;
    for (size_t i = 2; i < ctx.argc(); i += 2) {
      std::string opt = ToLower(ctx.argv[i]);
      if (opt == "id") {
        int64_t id;
        if (!ParseInt64(ctx.argv[i + 1], &id) || id <= 0) {
          return ctx.w.Error("ERR client-id should be greater than 0");
        }
        want_id = static_cast<uint64_t>(id);
      } else if (opt == "addr") {
        want_addr = ctx.argv[i + 1];
      } else if (opt == "skipme") {
        skipme = !EqualsNoCase(ctx.argv[i + 1], "no");
      } else {
        return ctx.w.Error(kErrSyntax);
      }
    }
    size_t n = ctx.core.clients().Kill([&](const ClientState& c) {
      if (skipme && c.id == me.id) return false;
      if (want_id != 0 && c.id != want_id) return false;
      if (!want_addr.empty() && c.addr != want_addr) return false;
      return true;
    });
    return ctx.w.Integer(static_cast<int64_t>(n));
  }
  if (sub == "help") {
    ctx.w.ArrayHeader(1);
    return ctx.w.SimpleString("CLIENT ID|SETNAME|GETNAME|SETINFO|INFO|LIST|KILL|NO-EVICT|NO-TOUCH");
  }
  if (sub == "id" || sub == "setname" || sub == "getname" || sub == "setinfo" || sub == "info" ||
      sub == "kill" || sub == "no-evict" || sub == "no-touch") {
    return ReplyArity(ctx, "client|" + sub);
  }
  ReplyUnknownSub(ctx, ctx.argv[1], "CLIENT");
}

}  // namespace cmd
}  // namespace larder::server
