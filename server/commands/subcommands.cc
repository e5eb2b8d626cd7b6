#include "commands/subcommands.h"

#include <mutex>
#include <string>

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

// The row of argv[1], or nullptr (HELP has none).
const SubcommandRow* RowOf(const Ctx& ctx, std::span<const SubcommandRow> table) {
  for (const SubcommandRow& row : table) {
    if (EqualsNoCase(ctx.argv[1], row.name)) return &row;
  }
  return nullptr;
}

// What CLIENT LIST shows as the client's last command: the full name, as Redis.
void NoteFullName(Ctx& ctx, const std::string& full) {
  std::lock_guard<std::mutex> lock(ctx.client.mu);
  ctx.client.last_cmd = full;
}

}  // namespace

bool SubcommandRuns(const Ctx& ctx, std::span<const SubcommandRow> table) {
  if (EqualsNoCase(ctx.argv[1], "help")) return ctx.argc() == 2;
  const SubcommandRow* row = RowOf(ctx, table);
  return row != nullptr && ArityOk(row->arity, ctx.argc());
}

void RunSubcommand(Ctx& ctx, std::span<const SubcommandRow> table) {
  const std::string& sub = ctx.argv[1];
  const std::string full = std::string(ctx.spec.name) + "|" + ToLower(sub);
  if (EqualsNoCase(sub, "help")) {
    NoteFullName(ctx, full);
    if (ctx.argc() != 2) return ReplyArity(ctx, full);
    return ReplyHelp(ctx, table);
  }
  const SubcommandRow* row = RowOf(ctx, table);
  if (row == nullptr) return ReplyUnknownSub(ctx, sub, ctx.spec.name);
  NoteFullName(ctx, full);
  if (!ArityOk(row->arity, ctx.argc())) return ReplyArity(ctx, full);
  ctx.subcommand_flags = row->flags;
  row->handler(ctx);
}

}  // namespace larder::server
