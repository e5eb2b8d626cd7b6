#include "commands/subcommands.h"

#include "commands/util.h"

namespace larder::server {

namespace {

void ReplyHelp(Ctx& ctx, std::span<const SubcommandRow> table) {
  ctx.w.ArrayHeader(1 + 2 * table.size() + 2);
  ctx.w.SimpleString(common::ToUpper(ctx.spec.name) +
                     " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
  for (const SubcommandRow& row : table) {
    ctx.w.SimpleString(row.usage);
    ctx.w.SimpleString("    " + std::string(row.help));
  }
  ctx.w.SimpleString("HELP");
  ctx.w.SimpleString("    Prints this help.");
}

}  // namespace

void RunSubcommand(Ctx& ctx, std::span<const SubcommandRow> table) {
  const std::string& sub = ctx.argv[1];
  const std::string full = std::string(ctx.spec.name) + "|" + ToLower(sub);
  if (EqualsNoCase(sub, "help")) {
    if (ctx.argc() != 2) return ReplyArity(ctx, full);
    return ReplyHelp(ctx, table);
  }
  for (const SubcommandRow& row : table) {
    if (!EqualsNoCase(sub, row.name)) continue;
    if (!ArityOk(row.arity, ctx.argc())) return ReplyArity(ctx, full);
    ctx.subcommand_flags = row.flags;
    return row.handler(ctx);
  }
  ReplyUnknownSub(ctx, sub, ctx.spec.name);
}

}  // namespace larder::server
