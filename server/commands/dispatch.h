// Dispatch: runs one parsed request through the command table — lookup, arity, AUTH, MULTI
// queueing, the server lock — and writes exactly one reply.
#pragma once

#include <string>
#include <vector>

#include "commands/context.h"

namespace larder::server {

enum class Route {
  kInline,  // cheap (no disk I/O): run on the connection's io thread
  kPool,    // may block on the engine: run on the engine thread pool
};

// Where the request in argv should run, given the client's state. Pure.
Route RouteOf(const ClientState& client, const std::vector<std::string>& argv);

// Executes the request in argv (which it may move from) and writes its reply to w.
void Dispatch(Core& core, ClientState& client, std::vector<std::string>& argv,
              resp::ReplyWriter& w);

// Runs an already validated, queued request (EXEC). The caller holds the exclusive lock.
void RunQueued(Core& core, ClientState& client, std::vector<std::string>& argv,
               resp::ReplyWriter& w);

}  // namespace larder::server
