#include "commands/dispatch.h"

#include <chrono>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <utility>

#include "cluster/key_slot.h"
#include "commands/command_table.h"
#include "commands/subcommands.h"
#include "commands/util.h"
#include "config/option_table.h"
#include "log.h"

namespace larder::server {

namespace {

// A container command's call that names no subcommand of it, or with the wrong arity for it.
std::optional<std::string> SubcommandRefusalOf(const CommandSpec& spec,
                                               const std::vector<std::string>& argv) {
  if (spec.subcommands.empty() || argv.size() < 2) return std::nullopt;
  return SubcommandRefusal(spec.name, argv, spec.subcommands);
}

// An HTTP request line or header sent to the port ("POST ...", "Host: ..."): a browser tricked
// into talking to the server (cross-protocol scripting). As Redis does, the connection closes
// without a reply and the log warns, at most once a minute.
bool IsCrossProtocolAttack(const CommandSpec* spec, const std::vector<std::string>& argv,
                           int64_t now_ms) {
  if (spec != nullptr) return false;
  if (!EqualsNoCase(argv[0], "post") && !EqualsNoCase(argv[0], "host:")) return false;
  static LogLimiter limiter(60'000);
  if (limiter.Due(now_ms)) {
    Log(LogLevel::kWarning,
        "Possible SECURITY ATTACK detected. It looks like somebody is sending POST or Host: "
        "commands to Larder. This is likely due to an attacker attempting to use Cross "
        "Protocol Scripting to compromise your Larder instance. Connection aborted.");
  }
  return true;
}

// "ERR unknown command 'foo', with args beginning with: 'a' 'b' " as Redis builds it.
std::string UnknownCommandError(const std::vector<std::string>& argv) {
  std::string args;
  for (size_t i = 1; i < argv.size() && args.size() < 128; ++i) {
    size_t room = 128 - args.size();
    args += "'" + argv[i].substr(0, room) + "' ";
  }
  return "ERR unknown command '" + argv[0].substr(0, 128) + "', with args beginning with: " + args;
}

// The cluster's answer for a command's keys (Redis's CROSSSLOT when they hash to different
// slots, else ClusterState::Route's MOVED, TRYAGAIN or CLUSTERDOWN), or nullopt when this
// node serves it: always outside cluster mode and for commands without keys.
// The slot a command's keys hash to, and whether one differs (CROSSSLOT); *slot stays -1 for
// a command without keys.
void NoteSlots(const CommandSpec& spec, const std::vector<std::string>& argv, int* slot,
               bool* cross) {
  ForEachKeyPosition(spec.keys, argv, [&](size_t i) {
    const int s = cluster::KeySlot(argv[i]);
    *cross = *cross || (*slot >= 0 && s != *slot);
    *slot = s;
  });
}

std::optional<std::string> RouteSlot(const Core& core, const ClientState& client, int slot,
                                     bool cross, bool write) {
  if (slot < 0) return std::nullopt;
  if (cross) return "CROSSSLOT Keys in request don't hash to the same slot";
  return core.cluster.Route(
      {slot, write, client.asking, client.cluster_readonly, client.importing});
}

std::optional<std::string> ClusterRedirect(const Core& core, const CommandSpec& spec,
                                           const ClientState& client,
                                           const std::vector<std::string>& argv) {
  if (!core.cluster.enabled()) return std::nullopt;
  int slot = -1;
  bool cross = false;
  NoteSlots(spec, argv, &slot, &cross);
  return RouteSlot(core, client, slot, cross, spec.Has(kWrite));
}

bool QueuedByMulti(const ClientState& client, const CommandSpec& spec) {
  return client.in_multi && !spec.Has(kRunsInMulti);
}

// Runs the handler; while a slot migration runs, tells it the keys a write command wrote.
// Called with the server lock held (but for the commands that write no key: `locks_itself`
// ones and those CommandSpec::TakesServerLock leaves out), so the migrator's drain, which
// takes the lock exclusively, waits for the noting too.
void RunHandler(Ctx& ctx) {
  std::vector<std::unique_lock<std::mutex>> ordered;  // see KeyspaceEvents::OrderWrites
  if (ctx.spec.Has(kWrite) && ctx.core.events.Publishing()) {
    std::vector<std::string_view> keys;
    ForEachKeyPosition(ctx.spec.keys, ctx.argv, [&](size_t i) { keys.push_back(ctx.argv[i]); });
    ordered = ctx.core.events.OrderWrites(keys);
  }
  ctx.spec.handler(ctx);
  if (!ctx.spec.Has(kWrite) || !ctx.core.migrator.active()) return;
  ForEachKeyPosition(ctx.spec.keys, ctx.argv,
                     [&](size_t i) { ctx.core.migrator.NoteWrite(ctx.argv[i]); });
}

// With the server lock held: whether a write's slot stopped being served here since Admit
// routed it (a migration's write ban, which drains the writes holding the lock, or a topology
// giving the slot away); then the redirect is the reply. Without this a write admitted just
// before the ban could run after the drain, and never reach the destination.
bool RoutedAwayMeanwhile(Ctx& ctx) {
  if (!ctx.spec.Has(kWrite) || !ctx.core.cluster.enabled()) return false;
  std::optional<std::string> redirect = ClusterRedirect(ctx.core, ctx.spec, ctx.client, ctx.argv);
  if (!redirect) return false;
  ctx.w.Error(*redirect);
  return true;
}

// Runs the handler under the server lock its flags ask for (CommandSpec::TakesServerLock).
void Execute(Ctx& ctx) {
  if (ctx.spec.Has(kLocksItself)) {
    ctx.spec.handler(ctx);
  } else if (ctx.spec.TakesServerLockShared()) {
    std::shared_lock<FairSharedMutex> lock(ctx.core.exec_lock, std::defer_lock);
    if (!ctx.holds_server_lock) lock.lock();
    if (!RoutedAwayMeanwhile(ctx)) RunHandler(ctx);
  } else if (ctx.spec.TakesServerLock()) {
    if (ctx.spec.before_lock && !ctx.spec.before_lock(ctx)) return;
    std::unique_lock<FairSharedMutex> lock(ctx.core.exec_lock);
    if (!RoutedAwayMeanwhile(ctx)) RunHandler(ctx);
  } else {
    RunHandler(ctx);  // no key: no write to note, none to order
  }
}

// Whether CLIENT PAUSE WRITE holds the command: it writes, publishes, or is the EXEC of a
// transaction that does.
bool PausedByWrite(const ClientState& client, const CommandSpec& spec) {
  constexpr uint32_t kWrites = kWrite | kMayReplicate;
  if (spec.flags & kWrites) return true;
  if (spec.name != "exec") return false;
  for (const QueuedRequest& q : client.queued) {
    if (q.spec->flags & kWrites) return true;
  }
  return false;
}

// Whether `argv` calls a subcommand of `spec` that is not fast (kSlow): run on an engine
// thread, although its container is `fast`.
bool IsSlowSubcommand(const CommandSpec& spec, const std::vector<std::string>& argv) {
  if (spec.subcommands.empty() || argv.size() < 2) return false;
  const SubcommandRow* row = RowOf(argv[1], spec.subcommands);
  return row != nullptr && (row->flags & kSlow) != 0;
}

// The arguments as MONITOR and SLOWLOG show them: passwords replaced by "(redacted)" (AUTH's
// arguments, HELLO's after AUTH, the value CONFIG SET gives a sensitive option), as Redis does.
std::vector<std::string> Redacted(const CommandSpec& spec, const std::vector<std::string>& argv) {
  std::vector<std::string> out = argv;
  size_t from = out.size();
  if (spec.name == "auth") from = 1;
  if (spec.name == "hello") {
    for (size_t i = 1; i < out.size(); ++i) {
      if (EqualsNoCase(out[i], "auth")) from = std::min(from, i + 1);
    }
  }
  for (size_t i = from; i < out.size(); ++i) out[i] = "(redacted)";
  if (spec.name == "config" && out.size() > 1 && EqualsNoCase(out[1], "set")) {
    for (size_t i = 2; i + 1 < out.size(); i += 2) {
      const config::Option* opt = config::FindOption(out[i]);
      if (opt != nullptr && opt->sensitive) out[i + 1] = "(redacted)";
    }
  }
  return out;
}

// The arguments a handler with `moves_args` may take (SET hands its value's buffer to the
// engine), copied before it runs: in full while someone monitors, else as the slow log keeps
// them. Empty for other commands, whose arguments are still there afterwards.
struct ArgsBefore {
  std::optional<std::vector<std::string>> args;
  bool shortened = false;
};

ArgsBefore CopyArgsIfMoved(const Ctx& ctx) {
  ArgsBefore before;
  if (!ctx.spec.Has(kMovesArgs)) return before;
  before.shortened = ctx.core.monitors.Idle();
  before.args = before.shortened ? SlowLog::ShortenedArgs(ctx.argv) : ctx.argv;
  return before;
}

// Logs a finished command: its statistics and latency histogram, the slow log, the latency
// monitor, and the MONITOR feed. `usec` is the time it ran; `failed`, whether it replied an
// error; `before`, its arguments if the handler may have taken them.
void Observe(Ctx& ctx, uint64_t usec, bool failed, const ArgsBefore& before) {
  Core& core = ctx.core;
  const auto cfg = core.config.snapshot();
  CommandStats& stats = core.commands.at(ctx.spec.id);
  ServerStats::Count(stats.calls);
  ServerStats::Count(stats.usec, usec);
  if (failed) ServerStats::Count(stats.failed_calls);
  if (cfg->latency_tracking) stats.latency.Record(usec);
  const bool slow = cfg->slowlog_log_slower_than >= 0 &&
                    usec >= static_cast<uint64_t>(cfg->slowlog_log_slower_than) &&
                    !ctx.spec.Has(kSkipSlowlog);
  const bool admin = ctx.spec.Has(kAdmin) || (ctx.subcommand_flags & kAdmin) != 0;
  const bool monitored = !core.monitors.Idle() && !admin;
  if (!slow && !monitored && cfg->latency_monitor_threshold == 0) return;
  // MONITOR's stamps have microseconds: the wall clock itself (Core's clock is the same one).
  const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  if (cfg->latency_monitor_threshold > 0 &&
      usec / 1000 >= static_cast<uint64_t>(cfg->latency_monitor_threshold)) {
    core.latency.Add(ctx.spec.Has(kFast) ? "fast-command" : "command", now_us / 1000000,
                     usec / 1000);
  }
  if (!slow && !monitored) return;
  const std::vector<std::string> args = Redacted(ctx.spec, before.args ? *before.args : ctx.argv);
  if (monitored) core.monitors.Feed(ctx.client, args, now_us);
  if (!slow) return;
  SlowLogEntry entry{0,
                     now_us / 1000000,
                     usec,
                     before.shortened ? args : SlowLog::ShortenedArgs(args),
                     ctx.client.addr,
                     {}};
  {
    std::lock_guard<std::mutex> lock(ctx.client.mu);
    entry.client_name = ctx.client.name;
  }
  core.slowlog.Add(std::move(entry), static_cast<size_t>(cfg->slowlog_max_len));
}

// CLIENT TRACKING: the keys of a read-only command its client runs, to remember before it
// runs and again after (core/key_tracking.h says why); none for other clients and commands.
std::vector<std::string_view> TrackedReadKeys(const Ctx& ctx) {
  std::vector<std::string_view> keys;
  if (!ctx.client.tracking.load(std::memory_order_relaxed) || !ctx.spec.Has(kReadonly)) {
    return keys;
  }
  ForEachKeyPosition(ctx.spec.keys, ctx.argv, [&](size_t i) { keys.push_back(ctx.argv[i]); });
  return keys;
}

// Runs the command (`run`: with its lock, or without for EXEC's queued commands) and observes
// it.
template <typename Run>
void RunObserved(Ctx& ctx, Run run) {
  const ArgsBefore before = CopyArgsIfMoved(ctx);
  const auto started = std::chrono::steady_clock::now();
  const uint64_t errors_before = ctx.w.errors();
  // A read-only command keeps its arguments: the keys stay valid across run().
  const std::vector<std::string_view> read_keys = TrackedReadKeys(ctx);
  ctx.core.tracking.Remember(ctx.client, read_keys, /*max_keys=*/0);
  run(ctx);
  if (!read_keys.empty()) {  // then the table is held to tracking-table-max-keys
    const int64_t max_keys = ctx.core.config.snapshot()->tracking_table_max_keys;
    ctx.core.tracking.Remember(ctx.client, read_keys, max_keys);
  }
  const auto elapsed = std::chrono::steady_clock::now() - started;
  Observe(ctx, std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count(),
          ctx.w.errors() > errors_before, before);
}

}  // namespace

bool Dispatcher::RunsFromMemory(const CommandSpec& spec,
                                const std::vector<std::string>& argv) const {
  if (!spec.Has(kFastIfPutInMemory) && !spec.Has(kFastIfInMemory)) return false;
  // Only these rows' keys are read here: both have one key, at a position their arity ensures.
  const std::string& key = argv[static_cast<size_t>(spec.keys.first)];
  if (spec.Has(kFastIfPutInMemory)) {
    return argv.size() == 3 && core_.store.PutInMemory(key, argv[2].size()) &&
           !core_.events.WriteWouldWait(key);
  }
  const uint64_t max_bytes = core_.config.snapshot()->inline_get_max_bytes;
  return max_bytes > 0 && core_.store.InMemory(key, max_bytes);
}

Plan Dispatcher::PlanOf(const ClientState& client, const std::vector<std::string>& argv,
                        Planner planner) const {
  Plan plan;
  plan.spec = FindCommand(argv[0]);
  const CommandSpec* spec = plan.spec;
  const bool arity_ok = spec != nullptr && ArityOk(spec->arity, argv.size());
  const bool writes = arity_ok && PausedByWrite(client, *spec);
  if (arity_ok && !core_.pause.StartCommand(writes, core_.NowMs())) {
    plan.route = Route::kHold;
    return plan;
  }
  plan.counts_write = writes;
  if (planner == Planner::kPoolBatch) {
    plan.route = Route::kPool;
    return plan;
  }
  const bool runs_handler = arity_ok && !QueuedByMulti(client, *spec);
  bool cheap = !runs_handler || (spec->Has(kFast) && !IsSlowSubcommand(*spec, argv));
  if (!cheap) cheap = plan.in_memory = RunsFromMemory(*spec, argv);
  if (cheap && runs_handler && spec->TakesServerLockShared()) {
    cheap = plan.holds_server_lock = core_.exec_lock.try_lock_shared();
    plan.in_memory = plan.in_memory && cheap;
  }
  plan.route = cheap ? Route::kInline : Route::kPool;
  if (plan.route == Route::kPool && plan.counts_write) {
    core_.pause.EndWrite();  // counted again where it runs (Plan::counts_write)
    plan.counts_write = false;
  }
  return plan;
}

bool Dispatcher::Admit(const CommandSpec* spec, ClientState& client,
                       const std::vector<std::string>& argv, resp::ReplyWriter& w) const {
  std::string error;
  if (IsCrossProtocolAttack(spec, argv, core_.NowMs())) {
    client.close_after_reply = true;  // and no reply
    return false;
  } else if (spec == nullptr) {
    error = UnknownCommandError(argv);
  } else if (!ArityOk(spec->arity, argv.size())) {
    error = ArityError(spec->name);
  } else if (auto refused = SubcommandRefusalOf(*spec, argv)) {
    error = std::move(*refused);  // as Redis's lookup: before AUTH, MULTI's queue, the context
  } else if (!client.authenticated && !spec->Has(kNoAuth) &&
             !core_.config.snapshot()->requirepass.empty()) {
    error = "NOAUTH Authentication required.";
  } else if (client.resp == 2 && client.subscribed() && !spec->Has(kPubSubContext)) {
    // A subcommand by its full name, as Redis: 'client|id'.
    const bool sub = !spec->subcommands.empty() && argv.size() >= 2;
    error = "ERR Can't execute '" + std::string(spec->name) + (sub ? "|" + ToLower(argv[1]) : "") +
            "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
            "this context";
  } else if (client.in_multi && spec->Has(kNoMulti)) {
    error = "ERR Command not allowed inside a transaction";
  } else if (auto redirect = ClusterRedirect(core_, *spec, client, argv)) {
    error = std::move(*redirect);
  } else {
    return true;
  }
  if (spec != nullptr && spec->name == "exec") {
    // As Redis's execCommandAbort: a refused EXEC ends the transaction, naming why (outside
    // one too: EXEC with arguments, or on a subscribed connection).
    core_.EndTransaction(client);
    std::string_view why = error;
    if (why.starts_with("ERR ")) why.remove_prefix(4);
    error = "EXECABORT Transaction discarded because of: " + std::string(why);
  } else if (client.in_multi) {
    client.multi_error = true;
  }
  w.Error(error);
  return false;
}

void Dispatcher::Run(const Plan& plan, ClientState& client, std::vector<std::string>& argv,
                     resp::ReplyWriter& w) {
  // Released on every way out, the refusals too.
  std::shared_lock<FairSharedMutex> held;
  if (plan.holds_server_lock)
    held = std::shared_lock<FairSharedMutex>(core_.exec_lock, std::adopt_lock);
  struct EndWrite {
    ClientPause& pause;
    bool counted;
    ~EndWrite() {
      if (counted) pause.EndWrite();
    }
  } end_write{core_.pause, plan.counts_write};
  // CLIENT REPLY: the command after a SKIP has its reply dropped, as every command's while OFF
  // (client_cmds.cc); what the connection writes between commands never is.
  client.reply_skip = client.reply_skip_next.exchange(false);
  w.set_dropping(client.replies_dropped());
  struct EndDropping {
    ClientState& client;
    resp::ReplyWriter& w;
    ~EndDropping() {
      client.reply_skip = false;
      w.set_dropping(false);
    }
  } end_dropping{client, w};
  ServerStats::Count(core_.stats.total_commands_processed);
  if (plan.in_memory) {
    ServerStats::Count(plan.spec->Has(kFastIfInMemory) ? core_.stats.gets_on_io_thread
                                                       : core_.stats.sets_on_io_thread);
  }
  const bool admitted = Admit(plan.spec, client, argv, w);
  // ASKING holds for the one command after it (the commands of a transaction too), as in Redis:
  // cleared once that command ran (its route is checked again under the lock: RoutedAwayMeanwhile).
  struct EndAsking {
    ClientState& client;
    bool ends;
    ~EndAsking() {
      if (ends) client.asking = false;
    }
  } end_asking{client, !client.in_multi && (plan.spec == nullptr || plan.spec->name != "asking")};
  // CLIENT CACHING holds for the next command, or the transaction it begins, as in Redis:
  // cleared after any command but a CLIENT one (refused ones too), unless MULTI is open then.
  struct EndCaching {
    ClientState& client;
    bool client_command;
    ~EndCaching() {
      if (!client.in_multi && !client_command) client.tracking_caching = false;
    }
  } end_caching{client, plan.spec != nullptr && plan.spec->name == "client"};
  if (!admitted) {
    if (plan.spec != nullptr) ServerStats::Count(core_.commands.at(plan.spec->id).rejected_calls);
    return;
  }
  const CommandSpec& spec = *plan.spec;
  {
    std::lock_guard<std::mutex> lock(client.mu);
    client.last_cmd = spec.name;
  }
  if (QueuedByMulti(client, spec)) {
    client.Queue({&spec, std::move(argv)});
    w.SimpleString("QUEUED");
    return;
  }
  Ctx ctx{core_, client, argv, w, spec};
  ctx.holds_server_lock = plan.holds_server_lock;
  KeyTracking::CommandScope tracking_scope(core_.tracking, client);
  RunObserved(ctx, Execute);
}

std::optional<std::string> TransactionRedirect(const Core& core, const ClientState& client,
                                               const std::vector<QueuedRequest>& queued) {
  if (!core.cluster.enabled()) return std::nullopt;
  int slot = -1;
  bool cross = false;
  bool write = false;
  for (const QueuedRequest& r : queued) {
    NoteSlots(*r.spec, r.argv, &slot, &cross);
    write = write || r.spec->Has(kWrite);
  }
  return RouteSlot(core, client, slot, cross, write);
}

void RunQueued(Core& core, ClientState& client, QueuedRequest& request, resp::ReplyWriter& w) {
  Ctx ctx{core, client, request.argv, w, *request.spec};
  ctx.in_exec = true;
  RunObserved(ctx, RunHandler);
}

}  // namespace larder::server
