// The command table: every command is declared once (command_table.cc) with Redis's metadata
// (arity, flags, key positions). Dispatch uses it for lookup, arity and auth checks and for
// choosing where a command runs; COMMAND reports it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "commands/context.h"

namespace larder::server {

enum CommandFlag : uint32_t {
  kWrite = 1u << 0,     // may modify the keyspace
  kReadonly = 1u << 1,  // reads the keyspace only
  kAdmin = 1u << 2,     // administrative (CONFIG, SHUTDOWN, ...)
  kNoauth = 1u << 3,    // allowed before AUTH
  kLoading = 1u << 4,   // allowed while loading (all of Larder's are; reported for COMMAND)
  kFast = 1u << 5,      // no disk I/O: runs on the connection's io thread
  kNoMulti = 1u << 6,   // never queued by MULTI: runs at once (MULTI, EXEC, DISCARD, ...)
  kRmw = 1u << 7,       // read-modify-write: runs under the exclusive server lock
  kStale = 1u << 8,     // reported only
};

using Handler = void (*)(Ctx& ctx);

struct CommandSpec {
  std::string_view name;  // lowercase
  int arity;              // argc including the name; negative = at least -arity
  uint32_t flags;
  int first_key, last_key, step;  // Redis key positions (last_key -1 = to the end)
  Handler handler;
};

// All commands, in declaration order.
const std::vector<CommandSpec>& CommandTable();
// Case-insensitive lookup; nullptr if unknown.
const CommandSpec* FindCommand(std::string_view name);
// Whether argc satisfies spec.arity.
inline bool ArityOk(const CommandSpec& spec, size_t argc) {
  return spec.arity >= 0 ? argc == static_cast<size_t>(spec.arity)
                         : argc >= static_cast<size_t>(-spec.arity);
}

// Handlers, one file per family.
namespace cmd {
// connection_cmds.cc
void Ping(Ctx&);
void Echo(Ctx&);
void Hello(Ctx&);
void Auth(Ctx&);
void Select(Ctx&);
void Quit(Ctx&);
void Reset(Ctx&);
void Client(Ctx&);
// string_cmds.cc
void Get(Ctx&);
void Set(Ctx&);
void SetNx(Ctx&);
void SetEx(Ctx&);
void PSetEx(Ctx&);
void GetEx(Ctx&);
void GetDel(Ctx&);
void MGet(Ctx&);
void MSet(Ctx&);
void MSetNx(Ctx&);
void StrLen(Ctx&);
void GetRange(Ctx&);
void Append(Ctx&);
void SetRange(Ctx&);
void Incr(Ctx&);
void Decr(Ctx&);
void IncrBy(Ctx&);
void DecrBy(Ctx&);
// key_cmds.cc
void Del(Ctx&);
void Exists(Ctx&);
void Type(Ctx&);
void Expire(Ctx&);
void PExpire(Ctx&);
void ExpireAt(Ctx&);
void PExpireAt(Ctx&);
void Ttl(Ctx&);
void PTtl(Ctx&);
void ExpireTime(Ctx&);
void PExpireTime(Ctx&);
void Persist(Ctx&);
void Touch(Ctx&);
void Scan(Ctx&);
void Keys(Ctx&);
void RandomKey(Ctx&);
void Rename(Ctx&);
void RenameNx(Ctx&);
void Object(Ctx&);
void Memory(Ctx&);
// server_cmds.cc
void Info(Ctx&);
void Config(Ctx&);
void DbSize(Ctx&);
void FlushAll(Ctx&);
void Time(Ctx&);
void LastSave(Ctx&);
void Save(Ctx&);
void BgSave(Ctx&);
void Shutdown(Ctx&);
void Wait(Ctx&);
void Command(Ctx&);
// transaction_cmds.cc
void Multi(Ctx&);
void Exec(Ctx&);
void Discard(Ctx&);
void Watch(Ctx&);
void Unwatch(Ctx&);
// larder_cmds.cc
void LarderPrefix(Ctx&);
}  // namespace cmd

}  // namespace larder::server
