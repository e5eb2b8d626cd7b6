#include "commands/dispatch.h"

#include <mutex>
#include <shared_mutex>

#include "commands/command_table.h"
#include "commands/util.h"

namespace larder::server {

namespace {

// "ERR unknown command 'foo', with args beginning with: 'a' 'b' " as Redis builds it.
std::string UnknownCommandError(const std::vector<std::string>& argv) {
  std::string args;
  for (size_t i = 1; i < argv.size() && args.size() < 128; ++i) {
    size_t room = 128 - args.size();
    args += "'" + argv[i].substr(0, room) + "' ";
  }
  return "ERR unknown command '" + argv[0].substr(0, 128) + "', with args beginning with: " + args;
}

bool QueuedByMulti(const ClientState& client, const CommandSpec& spec) {
  return client.in_multi && !spec.Has(kNoMulti);
}

// Runs the handler under the server lock its flags ask for.
void Execute(Ctx& ctx) {
  if (ctx.spec.Has(kLocksItself)) {
    ctx.spec.handler(ctx);
  } else if (ctx.spec.Has(kExclusive)) {
    std::unique_lock<FairSharedMutex> lock(ctx.core.exec_lock);
    ctx.spec.handler(ctx);
  } else {
    std::shared_lock<FairSharedMutex> lock(ctx.core.exec_lock);
    ctx.spec.handler(ctx);
  }
}

}  // namespace

Plan Dispatcher::PlanOf(const ClientState& client, const std::vector<std::string>& argv) const {
  Plan plan;
  plan.spec = FindCommand(argv[0]);
  const CommandSpec* spec = plan.spec;
  bool cheap = spec == nullptr || !ArityOk(spec->arity, argv.size()) ||
               QueuedByMulti(client, *spec) || spec->Has(kFast);
  plan.route = cheap ? Route::kInline : Route::kPool;
  return plan;
}

bool Dispatcher::Admit(const CommandSpec* spec, ClientState& client,
                       const std::vector<std::string>& argv, resp::ReplyWriter& w) const {
  std::string error;
  if (spec == nullptr) {
    error = UnknownCommandError(argv);
  } else if (!ArityOk(spec->arity, argv.size())) {
    error = "ERR wrong number of arguments for '" + std::string(spec->name) + "' command";
  } else if (!client.authenticated && !spec->Has(kNoAuth) &&
             !core_.config.snapshot()->requirepass.empty()) {
    error = "NOAUTH Authentication required.";
  } else if (client.resp == 2 && client.subscribed() && !spec->Has(kPubSubContext)) {
    error = "ERR Can't execute '" + std::string(spec->name) +
            "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
            "this context";
  } else {
    return true;
  }
  if (client.in_multi) client.multi_error = true;
  w.Error(error);
  return false;
}

void Dispatcher::Run(const Plan& plan, ClientState& client, std::vector<std::string>& argv,
                     resp::ReplyWriter& w) {
  ServerStats::Count(core_.stats.total_commands_processed);
  if (!Admit(plan.spec, client, argv, w)) return;
  const CommandSpec& spec = *plan.spec;
  {
    std::lock_guard<std::mutex> lock(client.mu);
    client.last_cmd = spec.name;
  }
  if (QueuedByMulti(client, spec)) {
    client.queued.push_back({&spec, std::move(argv)});
    w.SimpleString("QUEUED");
    return;
  }
  Ctx ctx{core_, client, argv, w, spec};
  Execute(ctx);
}

void RunQueued(Core& core, ClientState& client, QueuedRequest& request, resp::ReplyWriter& w) {
  Ctx ctx{core, client, request.argv, w, *request.spec};
  ctx.spec.handler(ctx);
}

}  // namespace larder::server
