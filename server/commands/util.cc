#include "commands/util.h"

#include "config/engine_options.h"
#include "log.h"

namespace larder::server {

bool ArgInt64(Ctx& ctx, std::string_view s, int64_t* out) {
  if (ParseInt64(s, out)) return true;
  ctx.w.Error(kErrNotInt);
  return false;
}

bool ArgDbIndex(Ctx& ctx, std::string_view s, int64_t* db, std::string_view invalid) {
  if (!ParseInt64(s, db)) {
    ctx.w.Error(invalid.empty() ? kErrNotInt : invalid);
    return false;
  }
  if (*db < INT32_MIN || *db > INT32_MAX) {
    ctx.w.Error(invalid.empty()
                    ? "ERR value is out of range, value must between -2147483648 and 2147483647"
                    : invalid);
    return false;
  }
  return true;
}

bool RefusedInClusterMode(Ctx& ctx) {
  if (!ctx.core.cluster.enabled()) return false;
  ctx.w.Error("ERR " + ToUpper(ctx.spec.name) + " is not allowed in cluster mode");
  return true;
}

bool ArgDbZero(Ctx& ctx, std::string_view s) {
  int64_t db;
  if (!ArgDbIndex(ctx, s, &db)) return false;
  if (db != 0) ctx.w.Error(kErrDbRange);
  return db == 0;
}

namespace {

// The store's own failures (a full disk, an I/O error) are the operator's to see, whatever
// the reply says (a full disk answers Redis's OOM text): a warning with the engine's cause, at
// most one every 10 s, with how many were not logged since.
void LogStoreError(const Status& s, int64_t now_ms) {
  static LogLimiter limiter(10'000);
  uint64_t more = 0;
  if (!limiter.Due(now_ms, &more)) return;
  Log(LogLevel::kWarning, "a command failed in the store: " + config::InOptionTerms(s.ToString()) +
                              (more ? " (and " + std::to_string(more) + " more since)" : ""));
}

}  // namespace

bool DeleteKey(Ctx& ctx, std::string_view key, bool* deleted) {
  const Status s = ctx.store().Delete(key);
  if (deleted) *deleted = s.ok();
  if (s.ok()) ctx.core.events.Notify(config::kNotifyGeneric, "del", key);
  if (s.ok() || s.IsNotFound()) return true;
  ReplyStatus(ctx, s);
  return false;
}

void ReplyStatus(Ctx& ctx, const Status& s) {
  if (s.code() == Status::Code::kNoSpace || s.code() == Status::Code::kIOError) {
    LogStoreError(s, ctx.core.NowMs());
  }
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
