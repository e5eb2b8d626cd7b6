// COMMAND and its subcommands: the command table as Redis reports its own.
#include "commands/bitfield_keys.h"
#include "commands/command_table.h"
#include "commands/families.h"
#include "commands/subcommands.h"
#include "commands/util.h"
#include "larder/glob.h"

namespace larder::server {

namespace {

// One COMMAND INFO entry: name, arity, flags, first key, last key, step, ACL categories,
// tips, key specs, subcommands.
void ReplyInfo(Ctx& ctx, const CommandSpec& spec) {
  ctx.w.ArrayHeader(10);
  ctx.w.BulkString(spec.name);
  ctx.w.Integer(spec.arity);
  std::vector<std::string_view> flags;
  for (const FlagWord& f : kFlagWords) {
    if (f.reported && spec.Has(f.flag)) flags.push_back(f.word);
  }
  ctx.w.SetHeader(flags.size());
  for (std::string_view f : flags) ctx.w.SimpleString(f);
  // A container's keys belong to its subcommands: none at its level, as in Redis.
  const KeySpec reported = spec.subcommands.empty() ? spec.keys : kNoKeys;
  ctx.w.Integer(reported.first);
  ctx.w.Integer(reported.last);
  ctx.w.Integer(reported.step);
  ctx.w.SetHeader(0);
  ctx.w.SetHeader(0);
  ctx.w.ArrayHeader(0);
  ctx.w.ArrayHeader(0);
}

void ReplyAllInfo(Ctx& ctx) {
  const auto& table = CommandTable();
  ctx.w.ArrayHeader(table.size());
  for (const CommandSpec& spec : table) ReplyInfo(ctx, spec);
}

void Count(Ctx& ctx) {
  ctx.w.Integer(static_cast<int64_t>(CommandTable().size()));
}

// COMMAND LIST [FILTERBY MODULE <name> | PATTERN <glob>]: every command, each followed by its
// subcommands ("config|get", "config|help"), as Redis 7 lists them; PATTERN matches those
// names case-insensitively, MODULE lists nothing (Larder loads no modules). Larder keeps no
// ACL categories, so FILTERBY ACLCAT is refused rather than answered wrongly.
void List(Ctx& ctx) {
  std::optional<std::string_view> pattern;
  if (ctx.argc() > 2) {
    if (ctx.argc() != 5 || !EqualsNoCase(ctx.argv[2], "filterby")) return ctx.w.Error(kErrSyntax);
    const std::string_view type = ctx.argv[3];
    if (EqualsNoCase(type, "module")) return ctx.w.ArrayHeader(0);
    if (EqualsNoCase(type, "aclcat")) {
      return ctx.w.Error("ERR Larder keeps no ACL categories: FILTERBY ACLCAT is not supported");
    }
    if (!EqualsNoCase(type, "pattern")) return ctx.w.Error(kErrSyntax);
    pattern = ctx.argv[4];
  }
  std::vector<std::string> names;
  for (const CommandSpec& spec : CommandTable()) {
    names.emplace_back(spec.name);
    for (const SubcommandRow& sub : spec.subcommands) {
      names.push_back(std::string(spec.name) + "|" + std::string(sub.name));
    }
    if (!spec.subcommands.empty()) names.push_back(std::string(spec.name) + "|help");
  }
  if (pattern) {
    std::erase_if(names, [&](const std::string& n) { return !GlobMatch(*pattern, n, true); });
  }
  ctx.w.ArrayHeader(names.size());
  for (const std::string& n : names) ctx.w.BulkString(n);
}

// COMMAND INFO [name ...]: every command, or each named one (null when unknown).
void Info(Ctx& ctx) {
  if (ctx.argc() == 2) return ReplyAllInfo(ctx);
  ctx.w.ArrayHeader(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    const CommandSpec* spec = FindCommand(ctx.argv[i]);
    if (spec == nullptr) {
      ctx.w.Null();  // Redis: addReplyNull
    } else {
      ReplyInfo(ctx, *spec);
    }
  }
}

// COMMAND DOCS [name ...]: a map of the known ones to (empty) docs.
void Docs(Ctx& ctx) {
  std::vector<const CommandSpec*> specs;
  if (ctx.argc() == 2) {
    for (const CommandSpec& spec : CommandTable()) specs.push_back(&spec);
  }
  for (size_t i = 2; i < ctx.argc(); ++i) {
    if (const CommandSpec* spec = FindCommand(ctx.argv[i])) specs.push_back(spec);
  }
  ctx.w.MapHeader(specs.size());
  for (const CommandSpec* spec : specs) {
    ctx.w.BulkString(spec->name);
    ctx.w.MapHeader(0);
  }
}

// The flag words of the key at argv position `i` of `call` (the command at 0). SET's and
// BITFIELD's depend on their arguments, as Redis's setGetKeys and bitfieldGetKeys decide them:
// SET with GET reads the old value too, and BITFIELD with no SET or INCRBY only reads.
std::vector<std::string_view> FlagsOfKey(const CommandSpec& spec, std::span<const std::string> call,
                                         size_t i) {
  if (spec.name == "set") {
    for (size_t a = 3; a < call.size(); ++a) {
      if (EqualsNoCase(call[a], "get")) return {"RW", "access", "update"};
    }
  }
  if (spec.name == "bitfield" && !BitFieldWrites(call)) return {"RO", "access"};
  return KeyFlagWords(spec.keys, i == static_cast<size_t>(spec.keys.first));
}

// COMMAND GETKEYS cmd arg... / GETKEYSANDFLAGS: the key arguments by the command's key
// positions, each with its key-spec flags (a set of simple strings) when `with_flags`. As Redis
// 7's getKeysSubcommandImpl: the command is looked up (a container with an argument names its
// subcommand, HELP included), then whether it has keys is checked, then its arity.
void ReplyKeys(Ctx& ctx, bool with_flags) {
  const std::span<const std::string> call = std::span<const std::string>(ctx.argv).subspan(2);
  const CommandSpec* spec = FindCommand(call[0]);
  if (spec == nullptr) return ctx.w.Error("ERR Invalid command specified");
  // A container's keys belong to its subcommands: none at its level.
  bool has_keys = spec->subcommands.empty() && spec->keys.first != 0;
  bool arity_ok = ArityOk(spec->arity, call.size());
  if (!spec->subcommands.empty() && call.size() >= 2) {
    const bool help = EqualsNoCase(call[1], "help");
    if (!help && RowOf(call[1], spec->subcommands) == nullptr) {
      return ctx.w.Error("ERR Invalid command specified");
    }
    has_keys = !help && spec->keys.first != 0 &&
               (spec->keys.subcommand.empty() || EqualsNoCase(call[1], spec->keys.subcommand));
    // The subcommand's arity (HELP's too), as RunSubcommand checks it.
    arity_ok = !SubcommandRefusal(spec->name, call, spec->subcommands);
  }
  if (!has_keys) return ctx.w.Error("ERR The command has no key arguments");
  if (!arity_ok) {
    return ctx.w.Error("ERR Invalid number of arguments specified for command");
  }
  std::vector<size_t> positions;
  ForEachKeyPosition(spec->keys, call, [&](size_t i) { positions.push_back(i); });
  if (positions.empty()) return ctx.w.Error("ERR The command has no key arguments");
  ctx.w.ArrayHeader(positions.size());
  for (size_t i : positions) {
    if (!with_flags) {
      ctx.w.BulkString(call[i]);
      continue;
    }
    ctx.w.ArrayHeader(2);
    ctx.w.BulkString(call[i]);
    const std::vector<std::string_view> flags = FlagsOfKey(*spec, call, i);
    ctx.w.SetHeader(flags.size());
    for (std::string_view f : flags) ctx.w.SimpleString(f);
  }
}

void GetKeys(Ctx& ctx) {
  ReplyKeys(ctx, false);
}

void GetKeysAndFlags(Ctx& ctx) {
  ReplyKeys(ctx, true);
}

constexpr SubcommandRow kSubcommands[] = {
    {"count", 2, Count, "COUNT", "Return the total number of commands in this Larder server."},
    {"list", -2, List, "LIST", "Return a list of all commands in this Larder server."},
    {"info", -2, Info, "INFO [<command-name> ...]",
     "Return details about multiple Larder commands. If no command names are given, "
     "documentation details for all commands are returned."},
    {"docs", -2, Docs, "DOCS [<command-name> ...]",
     "Return documentation details about multiple Larder commands (empty maps)."},
    {"getkeys", -4, GetKeys, "GETKEYS <full-command>",
     "Return the keys from a full Larder command."},
    {"getkeysandflags", -4, GetKeysAndFlags, "GETKEYSANDFLAGS <full-command>",
     "Return the keys and the access flags from a full Larder command."},
};

// COMMAND [COUNT | LIST | INFO name... | DOCS name... | GETKEYS[ANDFLAGS] cmd args... | HELP]
void Command(Ctx& ctx) {
  if (ctx.argc() == 1) return ReplyAllInfo(ctx);
  RunSubcommand(ctx, kSubcommands);
}

constexpr CommandRow kRows[] = {
    {"command", -1, "fast loading stale", kNoKeys, Command, kSubcommands},
};

}  // namespace

std::span<const CommandRow> IntrospectionCommands() {
  return kRows;
}

}  // namespace larder::server
