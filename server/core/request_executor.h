// What the network layer needs from the command layer, and nothing more: net/ parses a
// request, asks PlanOf where it runs, and has Run execute it on that thread. The command layer
// (commands/dispatch.h) implements it; net/ never includes commands/.
#pragma once

#include <string>
#include <vector>

#include "core/client_state.h"
#include "resp/reply_writer.h"

namespace larder::server {

enum class Route {
  kInline,  // cheap (no disk I/O): run on the connection's io thread
  kPool,    // may block on the engine: run on an engine thread pool
  kHold,    // held by CLIENT PAUSE: plan it again a little later (nothing was run)
};

// Who asks PlanOf: the connection's io thread, which runs the request or hands it to a pool,
// or a pool thread going on with a pipelined batch, which runs it where it is (only a hold
// stops it, so the route is not worked out).
enum class Planner {
  kIoThread,
  kPoolBatch,
};

// A request looked up once: where it runs and, for Run, which command it is.
struct Plan {
  Route route = Route::kInline;
  const CommandSpec* spec = nullptr;  // null: not a known command (Run replies the error)
  bool in_memory = false;  // kInline because the value it reads or writes stays in memory
  // kInline with the server lock already held shared (PlanOf took it; Run releases it): an io
  // thread never waits for the lock, where a writer holding it (MSET, EXEC) would stall every
  // connection of the thread. A request that would wait for it goes to the pool instead.
  bool holds_server_lock = false;
  // A write counted as running (ClientPause::StartCommand) until Run ends: kInline, or kPool
  // planned by kPoolBatch. A kPool plan of the io thread counts nothing: the pool thread plans
  // the request again where it runs, and a pause begun meanwhile holds it there.
  bool counts_write = false;
};

class RequestExecutor {
 public:
  virtual ~RequestExecutor() = default;
  // Looks argv[0] up and decides where the request runs, given the client's state: kHold, or
  // for kPoolBatch kPool (where it already is), for kIoThread kInline or kPool. Changes
  // nothing, but for taking the server lock of an inline plan (Plan::holds_server_lock) and
  // counting a write (Plan::counts_write): the caller must then Run the plan, at once.
  virtual Plan PlanOf(const ClientState& client, const std::vector<std::string>& argv,
                      Planner planner) const = 0;
  // Executes the request PlanOf planned for these very argv and client state (argv may be
  // moved from) and writes exactly one reply to w, which drops it while CLIENT REPLY says so
  // (ClientState::replies_dropped).
  virtual void Run(const Plan& plan, ClientState& client, std::vector<std::string>& argv,
                   resp::ReplyWriter& w) = 0;
};

}  // namespace larder::server
