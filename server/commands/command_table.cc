#include "commands/command_table.h"

#include <string>
#include <unordered_map>

namespace larder::server {

namespace {
constexpr uint32_t W = kWrite, R = kReadonly, A = kAdmin, N = kNoauth, L = kLoading, F = kFast,
                   NM = kNoMulti, X = kRmw, S = kStale;
}  // namespace

const std::vector<CommandSpec>& CommandTable() {
  // name, arity, flags, first key, last key, step, handler
  static const std::vector<CommandSpec> table = {
      // connection
      {"ping", -1, F | L | S, 0, 0, 0, cmd::Ping},
      {"echo", 2, F | L | S, 0, 0, 0, cmd::Echo},
      {"hello", -1, N | F | L | S | NM, 0, 0, 0, cmd::Hello},
      {"auth", -2, N | F | L | S | NM, 0, 0, 0, cmd::Auth},
      {"select", 2, F | L | S, 0, 0, 0, cmd::Select},
      {"quit", -1, N | F | L | S | NM, 0, 0, 0, cmd::Quit},
      {"reset", 1, N | F | L | S | NM, 0, 0, 0, cmd::Reset},
      {"client", -2, F | L | S, 0, 0, 0, cmd::Client},
      // strings
      {"get", 2, R, 1, 1, 1, cmd::Get},
      {"set", -3, W, 1, 1, 1, cmd::Set},
      {"setnx", 3, W, 1, 1, 1, cmd::SetNx},
      {"setex", 4, W, 1, 1, 1, cmd::SetEx},
      {"psetex", 4, W, 1, 1, 1, cmd::PSetEx},
      {"getex", -2, W, 1, 1, 1, cmd::GetEx},
      {"getdel", 2, W, 1, 1, 1, cmd::GetDel},
      {"mget", -2, R, 1, -1, 1, cmd::MGet},
      {"mset", -3, W, 1, -1, 2, cmd::MSet},
      {"msetnx", -3, W | X, 1, -1, 2, cmd::MSetNx},
      {"strlen", 2, R | F, 1, 1, 1, cmd::StrLen},
      {"getrange", 4, R, 1, 1, 1, cmd::GetRange},
      {"substr", 4, R, 1, 1, 1, cmd::GetRange},
      {"append", 3, W | X, 1, 1, 1, cmd::Append},
      {"setrange", 4, W | X, 1, 1, 1, cmd::SetRange},
      {"incr", 2, W | X, 1, 1, 1, cmd::Incr},
      {"decr", 2, W | X, 1, 1, 1, cmd::Decr},
      {"incrby", 3, W | X, 1, 1, 1, cmd::IncrBy},
      {"decrby", 3, W | X, 1, 1, 1, cmd::DecrBy},
      // keys
      {"del", -2, W, 1, -1, 1, cmd::Del},
      {"unlink", -2, W, 1, -1, 1, cmd::Del},
      {"exists", -2, R | F, 1, -1, 1, cmd::Exists},
      {"type", 2, R | F, 1, 1, 1, cmd::Type},
      {"expire", -3, W, 1, 1, 1, cmd::Expire},
      {"pexpire", -3, W, 1, 1, 1, cmd::PExpire},
      {"expireat", -3, W, 1, 1, 1, cmd::ExpireAt},
      {"pexpireat", -3, W, 1, 1, 1, cmd::PExpireAt},
      {"ttl", 2, R | F, 1, 1, 1, cmd::Ttl},
      {"pttl", 2, R | F, 1, 1, 1, cmd::PTtl},
      {"expiretime", 2, R | F, 1, 1, 1, cmd::ExpireTime},
      {"pexpiretime", 2, R | F, 1, 1, 1, cmd::PExpireTime},
      {"persist", 2, W, 1, 1, 1, cmd::Persist},
      {"touch", -2, R | F, 1, -1, 1, cmd::Touch},
      {"scan", -2, R, 0, 0, 0, cmd::Scan},
      {"keys", 2, R, 0, 0, 0, cmd::Keys},
      {"randomkey", 1, R, 0, 0, 0, cmd::RandomKey},
      {"rename", 3, W | X, 1, 2, 1, cmd::Rename},
      {"renamenx", 3, W | X, 1, 2, 1, cmd::RenameNx},
      {"object", -2, R | F, 2, 2, 1, cmd::Object},
      {"memory", -2, R | F, 0, 0, 0, cmd::Memory},
      // server
      {"info", -1, L | S, 0, 0, 0, cmd::Info},
      {"config", -2, A | L | S, 0, 0, 0, cmd::Config},
      {"dbsize", 1, R | F, 0, 0, 0, cmd::DbSize},
      {"flushdb", -1, W, 0, 0, 0, cmd::FlushAll},
      {"flushall", -1, W, 0, 0, 0, cmd::FlushAll},
      {"time", 1, F | L | S, 0, 0, 0, cmd::Time},
      {"lastsave", 1, F | L | S, 0, 0, 0, cmd::LastSave},
      {"save", 1, A | NM, 0, 0, 0, cmd::Save},
      {"bgsave", -1, A, 0, 0, 0, cmd::BgSave},
      {"shutdown", -1, A | L | S | NM, 0, 0, 0, cmd::Shutdown},
      {"wait", 3, F, 0, 0, 0, cmd::Wait},
      {"command", -1, F | L | S, 0, 0, 0, cmd::Command},
      // transactions
      {"multi", 1, F | L | S | NM, 0, 0, 0, cmd::Multi},
      {"exec", 1, L | S | NM, 0, 0, 0, cmd::Exec},
      {"discard", 1, F | L | S | NM, 0, 0, 0, cmd::Discard},
      {"watch", -2, F | L | S | NM, 1, -1, 1, cmd::Watch},
      {"unwatch", 1, F | L | S | NM, 0, 0, 0, cmd::Unwatch},
      // larder
      {"larder.prefix", -2, R | F, 1, -1, 1, cmd::LarderPrefix},
  };
  return table;
}

const CommandSpec* FindCommand(std::string_view name) {
  // Lowercase name -> spec, built once (thread-safe static init).
  static const std::unordered_map<std::string, const CommandSpec*> by_name = [] {
    std::unordered_map<std::string, const CommandSpec*> m;
    for (const CommandSpec& spec : CommandTable()) m.emplace(std::string(spec.name), &spec);
    return m;
  }();
  if (name.empty() || name.size() > 32) return nullptr;
  char lower[32];
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    lower[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  auto it = by_name.find(std::string(lower, name.size()));
  return it == by_name.end() ? nullptr : it->second;
}

}  // namespace larder::server
