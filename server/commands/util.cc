#include "commands/util.h"

#include <strings.h>

#include <chrono>

namespace larder::server {

bool ArgInt64(Ctx& ctx, std::string_view s, int64_t* out) {
  if (ParseInt64(s, out)) return true;
  ctx.w.Error(kErrNotInt);
  return false;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void ReplyStatus(Ctx& ctx, const Status& s) {
  if (s.IsNoSpace()) {
    ctx.w.Error(kErrOom);
  } else if (s.IsInvalidArgument()) {
    ctx.w.Error("ERR " + s.message());
  } else {
    ctx.w.Error("ERR " + s.ToString());
  }
}

void ReplyArity(Ctx& ctx, std::string_view name) {
  ctx.w.Error("ERR wrong number of arguments for '" + ToLower(name) + "' command");
}

void ReplyUnknownSub(Ctx& ctx, std::string_view sub, std::string_view cmd) {
  ctx.w.Error("ERR unknown subcommand '" + std::string(sub.substr(0, 128)) + "'. Try " +
              std::string(cmd) + " HELP.");
}

bool ExpireToAbsMs(int64_t value, int64_t unit_ms, bool absolute, int64_t* out) {
  if (value <= 0) return false;
  if (value > INT64_MAX / unit_ms) return false;
  int64_t ms = value * unit_ms;
  if (!absolute) {
    int64_t now = NowMs();
    if (ms > INT64_MAX - now) return false;
    ms += now;
  }
  *out = ms;
  return true;
}

}  // namespace larder::server
