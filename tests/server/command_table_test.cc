// The command table's invariants and the strict integer parser commands rely on.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "commands/command_table.h"
#include "commands/util.h"

namespace larder::server {
namespace {

TEST(CommandTable, NamesUniqueLowercaseWithHandlers) {
  std::set<std::string> names;
  for (const CommandSpec& spec : CommandTable()) {
    EXPECT_TRUE(names.insert(std::string(spec.name)).second) << spec.name;
    for (char c : spec.name) EXPECT_FALSE(c >= 'A' && c <= 'Z') << spec.name;
    EXPECT_NE(spec.handler, nullptr) << spec.name;
    EXPECT_NE(spec.arity, 0) << spec.name;
    if (spec.first_key == 0) {
      EXPECT_EQ(spec.last_key, 0) << spec.name;
    } else {
      EXPECT_GT(spec.step, 0) << spec.name;
    }
    // A command that may block on the engine must not be marked fast.
    if (spec.flags & kRmw) {
      EXPECT_FALSE(spec.flags & kFast) << spec.name;
    }
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
  EXPECT_TRUE(ArityOk(*get, 2));
  EXPECT_FALSE(ArityOk(*get, 1));
  EXPECT_FALSE(ArityOk(*get, 3));
  const CommandSpec* set = FindCommand("set");
  EXPECT_FALSE(ArityOk(*set, 2));
  EXPECT_TRUE(ArityOk(*set, 3));
  EXPECT_TRUE(ArityOk(*set, 9));
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
