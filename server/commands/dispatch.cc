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

}  // namespace

Route RouteOf(const ClientState& client, const std::vector<std::string>& argv) {
  const CommandSpec* spec = FindCommand(argv[0]);
  if (spec == nullptr || !ArityOk(*spec, argv.size())) return Route::kInline;
  if (client.in_multi && !(spec->flags & kNoMulti)) return Route::kInline;  // queued
  return (spec->flags & kFast) ? Route::kInline : Route::kPool;
}

void Dispatch(Core& core, ClientState& client, std::vector<std::string>& argv,
              resp::ReplyWriter& w) {
  core.total_commands.fetch_add(1, std::memory_order_relaxed);
  Ctx ctx{core, client, argv, w};
  const CommandSpec* spec = FindCommand(argv[0]);
  if (spec == nullptr) {
    if (client.in_multi) client.multi_error = true;
    w.Error(UnknownCommandError(argv));
    return;
  }
  if (!ArityOk(*spec, argv.size())) {
    if (client.in_multi) client.multi_error = true;
    ReplyArity(ctx, spec->name);
    return;
  }
  if (!client.authenticated && !(spec->flags & kNoauth) && !core.cfg()->requirepass.empty()) {
    if (client.in_multi) client.multi_error = true;
    w.Error("NOAUTH Authentication required.");
    return;
  }
  {
    std::lock_guard<std::mutex> lock(client.mu);
    client.last_cmd = spec->name;
  }
  if (client.in_multi && !(spec->flags & kNoMulti)) {
    client.queued.push_back(std::move(argv));
    w.SimpleString("QUEUED");
    return;
  }
  if (spec->handler == cmd::Exec) {  // takes the lock exclusively itself
    spec->handler(ctx);
  } else if (spec->flags & kRmw) {
    std::unique_lock<FairSharedMutex> lock(core.exec_lock());
    spec->handler(ctx);
  } else {
    std::shared_lock<FairSharedMutex> lock(core.exec_lock());
    spec->handler(ctx);
  }
}

void RunQueued(Core& core, ClientState& client, std::vector<std::string>& argv,
               resp::ReplyWriter& w) {
  Ctx ctx{core, client, argv, w};
  const CommandSpec* spec = FindCommand(argv[0]);
  spec->handler(ctx);  // validated when queued
}

}  // namespace larder::server
