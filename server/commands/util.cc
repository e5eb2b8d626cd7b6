#include "commands/util.h"

#include "config/engine_options.h"

namespace larder::server {

bool ArgInt64(Ctx& ctx, std::string_view s, int64_t* out) {
  if (ParseInt64(s, out)) return true;
  ctx.w.Error(kErrNotInt);
  return false;
}

void ReplyStatus(Ctx& ctx, const Status& s) {
  if (s.IsNoSpace()) {
    ctx.w.Error(kErrOom);
  } else if (s.IsInvalidArgument()) {
    ctx.w.Error("ERR " + config::InOptionTerms(s.message()));
  } else {
    ctx.w.Error("ERR " + config::InOptionTerms(s.ToString()));
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
