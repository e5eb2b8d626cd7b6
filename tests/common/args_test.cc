// common::SplitArgs (Redis's sdssplitargs) and QuoteArg. The splitter's two users are tested
// through it too: config files in tests/server/config_test.cc, inline requests in
// tests/server/resp_test.cc.
#include "common/args.h"

#include <gtest/gtest.h>

namespace larder::common {
namespace {

using V = std::vector<std::string>;

TEST(SplitArgsTest, RedisQuoting) {
  EXPECT_EQ(SplitArgs("  set  \"a b\"\t'c d'  "), (V{"set", "a b", "c d"}));
  EXPECT_EQ(SplitArgs(R"("\x41\x7a\n\r\t\b\a\\\"\q")"), (V{"Az\n\r\t\b\a\\\"q"}));
  EXPECT_EQ(SplitArgs(R"("\x4g")"), (V{"x4g"}));  // not a hex escape: \x is x
  EXPECT_EQ(SplitArgs(R"('it\'s' 'a\nb')"), (V{"it's", R"(a\nb)"}));
  EXPECT_EQ(SplitArgs(R"(foo"bar baz" x)"), (V{"foobar baz", "x"}));
  EXPECT_EQ(SplitArgs(R"("" '')"), (V{"", ""}));
  EXPECT_EQ(SplitArgs(""), V{});
  EXPECT_EQ(SplitArgs(" \t\v\f\r\n"), V{});
}

TEST(SplitArgsTest, UnbalancedQuotesAreRefused) {
  for (const char* bad : {R"("a"b)", R"('a'b)", R"("abc)", R"('abc)", R"("abc\")"}) {
    EXPECT_EQ(SplitArgs(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(SplitArgs(std::string_view("\"a\0\"", 4)), std::nullopt);  // the NUL ends the line
}

// Redis ends an unquoted argument only at space, \t, \n, \r: \v and \f stay inside it, though
// they count as blanks between arguments and after a closing quote.
TEST(SplitArgsTest, BlanksAsRedisTreatsThem) {
  EXPECT_EQ(SplitArgs("a\vb c\fd"), (V{"a\vb", "c\fd"}));
  EXPECT_EQ(SplitArgs("\va \f\"b\"\vc"), (V{"a", "b", "c"}));
}

TEST(SplitArgsTest, NulEndsTheLine) {
  EXPECT_EQ(SplitArgs(std::string_view("a b\0c d", 7)), (V{"a", "b"}));
  EXPECT_EQ(SplitArgs(std::string_view("\0a", 2)), V{});
}

TEST(SplitArgsTest, AppendsToTheVector) {
  V out{"first"};
  ASSERT_TRUE(SplitArgs("second 'third one'", &out));
  EXPECT_EQ(out, (V{"first", "second", "third one"}));
}

TEST(QuoteArgTest, RoundTrips) {
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes += static_cast<char>(b);  // quoted as \x00 etc.
  for (std::string s :
       {std::string("plain"), std::string(""), std::string("a b"), std::string("it's"),
        std::string("q\"uote"), std::string("back\\slash"), std::string("#hash"), all_bytes}) {
    auto args = SplitArgs("x " + QuoteArg(s));
    ASSERT_TRUE(args.has_value()) << QuoteArg(s);
    EXPECT_EQ(*args, (V{"x", s}));
  }
  EXPECT_EQ(QuoteArg("plain"), "plain");
  EXPECT_EQ(QuoteArg(""), "\"\"");
  EXPECT_EQ(QuoteArg("a b\n\x01"), R"("a b\n\x01")");
}

}  // namespace
}  // namespace larder::common
