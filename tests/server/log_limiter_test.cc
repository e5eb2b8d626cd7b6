// LogLimiter: the first warning at once, then at most one per interval, with the count of the
// ones held back in between.
#include <gtest/gtest.h>

#include "log.h"

namespace larder::server {
namespace {

TEST(LogLimiterTest, OnePerIntervalWithTheCountHeldBack) {
  LogLimiter limiter(1000);
  uint64_t held_back = 99;
  EXPECT_TRUE(limiter.Due(5, &held_back));
  EXPECT_EQ(held_back, 0u);
  EXPECT_FALSE(limiter.Due(5));
  EXPECT_FALSE(limiter.Due(1004));
  EXPECT_TRUE(limiter.Due(1005, &held_back));
  EXPECT_EQ(held_back, 2u);
  EXPECT_FALSE(limiter.Due(1500));
  EXPECT_TRUE(limiter.Due(100000, &held_back));
  EXPECT_EQ(held_back, 1u);
}

TEST(LogLimiterTest, TheFirstIsDueWhateverTheClock) {
  LogLimiter limiter(60000);
  EXPECT_TRUE(limiter.Due(-5));
}

}  // namespace
}  // namespace larder::server
