// Ctx: what a command handler sees — the server-wide Core, the client's state, the request's
// arguments, its command's spec (looked up once by dispatch) and the reply writer. A handler
// writes exactly one reply.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "commands/command_spec.h"
#include "core/core.h"
#include "resp/reply_writer.h"

namespace larder::server {

struct Ctx {
  Core& core;
  ClientState& client;
  std::vector<std::string>& argv;
  resp::ReplyWriter& w;
  const CommandSpec& spec;
  uint32_t subcommand_flags = 0;   // the flags of the subcommand row that ran (RunSubcommand)
  bool in_exec = false;            // run by EXEC (what Redis's CLIENT_DENY_BLOCKING marks)
  bool holds_server_lock = false;  // shared, taken by PlanOf (Plan::holds_server_lock)
  // Values an `exclusive` command's BeforeLock wrote ahead of its keys (MSET's), for the
  // handler to commit; freed with the Ctx if it does not.
  std::unique_ptr<StagedPuts> staged = nullptr;

  Store& store() { return core.store; }
  // The PutOptions every write of this command starts from. A command that holds the server
  // lock exclusively (`exclusive`, or run by EXEC) makes every other command with a key wait,
  // so its writes never wait for the engine's background writers' room (the values it holds
  // are queued past it: PutOptions::never_wait_for_writers).
  PutOptions WriteOptions() const {
    PutOptions po;
    po.never_wait_for_writers = in_exec || spec.Has(kExclusive);
    return po;
  }
  size_t argc() const { return argv.size(); }
  int64_t NowMs() const { return core.NowMs(); }
};

}  // namespace larder::server
