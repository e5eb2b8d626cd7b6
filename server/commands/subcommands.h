// Container commands (CLIENT, CONFIG, COMMAND, OBJECT, MEMORY) dispatch argv[1] through a
// table of SubcommandRow declared beside the handlers; `<CMD> HELP` is generated from it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "commands/context.h"

namespace larder::server {

// Runs the subcommand argv[1] (case-insensitive) of ctx.spec from `table`, as Redis does:
//   HELP (arity 2)   → "<CMD> <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", each
//                      row's usage and indented help line, then "HELP" and its line
//   unknown          → "ERR unknown subcommand '<sub>'. Try <CMD> HELP."
//   wrong arity      → "ERR wrong number of arguments for '<cmd>|<sub>' command"
// Precondition: ctx.argc() >= 2.
void RunSubcommand(Ctx& ctx, std::span<const SubcommandRow> table);
// The row of subcommand `sub` (case-insensitive) in `table`, or nullptr (HELP has none).
const SubcommandRow* RowOf(std::string_view sub, std::span<const SubcommandRow> table);
// Whether RunSubcommand would run a handler or HELP (argv[1] known, the arity right): what a
// container command checks before a refusal of its own that Redis makes only then (CLUSTER
// with the cluster disabled). Precondition: ctx.argc() >= 2.
bool SubcommandRuns(const Ctx& ctx, std::span<const SubcommandRow> table);
// The error RunSubcommand would give `argv` of container `cmd` without running anything
// (unknown subcommand, wrong arity), or nullopt: what the dispatcher refuses a call with
// before running or queuing it. Precondition: argv.size() >= 2.
std::optional<std::string> SubcommandRefusal(std::string_view cmd,
                                             std::span<const std::string> argv,
                                             std::span<const SubcommandRow> table);

}  // namespace larder::server
