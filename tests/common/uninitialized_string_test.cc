// common/uninitialized_string.h: resizing without the zero-fill.
#include "common/uninitialized_string.h"

#include <gtest/gtest.h>

#include <string>

namespace larder::common {
namespace {

TEST(UninitializedStringTest, KeepsThePrefixAndSetsTheSize) {
  std::string s = "received";
  s.reserve(1 << 20);
  const char* data = s.data();
  ResizeUninitialized(&s, 1 << 20);
  EXPECT_EQ(s.size(), size_t{1} << 20);
  EXPECT_EQ(s.data(), data) << "grew within capacity: no reallocation";
  EXPECT_EQ(s.substr(0, 8), "received");
  s[(1 << 20) - 1] = 'z';  // the gained bytes are the caller's to write
  EXPECT_EQ(s.back(), 'z');
  ResizeUninitialized(&s, 3);
  EXPECT_EQ(s, "rec");
  EXPECT_EQ(s.c_str()[3], '\0');
}

TEST(UninitializedStringTest, GrowsPastCapacity) {
  std::string s = "abc";
  ResizeUninitialized(&s, 100000);
  ASSERT_EQ(s.size(), 100000u);
  EXPECT_EQ(s.substr(0, 3), "abc");
}

TEST(UninitializedStringTest, LeavesTheGainedBytesUnwritten) {
#if defined(__GLIBCXX__) && __GNUC__ >= 12
  EXPECT_TRUE(kResizeSkipsFill) << "this toolchain has resize_and_overwrite; the build lost it";
#endif
  if (!kResizeSkipsFill) GTEST_SKIP() << "resize() fallback: the bytes are zero-filled";
  std::string s(4096, 'x');
  ResizeUninitialized(&s, 0);
  ResizeUninitialized(&s, 4096);
  // Byte 0 held the terminator after the shrink; the rest were not written by the regrowth.
  EXPECT_EQ(s.find_first_not_of('x', 1), std::string::npos);
}

}  // namespace
}  // namespace larder::common
