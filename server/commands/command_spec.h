// How a command is declared. Each command family (<family>_cmds.cc) declares its commands in
// one array of CommandRow beside their handlers, Kvrocks-style:
//
//   {"get", 2, "readonly", kOneKey, Get},
//   {"incr", 2, "write exclusive", kOneKey, Incr},
//
// and command_table.cc builds the lookup table from every family once, at startup, parsing
// the flag words (an unknown word stops the server from starting). Dispatch, COMMAND and the
// tests read only that table.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/text.h"
#include "core/client_state.h"

namespace larder::server {

struct Ctx;
using Handler = void (*)(Ctx& ctx);
// The part of an `exclusive` command that needs no server lock, run before dispatch takes it
// exclusively (MSET writes its values there, so that the others wait only for their index
// records). It may leave work in the Ctx for the handler; false once it replied (an error), and
// the handler does not run. Inside EXEC it does not run: the handler does all of it.
using BeforeLock = bool (*)(Ctx& ctx);

enum CommandFlag : uint32_t {
  kWrite = 1u << 0,        // may modify the keyspace
  kReadonly = 1u << 1,     // reads the keyspace only
  kAdmin = 1u << 2,        // administrative (CONFIG, SHUTDOWN, ...)
  kNoAuth = 1u << 3,       // allowed before AUTH
  kLoading = 1u << 4,      // allowed while loading (all of Larder's are; reported only)
  kStale = 1u << 5,        // reported only
  kFast = 1u << 6,         // no disk I/O: runs on the connection's io thread
  kNoMulti = 1u << 7,      // refused inside MULTI, as Redis refuses SAVE and SHUTDOWN
  kExclusive = 1u << 8,    // read-modify-write: runs under the exclusive server lock
  kLocksItself = 1u << 9,  // dispatch takes no server lock: the handler does (EXEC)
  kPubSub = 1u << 10,      // a Pub/Sub command (reported only)
  // Allowed to a RESP2 client with a subscription ((P)SUBSCRIBE, (P)UNSUBSCRIBE, PING, QUIT,
  // RESET); every other command is refused with Redis's error.
  kPubSubContext = 1u << 11,
  kSkipSlowlog = 1u << 12,   // never in the slow log (EXEC: its commands are, one by one)
  kMayReplicate = 1u << 13,  // changes what others see without writing a key (PUBLISH): held
                             // by CLIENT PAUSE WRITE
  kMovesArgs = 1u << 14,     // the handler may take its arguments' buffers (SET's value goes to
                             // the engine as it arrived): dispatch copies what SLOWLOG and
                             // MONITOR show first
  // Reads its one key's value: runs on the connection's io thread when Store::InMemory says
  // the read will not wait for the disk (values up to inline-get-max-bytes), else as any other.
  kFastIfInMemory = 1u << 15,
  // Writes argv[2] under its one key: a call with no other argument runs on the connection's
  // io thread when Store::PutInMemory says the write will not wait for the disk (WAL off, room
  // in the write-behind, under the budget), else as any other.
  kFastIfPutInMemory = 1u << 16,
  // Runs at once inside MULTI, never queued: MULTI, EXEC, DISCARD, WATCH, QUIT, RESET (Redis's
  // list); every other command but a `no_multi` one is queued.
  kRunsInMulti = 1u << 17,
  // A subcommand's own flag: not fast, though its container is `fast`, so it runs on an engine
  // thread, never an io thread (CLIENT PAUSE waits for the writes running; MEMORY MALLOC-STATS
  // walks every allocator arena).
  kSlow = 1u << 18,
};

// The words a row's `flags` may hold, in the order COMMAND reports them. Reported words are
// Redis's COMMAND INFO flag names; the others steer Larder's dispatch only.
struct FlagWord {
  std::string_view word;
  CommandFlag flag;
  bool reported;
};
inline constexpr FlagWord kFlagWords[] = {
    {"write", kWrite, true},
    {"readonly", kReadonly, true},
    {"admin", kAdmin, true},
    {"no_auth", kNoAuth, true},
    {"loading", kLoading, true},
    {"stale", kStale, true},
    {"fast", kFast, true},
    {"no_multi", kNoMulti, true},
    {"pubsub", kPubSub, true},
    {"skip_slowlog", kSkipSlowlog, true},
    {"exclusive", kExclusive, false},
    {"locks_itself", kLocksItself, false},
    {"pubsub_context", kPubSubContext, false},
    {"may_replicate", kMayReplicate, false},
    {"moves_args", kMovesArgs, false},
    {"fast_if_in_memory", kFastIfInMemory, false},
    {"fast_if_put_in_memory", kFastIfPutInMemory, false},
    {"runs_in_multi", kRunsInMulti, false},
};

// Redis key positions: argv[first], argv[first + step], ... up to argv[last] (-1: the last
// argument). first 0 = no keys. A container command's keys belong to one subcommand: with
// `subcommand` set, a call has keys only when argv[1] names it (case-insensitive), and
// COMMAND INFO reports the command keyless, as Redis reports its containers (MEMORY USAGE).
// `flags`: Redis's key-spec flags of those keys, as COMMAND GETKEYSANDFLAGS reports them
// (kKeyFlagWords, space-separated); "<first key's> | <the others'>" where they differ (RENAME).
struct KeySpec {
  int first = 0, last = 0, step = 0;
  std::string_view subcommand = {};
  std::string_view flags = {};
};
inline constexpr KeySpec kNoKeys{};
inline constexpr KeySpec kOneKey{1, 1, 1};
inline constexpr KeySpec kEveryArgKey{1, -1, 1};    // every argument after the name
inline constexpr KeySpec kKeyValuePairs{1, -1, 2};  // key value [key value ...]

// `keys` with its keys' flags.
constexpr KeySpec WithFlags(KeySpec keys, std::string_view flags) {
  keys.flags = flags;
  return keys;
}

// Redis's key-spec flag words (COMMAND GETKEYSANDFLAGS spells them so).
inline constexpr std::string_view kKeyFlagWords[] = {"RO",     "RW",     "OW",     "RM",
                                                     "access", "update", "insert", "delete"};

// Calls visit(i) for the position i of each key argument of the call `argv` (the name at 0)
// under key positions `k`: COMMAND GETKEYS, the cluster's slot check, keyspace events' write
// order and the migrator all read keys this way.
template <typename Visit>
void ForEachKeyPosition(const KeySpec& k, std::span<const std::string> argv, Visit visit) {
  if (k.first == 0) return;
  if (!k.subcommand.empty() && (argv.size() < 2 || !common::EqualsNoCase(argv[1], k.subcommand))) {
    return;
  }
  const size_t argc = argv.size();
  const size_t last = k.last < 0 ? argc - 1 : static_cast<size_t>(k.last);
  for (size_t i = static_cast<size_t>(k.first); i <= last && i < argc;
       i += static_cast<size_t>(k.step)) {
    visit(i);
  }
}

// The flag words of a key of `k`: the first key's (`first`) or the others'.
inline std::vector<std::string_view> KeyFlagWords(const KeySpec& k, bool first) {
  const size_t bar = k.flags.find('|');
  std::string_view part = k.flags;
  if (bar != std::string_view::npos) part = first ? part.substr(0, bar) : part.substr(bar + 1);
  return common::SplitNonEmpty(part, ' ');
}

// One subcommand of a container command (CLIENT, CONFIG, COMMAND, OBJECT, MEMORY), declared
// beside its handler; commands/subcommands.h dispatches them and generates `<CMD> HELP`.
struct SubcommandRow {
  std::string_view name;  // lowercase, e.g. "setname"
  int arity;              // argc including the container and the subcommand, as in Redis
  Handler handler;
  std::string_view usage;  // "SETNAME <name>": the HELP line naming it
  std::string_view help;   // what it does; lines of a longer help separated by '\n'
  uint32_t flags = 0;      // CommandFlag bits of its own (kAdmin: hidden from MONITOR, as
                           // Redis hides CLIENT LIST but shows CLIENT SETNAME; kSlow)
};

// One command as its family declares it.
struct CommandRow {
  std::string_view name;   // lowercase
  int arity;               // argc including the name; negative = at least -arity
  std::string_view flags;  // words of kFlagWords, separated by spaces
  KeySpec keys;
  Handler handler;
  // A container command's subcommands: a call naming none of them, or with the wrong arity
  // for it, is refused before it runs or is queued by MULTI, as Redis's lookup refuses it.
  std::span<const SubcommandRow> subcommands = {};
  BeforeLock before_lock = nullptr;  // only with `exclusive`
};

// One command as the table holds it: a row with its flags parsed.
struct CommandSpec {
  uint32_t id;  // position in the command table (indexes per-command statistics)
  std::string_view name;
  int arity;
  uint32_t flags;
  KeySpec keys;
  Handler handler;
  std::span<const SubcommandRow> subcommands;
  BeforeLock before_lock;

  bool Has(CommandFlag f) const { return (flags & f) != 0; }
  // Whether dispatch runs it under the server lock: every command but `locks_itself` ones and
  // the `fast` ones that touch no key (neither `write` nor `readonly`), are not `admin`, publish
  // nothing (`may_replicate`) and are not Pub/Sub (a subscription taken in the middle of an
  // EXEC would hear part of its keyspace events): PING, ECHO, CLIENT (its row is not `admin`,
  // its KILL and PAUSE too), HELLO, AUTH, MULTI, COMMAND, ..., which a writer holding the lock
  // exclusively (MSET, EXEC) has no reason to hold up. A new `fast` command that reads the
  // keyspace must say `readonly`. WATCH is the exception: it only asks whether its keys exist,
  // and its registry orders that with every change (core/watched_keys.h).
  bool TakesServerLock() const {
    if (Has(kLocksItself)) return false;
    constexpr uint32_t kLocked = kWrite | kReadonly | kAdmin | kMayReplicate | kPubSub;
    return !Has(kFast) || (flags & kLocked) != 0;
  }
  // Whether dispatch takes the server lock shared for it (exclusively if `exclusive`).
  bool TakesServerLockShared() const { return TakesServerLock() && !Has(kExclusive); }
};

// Whether argc (the name included) satisfies `arity`.
inline bool ArityOk(int arity, size_t argc) {
  return arity >= 0 ? argc == static_cast<size_t>(arity) : argc >= static_cast<size_t>(-arity);
}

}  // namespace larder::server
