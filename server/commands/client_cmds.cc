// CLIENT and its subcommands, each a row of kSubcommands beside its handler.
#include <chrono>
#include <functional>
#include <optional>
#include <thread>

#include "commands/client_name.h"
#include "commands/families.h"
#include "commands/subcommands.h"
#include "commands/util.h"

namespace larder::server {

namespace {

// The fields of a client other clients may read, copied under its lock.
struct Names {
  std::string name, lib_name, lib_ver, last_cmd;
};

Names NamesOf(const ClientState& c) {
  std::lock_guard<std::mutex> lock(c.mu);
  return {c.name, c.lib_name, c.lib_ver, c.last_cmd};
}

// CLIENT LIST's flags, in Redis's order: O (MONITOR), P (has a subscription), x (in MULTI),
// t (CLIENT TRACKING on), R (its redirect target is gone), B (broadcast tracking), d (a
// WATCHed key changed: EXEC will fail), U (unix socket), r (READONLY, cluster mode), or N.
std::string FlagsOf(const ClientState& c, const Core& core, const TrackingInfo& tracking) {
  std::string flags;
  if (c.monitor.load()) flags += 'O';
  if (c.subscribed()) flags += 'P';
  if (c.multi_reported.load() >= 0) flags += 'x';
  if (tracking.on) flags += 't';
  if (tracking.broken_redirect) flags += 'R';
  if (tracking.bcast) flags += 'B';
  if (core.watched.Touched(c.id)) flags += 'd';
  if (c.unix_socket) flags += 'U';
  if (c.cluster_readonly.load()) flags += 'r';
  return flags.empty() ? "N" : flags;
}

// One CLIENT LIST / CLIENT INFO line in Redis's format:
// "id=3 addr=... laddr=... fd=8 name=... age=0 idle=0 flags=N db=0 ... resp=2 lib-name=...\n"
std::string ClientInfoLine(const ClientState& c, const Core& core, int64_t now_ms) {
  const Names n = NamesOf(c);
  const TrackingInfo tracking = core.tracking.InfoOf(c);
  const int64_t age = (now_ms - c.created_ms) / 1000;
  const int64_t idle = std::max<int64_t>(0, (now_ms - c.last_active_ms.load()) / 1000);
  // Redis's fields for a client's memory: its query buffer (Larder's unparsed input and the
  // arguments received so far) and its pending replies; the rest of Redis's are 0.
  const uint64_t input = c.input_bytes.load();
  const uint64_t output = c.output_bytes.load();
  return "id=" + std::to_string(c.id) + " addr=" + c.addr + " laddr=" + c.laddr +
         " fd=" + std::to_string(c.fd) + " name=" + n.name + " age=" + std::to_string(age) +
         " idle=" + std::to_string(idle) + " flags=" + FlagsOf(c, core, tracking) +
         " db=0 sub=" + std::to_string(c.channels.load()) +
         " psub=" + std::to_string(c.patterns.load()) +
         " ssub=0 multi=" + std::to_string(c.multi_reported.load()) +
         " qbuf=" + std::to_string(input) +
         " qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0"
         " rbp=0 obl=0 oll=0 omem=" +
         std::to_string(output) + " tot-mem=" + std::to_string(input + output) +
         " events=r cmd=" + (n.last_cmd.empty() ? "NULL" : n.last_cmd) +
         " user=default redir=" + std::to_string(tracking.redirect) +
         " resp=" + std::to_string(c.resp.load()) + " lib-name=" + n.lib_name +
         " lib-ver=" + n.lib_ver + "\n";
}

void Id(Ctx& ctx) {
  ctx.w.Integer(static_cast<int64_t>(ctx.client.id));
}

void SetName(Ctx& ctx) {
  if (!ValidClientName(ctx.argv[2])) return ctx.w.Error(kErrClientName);
  {
    std::lock_guard<std::mutex> lock(ctx.client.mu);
    ctx.client.name = ctx.argv[2];
  }
  ctx.w.SimpleString("OK");
}

void GetName(Ctx& ctx) {
  const std::string name = NamesOf(ctx.client).name;
  if (name.empty()) return ctx.w.Null();
  ctx.w.BulkString(name);
}

void SetInfo(Ctx& ctx) {
  const std::string attr = ToLower(ctx.argv[2]);
  // As Redis 7.2: a value CLIENT LIST could not show as one field is refused.
  if ((attr == "lib-name" || attr == "lib-ver") && !ValidClientName(ctx.argv[3])) {
    return ctx.w.Error("ERR " + ctx.argv[2] +
                       " cannot contain spaces, newlines or special characters.");
  }
  {
    std::lock_guard<std::mutex> lock(ctx.client.mu);
    if (attr == "lib-name") {
      ctx.client.lib_name = ctx.argv[3];
    } else if (attr == "lib-ver") {
      ctx.client.lib_ver = ctx.argv[3];
    } else {
      return ctx.w.Error("ERR Unrecognized option '" + ctx.argv[2] + "'");
    }
  }
  ctx.w.SimpleString("OK");
}

void Info(Ctx& ctx) {
  ctx.w.Verbatim("txt", ClientInfoLine(ctx.client, ctx.core, ctx.NowMs()));
}

// Redis's client types, as CLIENT LIST TYPE and CLIENT KILL TYPE name them. Larder's clients
// are `normal` or, with a subscription, `pubsub` (the class of their output limit); it has
// no replication links, so `master` and `replica` (`slave`) match none.
enum class ClientType { kNormal, kPubSub, kReplica, kMaster };

std::optional<ClientType> ParseClientType(std::string_view name) {
  if (EqualsNoCase(name, "normal")) return ClientType::kNormal;
  if (EqualsNoCase(name, "pubsub")) return ClientType::kPubSub;
  if (EqualsNoCase(name, "replica") || EqualsNoCase(name, "slave")) return ClientType::kReplica;
  if (EqualsNoCase(name, "master")) return ClientType::kMaster;
  return std::nullopt;
}

ClientType TypeOf(const ClientState& c) {
  return c.subscribed() ? ClientType::kPubSub : ClientType::kNormal;
}

// Parses a client type argument; replies Redis's error and returns nullopt if unknown.
std::optional<ClientType> ClientTypeArg(Ctx& ctx, const std::string& name) {
  std::optional<ClientType> type = ParseClientType(name);
  if (!type) ctx.w.Error("ERR Unknown client type '" + name + "'");
  return type;
}

// CLIENT LIST [TYPE <type> | ID <id> [<id> ...]], as Redis parses it.
void List(Ctx& ctx) {
  const int64_t now = ctx.NowMs();
  std::string out;
  if (ctx.argc() == 4 && EqualsNoCase(ctx.argv[2], "type")) {
    std::optional<ClientType> type = ClientTypeArg(ctx, ctx.argv[3]);
    if (!type) return;
    ctx.core.clients->ForEach([&](const ClientState& c) {
      if (TypeOf(c) == *type) out += ClientInfoLine(c, ctx.core, now);
    });
  } else if (ctx.argc() > 3 && EqualsNoCase(ctx.argv[2], "id")) {
    std::vector<int64_t> ids;
    for (size_t i = 3; i < ctx.argc(); ++i) {
      int64_t id = 0;
      if (!ParseInt64(ctx.argv[i], &id)) return ctx.w.Error("ERR Invalid client ID");
      ids.push_back(id);
    }
    for (int64_t id : ids) {  // in the order asked, as Redis lists them
      ctx.core.clients->ForEach([&](const ClientState& c) {
        if (static_cast<int64_t>(c.id) == id) out += ClientInfoLine(c, ctx.core, now);
      });
    }
  } else if (ctx.argc() != 2) {
    return ctx.w.Error(kErrSyntax);
  } else {
    ctx.core.clients->ForEach(
        [&](const ClientState& c) { out += ClientInfoLine(c, ctx.core, now); });
  }
  ctx.w.Verbatim("txt", out);
}

// Which clients CLIENT KILL <option> <value> ... closes.
struct KillFilter {
  uint64_t id = 0;                 // 0 = any
  std::string addr, laddr;         // "" = any
  std::optional<ClientType> type;  // nullopt = any
  bool skipme = true;

  bool Matches(const ClientState& c, uint64_t me) const {
    return !(skipme && c.id == me) && (id == 0 || c.id == id) && (addr.empty() || c.addr == addr) &&
           (laddr.empty() || c.laddr == laddr) && (!type || TypeOf(c) == *type);
  }
};

// Parses the option/value pairs from argv[2]; replies the error and returns nullopt if bad.
std::optional<KillFilter> ParseKillFilter(Ctx& ctx) {
  if (ctx.argc() % 2 != 0) {
    ctx.w.Error(kErrSyntax);
    return std::nullopt;
  }
  KillFilter f;
  for (size_t i = 2; i < ctx.argc(); i += 2) {
    const std::string opt = ToLower(ctx.argv[i]);
    const std::string& value = ctx.argv[i + 1];
    int64_t id = 0;
    if (opt == "id" && ParseInt64(value, &id) && id > 0) {
      f.id = static_cast<uint64_t>(id);
    } else if (opt == "id") {
      ctx.w.Error("ERR client-id should be greater than 0");
      return std::nullopt;
    } else if (opt == "addr") {
      f.addr = value;
    } else if (opt == "laddr") {
      f.laddr = value;
    } else if (opt == "type") {
      f.type = ClientTypeArg(ctx, value);
      if (!f.type) return std::nullopt;
    } else if (opt == "user") {
      if (value != "default") {  // Larder's one user: every client is "default"
        ctx.w.Error("ERR No such user '" + value + "'");
        return std::nullopt;
      }
    } else if (opt == "skipme" && (EqualsNoCase(value, "yes") || EqualsNoCase(value, "no"))) {
      f.skipme = EqualsNoCase(value, "yes");
    } else {
      ctx.w.Error(kErrSyntax);
      return std::nullopt;
    }
  }
  return f;
}

// CLIENT KILL addr (old form: OK or an error) | CLIENT KILL <option> <value> ... (a count).
// Kills the clients `match` selects; the caller, if selected, is closed once this reply and
// those before it are written, and runs nothing after (as Redis's CLIENT_CLOSE_AFTER_REPLY).
// Returns how many were selected.
size_t KillMatching(Ctx& ctx, const std::function<bool(const ClientState&)>& match) {
  const bool me = match(ctx.client);
  if (me) ctx.client.close_after_reply = true;
  const uint64_t my_id = ctx.client.id;
  return (me ? 1 : 0) +
         ctx.core.clients->Kill([&](const ClientState& c) { return c.id != my_id && match(c); });
}

void Kill(Ctx& ctx) {
  if (ctx.argc() == 3) {
    const std::string& addr = ctx.argv[2];
    if (KillMatching(ctx, [&](const ClientState& c) { return c.addr == addr; }) == 0) {
      return ctx.w.Error("ERR No such client");
    }
    return ctx.w.SimpleString("OK");
  }
  std::optional<KillFilter> filter = ParseKillFilter(ctx);
  if (!filter) return;
  const uint64_t me = ctx.client.id;
  const size_t n = KillMatching(ctx, [&](const ClientState& c) { return filter->Matches(c, me); });
  ctx.w.Integer(static_cast<int64_t>(n));
}

// CLIENT PAUSE <ms> [WRITE|ALL] (core/client_pause.h): ALL by default, as in Redis.
void Pause(Ctx& ctx) {
  if (ctx.argc() > 4) {
    return ReplySubcommandSyntax(ctx);
  }
  int64_t ms = 0;
  if (!ParseInt64(ctx.argv[2], &ms)) {
    return ctx.w.Error("ERR timeout is not an integer or out of range");
  }
  if (ms < 0) return ctx.w.Error("ERR timeout is negative");
  ClientPause::Scope scope = ClientPause::Scope::kAll;
  if (ctx.argc() == 4) {
    if (EqualsNoCase(ctx.argv[3], "write")) {
      scope = ClientPause::Scope::kWrite;
    } else if (!EqualsNoCase(ctx.argv[3], "all")) {
      return ctx.w.Error("ERR CLIENT PAUSE mode must be WRITE or ALL");
    }
  }
  const int64_t now = ctx.NowMs();
  ctx.core.pause.Pause(ms > INT64_MAX - now ? INT64_MAX : now + ms, scope, now);
  // As in Redis, where no command runs beside it: the reply comes once the writes already
  // running have ended (or the pause has). Not inside EXEC, which runs alone: its own writes
  // are what would be waited for.
  while (!ctx.in_exec && ctx.core.pause.WritesRunning() && ctx.core.pause.Active(ctx.NowMs())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ctx.w.SimpleString("OK");
}

void Unpause(Ctx& ctx) {
  ctx.core.pause.Unpause();
  ctx.w.SimpleString("OK");
}

// CLIENT UNBLOCK <id> [TIMEOUT|ERROR]: Larder has no blocking command (no list or stream
// type; WAIT answers at once), so no client is ever blocked in one, and the reply is Redis's
// for a client that is not: 0, after Redis's checks of the arguments, in its order.
void Unblock(Ctx& ctx) {
  if (ctx.argc() > 4) return ReplySubcommandSyntax(ctx);
  if (ctx.argc() == 4 && !EqualsNoCase(ctx.argv[3], "timeout") &&
      !EqualsNoCase(ctx.argv[3], "error")) {
    return ctx.w.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
  }
  int64_t id;
  if (!ArgInt64(ctx, ctx.argv[2], &id)) return;
  ctx.w.Integer(0);
}

// CLIENT REPLY ON|OFF|SKIP: OFF drops every reply from this command on, SKIP the next
// command's, ON sends them again and answers OK; as in Redis, OFF and SKIP answer nothing, a
// SKIP while OFF changes nothing, and pushes (Pub/Sub confirmations and messages) are sent
// whatever the mode. Inside a transaction each answers OK in EXEC's array and the mode holds
// from the command after EXEC: Redis changes it mid-EXEC, which leaves the array it already
// announced short of replies.
void Reply(Ctx& ctx) {
  ClientState& c = ctx.client;
  const std::string& mode = ctx.argv[2];
  const bool on = EqualsNoCase(mode, "on"), off = EqualsNoCase(mode, "off");
  if (!on && !off && !EqualsNoCase(mode, "skip")) return ctx.w.Error(kErrSyntax);
  if (on) {
    c.reply_off = c.reply_skip_next = false;
  } else if (off) {
    c.reply_off = true;
  } else if (!c.reply_off) {
    c.reply_skip_next = true;
  }
  if (ctx.in_exec) return ctx.w.SimpleString("OK");
  if (on) c.reply_skip = false;  // Redis clears the SKIP this command obeys too, then answers
  ctx.w.set_dropping(c.replies_dropped());
  if (on) ctx.w.SimpleString("OK");
}

// CLIENT TRACKING's options, parsed in Redis's order: false once an error was replied (a
// second REDIRECT, a bad or unknown client id, an unknown word).
bool ParseTracking(Ctx& ctx, TrackingOptions* o) {
  for (size_t j = 3; j < ctx.argc(); ++j) {
    const std::string& word = ctx.argv[j];
    const bool more = j + 1 < ctx.argc();
    if (EqualsNoCase(word, "redirect") && more) {
      if (o->redirect != 0) {
        ctx.w.Error("ERR A client can only redirect to a single other client");
        return false;
      }
      int64_t id;
      if (!ArgInt64(ctx, ctx.argv[++j], &id)) return false;
      bool found = false;
      ctx.core.clients->ForEach(
          [&](const ClientState& c) { found = found || static_cast<int64_t>(c.id) == id; });
      if (!found) {
        ctx.w.Error("ERR The client ID you want redirect to does not exist");
        return false;
      }
      o->redirect = static_cast<uint64_t>(id);
    } else if (EqualsNoCase(word, "bcast")) {
      o->bcast = true;
    } else if (EqualsNoCase(word, "optin")) {
      o->optin = true;
    } else if (EqualsNoCase(word, "optout")) {
      o->optout = true;
    } else if (EqualsNoCase(word, "noloop")) {
      o->noloop = true;
    } else if (EqualsNoCase(word, "prefix") && more) {
      o->prefixes.push_back(ctx.argv[++j]);
    } else {
      ctx.w.Error(kErrSyntax);
      return false;
    }
  }
  return true;
}

// CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p ...] [OPTIN] [OPTOUT] [NOLOOP]
// (core/key_tracking.h).
void Tracking(Ctx& ctx) {
  TrackingOptions o;
  if (!ParseTracking(ctx, &o)) return;
  KeyTracking& tracking = ctx.core.tracking;
  if (EqualsNoCase(ctx.argv[2], "off")) {
    tracking.Disable(ctx.client);
    ctx.client.tracking_caching = false;
    return ctx.w.SimpleString("OK");
  }
  if (!EqualsNoCase(ctx.argv[2], "on")) return ctx.w.Error(kErrSyntax);
  if (auto error = tracking.CheckEnable(ctx.client, o)) return ctx.w.Error(*error);
  if (o.redirect == 0) {
    tracking.Enable(ctx.client, o, nullptr);
    return ctx.w.SimpleString("OK");
  }
  // The target is registered while its connection is held: its Disconnected comes later.
  bool enabled = false;
  ctx.core.clients->ForEach([&](const ClientState& c) {
    if (c.id != o.redirect || enabled) return;
    tracking.Enable(ctx.client, o, &c);
    enabled = true;
  });
  if (!enabled) return ctx.w.Error("ERR The client ID you want redirect to does not exist");
  ctx.w.SimpleString("OK");
}

// CLIENT CACHING YES|NO: whether OPTIN (YES) or OPTOUT (NO) tracking remembers the keys of
// the next command, or transaction.
void Caching(Ctx& ctx) {
  const TrackingInfo now = ctx.core.tracking.InfoOf(ctx.client);
  if (!now.on) {
    return ctx.w.Error(
        "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN "
        "or OPTOUT mode enabled");
  }
  const std::string& opt = ctx.argv[2];
  if (EqualsNoCase(opt, "yes")) {
    if (!now.optin) {
      return ctx.w.Error(
          "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.");
    }
  } else if (EqualsNoCase(opt, "no")) {
    if (!now.optout) {
      return ctx.w.Error(
          "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.");
    }
  } else {
    return ctx.w.Error(kErrSyntax);
  }
  ctx.client.tracking_caching = true;
  ctx.w.SimpleString("OK");
}

// CLIENT GETREDIR: the client invalidations go to, 0 for none, -1 while not tracking.
void GetRedir(Ctx& ctx) {
  ctx.w.Integer(ctx.core.tracking.InfoOf(ctx.client).redirect);
}

// CLIENT TRACKINGINFO: a map of `flags` (a set), `redirect` and `prefixes`, as Redis's.
void TrackingInfoReply(Ctx& ctx) {
  const TrackingInfo t = ctx.core.tracking.InfoOf(ctx.client);
  std::vector<std::string_view> flags{t.on ? "on" : "off"};
  if (t.bcast) flags.push_back("bcast");
  if (t.optin) flags.push_back("optin");
  if (t.optin && ctx.client.tracking_caching) flags.push_back("caching-yes");
  if (t.optout) flags.push_back("optout");
  if (t.optout && ctx.client.tracking_caching) flags.push_back("caching-no");
  if (t.noloop) flags.push_back("noloop");
  if (t.broken_redirect) flags.push_back("broken_redirect");
  ctx.w.MapHeader(3);
  ctx.w.BulkString("flags");
  ctx.w.SetHeader(flags.size());
  for (std::string_view f : flags) ctx.w.BulkString(f);
  ctx.w.BulkString("redirect");
  ctx.w.Integer(t.redirect);
  ctx.w.BulkString("prefixes");
  ctx.w.ArrayHeader(t.prefixes.size());
  for (const std::string& p : t.prefixes) ctx.w.BulkString(p);
}

// NO-EVICT / NO-TOUCH ON|OFF: checked as Redis checks them, then without effect.
void AcceptAndIgnore(Ctx& ctx) {
  if (!EqualsNoCase(ctx.argv[2], "on") && !EqualsNoCase(ctx.argv[2], "off")) {
    return ctx.w.Error(kErrSyntax);
  }
  ctx.w.SimpleString("OK");
}

constexpr SubcommandRow kSubcommands[] = {
    {"id", 2, Id, "ID", "Return the ID of the current connection."},
    {"setname", 3, SetName, "SETNAME <name>", "Assign the name <name> to the current connection."},
    {"getname", 2, GetName, "GETNAME", "Return the name of the current connection."},
    {"setinfo", 4, SetInfo, "SETINFO <option> <value>",
     "Set client meta attr. Options are: LIB-NAME, LIB-VER."},
    {"info", 2, Info, "INFO", "Return information about the current client connection."},
    {"list", -2, List, "LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB) | ID <client-id> ...]",
     "Return information about client connections.", kAdmin},
    {"kill", -3, Kill, "KILL <ip:port> | KILL <option> <value> [<option> <value> [...]]",
     "Kill connections. Options are: ID <client-id>, TYPE (NORMAL|MASTER|REPLICA|PUBSUB), "
     "USER <username>, ADDR <ip:port>, LADDR <ip:port>, SKIPME (YES|NO).",
     kAdmin},
    {"pause", -3, Pause, "PAUSE <timeout> [WRITE|ALL]",
     "Suspend all, or just write, clients for <timeout> milliseconds.", kAdmin | kSlow},
    {"unpause", 2, Unpause, "UNPAUSE", "Stop the current client pause, resuming traffic.", kAdmin},
    {"reply", 3, Reply, "REPLY (ON|OFF|SKIP)",
     "Control the replies sent to the current connection."},
    {"tracking", -3, Tracking,
     "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]] [OPTIN] [OPTOUT] "
     "[NOLOOP]",
     "Control server assisted client side caching."},
    {"caching", 3, Caching, "CACHING (YES|NO)",
     "Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes."},
    {"getredir", 2, GetRedir, "GETREDIR",
     "Return the client ID we are redirecting to when tracking is enabled."},
    {"trackinginfo", 2, TrackingInfoReply, "TRACKINGINFO",
     "Report tracking status for the current connection."},
    {"unblock", -3, Unblock, "UNBLOCK <clientid> [TIMEOUT|ERROR]",
     "Unblock the specified blocked client.", kAdmin},
    {"no-evict", 3, AcceptAndIgnore, "NO-EVICT (ON|OFF)",
     "Accepted for compatibility; Larder never evicts clients.", kAdmin},
    {"no-touch", 3, AcceptAndIgnore, "NO-TOUCH (ON|OFF)",
     "Accepted for compatibility; has no effect."},
};

void Client(Ctx& ctx) {
  RunSubcommand(ctx, kSubcommands);
}

constexpr CommandRow kRows[] = {
    {"client", -2, "fast loading stale", kNoKeys, Client, kSubcommands},
};

}  // namespace

std::span<const CommandRow> ClientCommands() {
  return kRows;
}

}  // namespace larder::server
