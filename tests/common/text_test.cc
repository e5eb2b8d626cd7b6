// common/text.h: ASCII case, splitting, whole-string numbers.
#include "common/text.h"

#include <gtest/gtest.h>

namespace larder::common {
namespace {

using V = std::vector<std::string>;

TEST(TextTest, Split) {
  EXPECT_EQ(Split("a,,b,", ','), (V{"a", "", "b"}));
  EXPECT_EQ(Split("", ','), V{});
  EXPECT_EQ(Split(",", ','), V{""});
  EXPECT_EQ(Split("line1\nline2", '\n'), (V{"line1", "line2"}));
}

TEST(TextTest, SplitNonEmpty) {
  using W = std::vector<std::string_view>;
  EXPECT_EQ(SplitNonEmpty(" TLSv1.2  TLSv1.3 ", ' '), (W{"TLSv1.2", "TLSv1.3"}));
  EXPECT_EQ(SplitNonEmpty("", ' '), W{});
  EXPECT_EQ(SplitNonEmpty("   ", ' '), W{});
  EXPECT_EQ(SplitNonEmpty("a\n\nb\n", '\n'), (W{"a", "b"}));
}

TEST(TextTest, Case) {
  EXPECT_TRUE(EqualsNoCase("GeT", "get"));
  EXPECT_FALSE(EqualsNoCase("get", "gets"));
  EXPECT_EQ(ToLower("MiXeD-1\xC3"), "mixed-1\xC3");
  EXPECT_EQ(ToUpper("client|id"), "CLIENT|ID");
}

TEST(TextTest, ParseNumberTakesTheWholeString) {
  EXPECT_EQ(ParseNumber<int>("16383"), 16383);
  EXPECT_EQ(ParseNumber<int64_t>("-7"), -7);
  EXPECT_EQ(ParseNumber<int64_t>("755", 8), 0755);
  EXPECT_EQ(ParseNumber<double>("0.5"), 0.5);
  EXPECT_EQ(ParseNumber<int>(""), std::nullopt);
  EXPECT_EQ(ParseNumber<int>("12x"), std::nullopt);
  EXPECT_EQ(ParseNumber<int>(" 1"), std::nullopt);
  EXPECT_EQ(ParseNumber<int>("99999999999"), std::nullopt);
}

}  // namespace
}  // namespace larder::common
