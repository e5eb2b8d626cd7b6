#include "commands/subcommands.h"

#include <mutex>
#include <string>

#include "commands/util.h"

namespace larder::server {

namespace {

// Each row's usage, then each line of its help indented (a help of several lines has them
// separated by '\n').
void ReplyHelp(Ctx& ctx, std::span<const SubcommandRow> table) {
  std::vector<std::string> lines = {common::ToUpper(ctx.spec.name) +
                                    " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"};
  for (const SubcommandRow& row : table) {
    lines.emplace_back(row.usage);
    for (std::string_view line : common::SplitNonEmpty(row.help, '\n')) {
      lines.push_back("    " + std::string(line));
    }
  }
  lines.emplace_back("HELP");
  lines.emplace_back("    Prints this help.");
  ctx.w.ArrayHeader(lines.size());
  for (const std::string& line : lines) ctx.w.SimpleString(line);
}

}  // namespace

const SubcommandRow* RowOf(std::string_view sub, std::span<const SubcommandRow> table) {
  for (const SubcommandRow& row : table) {
    if (EqualsNoCase(sub, row.name)) return &row;
  }
  return nullptr;
}

namespace {

// What CLIENT LIST shows as the client's last command: the full name, as Redis.
void NoteFullName(Ctx& ctx, const std::string& full) {
  std::lock_guard<std::mutex> lock(ctx.client.mu);
  ctx.client.last_cmd = full;
}

}  // namespace

std::optional<std::string> SubcommandRefusal(std::string_view cmd,
                                             std::span<const std::string> argv,
                                             std::span<const SubcommandRow> table) {
  const std::string& sub = argv[1];
  const bool help = EqualsNoCase(sub, "help");
  const SubcommandRow* row = help ? nullptr : RowOf(sub, table);
  if (!help && row == nullptr) return UnknownSubError(sub, cmd);
  if (!ArityOk(help ? 2 : row->arity, argv.size())) {
    return ArityError(std::string(cmd) + "|" + ToLower(sub));
  }
  return std::nullopt;
}

bool SubcommandRuns(const Ctx& ctx, std::span<const SubcommandRow> table) {
  return !SubcommandRefusal(ctx.spec.name, ctx.argv, table);
}

void RunSubcommand(Ctx& ctx, std::span<const SubcommandRow> table) {
  const std::string& sub = ctx.argv[1];
  const bool help = EqualsNoCase(sub, "help");
  const SubcommandRow* row = help ? nullptr : RowOf(sub, table);
  if (help || row != nullptr) NoteFullName(ctx, std::string(ctx.spec.name) + "|" + ToLower(sub));
  if (auto refused = SubcommandRefusal(ctx.spec.name, ctx.argv, table)) {
    return ctx.w.Error(*refused);
  }
  if (help) return ReplyHelp(ctx, table);
  ctx.subcommand_flags = row->flags;
  row->handler(ctx);
}

}  // namespace larder::server
