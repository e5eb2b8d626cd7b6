// Dispatcher: the command layer's RequestExecutor. Runs one request through the command table
// — lookup (once, in PlanOf), arity, AUTH, MULTI queueing, the server lock — and writes
// exactly one reply.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "commands/command_spec.h"
#include "core/core.h"
#include "core/request_executor.h"

namespace larder::server {

class Dispatcher final : public RequestExecutor {
 public:
  explicit Dispatcher(Core& core) : core_(core) {}

  // Held while CLIENT PAUSE holds it. Otherwise, for the io thread: inline when the command is
  // unknown, has the wrong arity, will be queued by MULTI, is `fast` (but for a subcommand
  // that is not, kSlow), or runs from memory (RunsFromMemory); the engine pool otherwise.
  Plan PlanOf(const ClientState& client, const std::vector<std::string>& argv,
              Planner planner) const override;
  void Run(const Plan& plan, ClientState& client, std::vector<std::string>& argv,
           resp::ReplyWriter& w) override;

 private:
  // Replies the error and returns false if the request may not run (unknown command, wrong
  // arity, not authenticated); a refused request inside MULTI makes EXEC abort.
  bool Admit(const CommandSpec* spec, ClientState& client, const std::vector<std::string>& argv,
             resp::ReplyWriter& w) const;
  // Whether the call (arity checked) will not wait for the disk: `spec` is fast_if_in_memory
  // and the value of its key is in memory and at most inline-get-max-bytes (Store::InMemory),
  // or it is fast_if_put_in_memory, has no argument past its value, and the write stays in
  // memory (Store::PutInMemory).
  bool RunsFromMemory(const CommandSpec& spec, const std::vector<std::string>& argv) const;

  Core& core_;
};

// In cluster mode, the redirect (or CROSSSLOT) for a transaction's queued commands taken
// together, as routed at EXEC; nullopt to run them here.
std::optional<std::string> TransactionRedirect(const Core& core, const ClientState& client,
                                               const std::vector<QueuedRequest>& queued);

// Runs a request queued by MULTI (checked when queued) for EXEC, which holds the exclusive
// server lock.
void RunQueued(Core& core, ClientState& client, QueuedRequest& request, resp::ReplyWriter& w);

}  // namespace larder::server
