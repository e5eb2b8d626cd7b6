// RateSampler: INFO's instantaneous_* rates, and what CONFIG RESETSTAT does to them.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/server_stats.h"

namespace larder::server {
namespace {

constexpr int64_t kSecond = 1000;

TEST(RateSampler, AveragesOverTheLastWindowOfSamples) {
  RateSampler r;
  for (int64_t i = 0; i <= static_cast<int64_t>(RateSampler::kWindow); ++i) {
    EXPECT_EQ(r.PerSecond(), 0u) << "a rate before the window is full";
    r.Sample(i * kSecond, static_cast<uint64_t>(i) * 500);
  }
  EXPECT_EQ(r.PerSecond(), 500u);
  r.Sample(5 * kSecond, 2500 + 4000);  // one busy second in four
  EXPECT_EQ(r.PerSecond(), (500u * 3 + 4500u) / 4);
}

// Redis restarts its instantaneous metrics at CONFIG RESETSTAT; comparing a total counted since
// the reset with one from before it gave a rate of neither.
TEST(RateSampler, AResetRestartsTheWindow) {
  RateSampler r;
  for (int64_t i = 0; i < 5; ++i) r.Sample(i * kSecond, 100 + static_cast<uint64_t>(i));
  EXPECT_EQ(r.PerSecond(), 1u);
  r.Reset();
  EXPECT_EQ(r.PerSecond(), 0u);
  for (int64_t i = 0; i <= static_cast<int64_t>(RateSampler::kWindow); ++i) {
    EXPECT_EQ(r.PerSecond(), 0u) << "a rate from samples on both sides of the reset";
    r.Sample((5 + i) * kSecond, static_cast<uint64_t>(i) * 1000);
  }
  EXPECT_EQ(r.PerSecond(), 1000u);
}

}  // namespace
}  // namespace larder::server
