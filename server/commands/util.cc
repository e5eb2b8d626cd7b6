#include "commands/util.h"

#include "config/engine_options.h"

namespace larder::server {

bool ArgInt64(Ctx& ctx, std::string_view s, int64_t* out) {
  if (ParseInt64(s, out)) return true;
  ctx.w.Error(kErrNotInt);
  return false;
}

bool ArgDbZero(Ctx& ctx, std::string_view s) {
  int64_t db;
  if (!ArgInt64(ctx, s, &db)) return false;
  if (db < INT32_MIN || db > INT32_MAX) {
    ctx.w.Error("ERR value is out of range, value must between -2147483648 and 2147483647");
    return false;
  }
  if (db != 0) ctx.w.Error("ERR DB index is out of range");
  return db == 0;
}

void ReplyStatus(Ctx& ctx, const Status& s) {
  if (s.IsNoSpace()) {
    ctx.w.Error(kErrOom);
  } else {
    // An invalid argument's message alone; other errors with their kind ("IO error: ...").
    const std::string text = s.IsInvalidArgument() ? s.message() : s.ToString();
    ctx.w.Error("ERR " + config::InOptionTerms(text));
  }
}

std::string ArityError(std::string_view name) {
  return "ERR wrong number of arguments for '" + ToLower(name) + "' command";
}

void ReplyArity(Ctx& ctx, std::string_view name) {
  ctx.w.Error(ArityError(name));
}

std::string UnknownSubError(std::string_view sub, std::string_view cmd) {
  return "ERR unknown subcommand '" + std::string(sub.substr(0, 128)) + "'. Try " +
         common::ToUpper(cmd) + " HELP.";
}

void ReplySubcommandSyntax(Ctx& ctx) {
  ctx.w.Error("ERR unknown subcommand or wrong number of arguments for '" +
              ctx.argv[1].substr(0, 128) + "'. Try " + common::ToUpper(ctx.spec.name) + " HELP.");
}

}  // namespace larder::server
