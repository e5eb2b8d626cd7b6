// The command table's invariants (every family's rows, built as the server builds them at
// startup), the flag words, and the strict integer parser commands rely on.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "commands/command_table.h"
#include "commands/util.h"

namespace larder::server {
namespace {

void Nop(Ctx&) {}

// The server's own table builds: main.cc would refuse to start otherwise.
TEST(CommandTable, BuildsWithoutError) {
  EXPECT_EQ(CommandTableError(), std::nullopt);
  EXPECT_GT(CommandTable().size(), 60u);
}

TEST(CommandTable, RowsAreConsistent) {
  std::set<std::string> names;
  for (const CommandSpec& spec : CommandTable()) {
    EXPECT_TRUE(names.insert(std::string(spec.name)).second) << spec.name;
    EXPECT_EQ(ToLower(spec.name), spec.name);
    EXPECT_NE(spec.handler, nullptr) << spec.name;
    EXPECT_NE(spec.arity, 0) << spec.name;
    // A command that may block on the engine or takes the exclusive lock is not `fast`.
    if (spec.Has(kExclusive) || spec.Has(kLocksItself)) {
      EXPECT_FALSE(spec.Has(kFast)) << spec.name;
    }
    // Writes and reads are told apart for every command that touches keys.
    if (spec.keys.first != 0 && !spec.Has(kRunsInMulti)) {  // WATCH neither reads values nor writes
      EXPECT_NE(spec.Has(kWrite), spec.Has(kReadonly)) << spec.name;
    }
  }
}

TEST(CommandTable, MultiQueuesWhatRedisQueues) {
  // Redis 7 runs these at once inside MULTI and refuses SAVE and SHUTDOWN (COMMAND INFO's
  // no_multi); CLUSTERX, Kvrocks's, is refused too (it takes the lock itself). Every other
  // command is queued.
  const std::set<std::string> runs_at_once = {"multi", "exec", "discard", "watch", "quit", "reset"};
  const std::set<std::string> refused = {"save", "shutdown", "clusterx"};
  for (const CommandSpec& spec : CommandTable()) {
    const std::string name(spec.name);
    EXPECT_EQ(spec.Has(kRunsInMulti), runs_at_once.count(name) == 1) << name;
    EXPECT_EQ(spec.Has(kNoMulti), refused.count(name) == 1) << name;
  }
}

TEST(CommandTable, OnlyExecAndClusterxTakeTheLockThemselves) {
  for (const CommandSpec& spec : CommandTable()) {
    EXPECT_EQ(spec.Has(kLocksItself), spec.name == "exec" || spec.name == "clusterx") << spec.name;
  }
}

TEST(CommandTable, LookupIsCaseInsensitive) {
  EXPECT_EQ(FindCommand("GeT"), FindCommand("get"));
  ASSERT_NE(FindCommand("LARDER.PREFIX"), nullptr);
  EXPECT_EQ(FindCommand("nope"), nullptr);
  EXPECT_EQ(FindCommand(""), nullptr);
  EXPECT_EQ(FindCommand(std::string(100, 'g')), nullptr);
}

TEST(CommandTable, Arity) {
  const CommandSpec* get = FindCommand("get");
  EXPECT_TRUE(ArityOk(get->arity, 2));
  EXPECT_FALSE(ArityOk(get->arity, 1));
  EXPECT_FALSE(ArityOk(get->arity, 3));
  const CommandSpec* set = FindCommand("set");
  EXPECT_FALSE(ArityOk(set->arity, 2));
  EXPECT_TRUE(ArityOk(set->arity, 3));
  EXPECT_TRUE(ArityOk(set->arity, 9));
}

TEST(FlagWords, ParsedOnceFromWords) {
  uint32_t flags = 0;
  EXPECT_EQ(ParseFlagWords("write exclusive", &flags), std::nullopt);
  EXPECT_EQ(flags, kWrite | kExclusive);
  EXPECT_EQ(ParseFlagWords("", &flags), std::nullopt);
  EXPECT_EQ(flags, 0u);
  EXPECT_EQ(ParseFlagWords("readonly wirte", &flags), "unknown flag 'wirte'");
  EXPECT_EQ(FindCommand("incr")->flags, kWrite | kExclusive);
  EXPECT_EQ(FindCommand("hello")->flags, kNoAuth | kFast | kLoading | kStale);
  EXPECT_EQ(FindCommand("exec")->flags,
            kLoading | kStale | kSkipSlowlog | kRunsInMulti | kLocksItself);
}

// What the server checks at startup: a bad row stops the table from building.
TEST(FlagWords, ABadRowIsAStartupError) {
  auto build = [](std::initializer_list<CommandRow> rows) {
    std::vector<CommandRow> v(rows);
    CommandFamily families[] = {v};
    std::vector<CommandSpec> specs;
    return BuildCommandTable(families, &specs);
  };
  constexpr KeySpec key = WithFlags(kOneKey, "RO access");
  EXPECT_EQ(build({{"ok", 2, "readonly fast", key, Nop}}), std::nullopt);
  EXPECT_EQ(build({{"typo", 2, "readonly fsat", key, Nop}}), "command 'typo': unknown flag 'fsat'");
  EXPECT_EQ(build({{"both", 2, "write fast exclusive", key, Nop}}),
            "command 'both': both fast and exclusive");
  auto staged = [](Ctx&) { return true; };
  EXPECT_EQ(build({{"early", 2, "write exclusive", key, Nop, {}, staged}}), std::nullopt);
  EXPECT_EQ(build({{"early", 2, "write", key, Nop, {}, staged}}),
            "command 'early': before_lock without exclusive");
  EXPECT_EQ(build({{"twice", 1, "", kNoKeys, Nop}, {"twice", 1, "", kNoKeys, Nop}}),
            "command 'twice': declared twice");
  EXPECT_EQ(build({{"Upper", 1, "", kNoKeys, Nop}}), "command 'Upper': name not lowercase");
  EXPECT_EQ(build({{"none", 1, "", kNoKeys, nullptr}}), "command 'none': no handler");
  EXPECT_EQ(build({{"keys", 2, "", {1, 1, 0}, Nop}}), "command 'keys': bad key positions");
  EXPECT_EQ(build({{"bare", 2, "", kOneKey, Nop}}),
            "command 'bare': keys without key flags, or flags without keys");
  EXPECT_EQ(build({{"odd", 2, "", WithFlags(kOneKey, "RO axcess"), Nop}}),
            "command 'odd': unknown key flag 'axcess'");
  EXPECT_EQ(build({{"half", 3, "", {1, 2, 1, {}, "RW access |"}, Nop}}),
            "command 'half': a key without key flags");
  EXPECT_EQ(build({{"keyless", 1, "", WithFlags(kNoKeys, "RO"), Nop}}),
            "command 'keyless': keys without key flags, or flags without keys");
}

TEST(ParseInt64, StrictLikeRedis) {
  int64_t v = 0;
  EXPECT_TRUE(ParseInt64("0", &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(ParseInt64("-42", &v));
  EXPECT_EQ(v, -42);
  EXPECT_TRUE(ParseInt64("9223372036854775807", &v));
  EXPECT_EQ(v, INT64_MAX);
  EXPECT_TRUE(ParseInt64("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "01", "-0x", "1.5", "9223372036854775808",
                          "-9223372036854775809", "99999999999999999999999"}) {
    EXPECT_FALSE(ParseInt64(bad, &v)) << bad;
  }
}

}  // namespace
}  // namespace larder::server
