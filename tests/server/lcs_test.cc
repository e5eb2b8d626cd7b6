// ComputeLcs against Redis 7's LCS: the documented examples, the edge cases, and random inputs
// whose expected LCS string and IDX WITHMATCHLEN matches were captured from redis-server 7.0.15.
// LcsTableBytes: the DP table's size, saturating.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "commands/lcs.h"

namespace larder::server {
namespace {

using namespace std::string_view_literals;

// [[a_start, a_end], [b_start, b_end], len] as IDX WITHMATCHLEN replies it.
using Match = std::vector<uint64_t>;

std::vector<Match> Matches(const LcsResult& r) {
  std::vector<Match> out;
  for (const LcsMatch& m : r.matches)
    out.push_back({m.a_start, m.a_end, m.b_start, m.b_end, m.len});
  return out;
}

TEST(Lcs, RedisDocumentedExample) {
  const LcsResult r = ComputeLcs("ohmytext", "mynewtext", true, true, 0);
  EXPECT_EQ(r.lcs, "mytext");
  EXPECT_EQ(r.len, 6u);
  EXPECT_EQ(Matches(r), (std::vector<Match>{{4, 7, 5, 8, 4}, {2, 3, 0, 1, 2}}));
}

TEST(Lcs, MinMatchLenKeepsLongEnoughRuns) {
  const LcsResult r = ComputeLcs("ohmytext", "mynewtext", false, true, 4);
  EXPECT_EQ(r.len, 6u);
  EXPECT_EQ(Matches(r), (std::vector<Match>{{4, 7, 5, 8, 4}}));
  EXPECT_EQ(Matches(ComputeLcs("ohmytext", "mynewtext", false, true, 2)).size(), 2u);
  // Filtering removes runs, never the length ("len" stays 6 in IDX MINMATCHLEN 100).
  const LcsResult none = ComputeLcs("ohmytext", "mynewtext", false, true, 100);
  EXPECT_TRUE(none.matches.empty());
  EXPECT_EQ(none.len, 6u);
}

TEST(Lcs, ComputesOnlyWhatIsAskedFor) {
  const LcsResult len_only = ComputeLcs("ohmytext", "mynewtext", false, false, 0);
  EXPECT_EQ(len_only.len, 6u);
  EXPECT_EQ(len_only.lcs, "");
  EXPECT_TRUE(len_only.matches.empty());

  const LcsResult string_only = ComputeLcs("ohmytext", "mynewtext", true, false, 0);
  EXPECT_EQ(string_only.lcs, "mytext");
  EXPECT_TRUE(string_only.matches.empty());

  const LcsResult matches_only = ComputeLcs("ohmytext", "mynewtext", false, true, 0);
  EXPECT_EQ(matches_only.lcs, "");
  EXPECT_EQ(matches_only.matches.size(), 2u);
}

TEST(Lcs, EmptyStrings) {
  for (auto [a, b] : {std::pair{""sv, ""sv}, {"abc"sv, ""sv}, {""sv, "abc"sv}}) {
    const LcsResult r = ComputeLcs(a, b, true, true, 0);
    EXPECT_EQ(r.lcs, "");
    EXPECT_EQ(r.len, 0u);
    EXPECT_TRUE(r.matches.empty());
  }
}

TEST(Lcs, IdenticalStringsAreOneRun) {
  const LcsResult r = ComputeLcs("abcdef", "abcdef", true, true, 0);
  EXPECT_EQ(r.lcs, "abcdef");
  EXPECT_EQ(r.len, 6u);
  EXPECT_EQ(Matches(r), (std::vector<Match>{{0, 5, 0, 5, 6}}));
}

TEST(Lcs, NoCommonByte) {
  const LcsResult r = ComputeLcs("abc", "xyz", true, true, 0);
  EXPECT_EQ(r.lcs, "");
  EXPECT_EQ(r.len, 0u);
  EXPECT_TRUE(r.matches.empty());
}

// Captured from redis-server 7.0.15: MSET ka <a> kb <b>, LCS ka kb, and
// LCS ka kb IDX MINMATCHLEN <min> WITHMATCHLEN.
struct RedisCase {
  std::string_view a, b;
  uint64_t min_match_len;
  std::string_view lcs;
  uint64_t len;
  std::vector<Match> matches;
};

const std::vector<RedisCase>& RedisCases() {
  static const std::vector<RedisCase> cases = {
      {"babaaabaaaab", "baaabaaaab", 0, "baaabaaaab", 10, {{2, 11, 0, 9, 10}}},
      {"aaacabbacacbccaaccca",
       "baccacacabccbbbc",
       0,
       "bacccaaccc",
       10,
       {{18, 18, 15, 15, 1},
        {16, 17, 10, 11, 2},
        {15, 15, 8, 8, 1},
        {13, 14, 5, 6, 2},
        {12, 12, 3, 3, 1},
        {9, 10, 1, 2, 2},
        {6, 6, 0, 0, 1}}},
      {"tggcccagtgtgaatcgcttaagg",
       "gttaagtaagtgtgatgcatacgcctttac",
       0,
       "ggagtgtgaatcgctta",
       17,
       {{21, 21, 28, 28, 1},
        {17, 19, 24, 26, 3},
        {15, 16, 21, 22, 2},
        {13, 14, 18, 19, 2},
        {6, 12, 8, 14, 7},
        {2, 2, 5, 5, 1},
        {1, 1, 0, 0, 1}}},
      {"hgiecgiegfgdcbccddahjceeacgifjjf",
       "cijahiggggbhgadbdhcbfjabajci",
       0,
       "higggbddhcfjj",
       13,
       {{30, 30, 25, 25, 1},
        {28, 29, 20, 21, 2},
        {25, 25, 18, 18, 1},
        {19, 19, 17, 17, 1},
        {17, 17, 16, 16, 1},
        {16, 16, 14, 14, 1},
        {13, 13, 10, 10, 1},
        {10, 10, 8, 8, 1},
        {8, 8, 7, 7, 1},
        {5, 5, 6, 6, 1},
        {2, 2, 5, 5, 1},
        {0, 0, 4, 4, 1}}},
      {"agaactcgggtaattttgacaggtcacgcagaggcgcgcc",
       "ctcctgaagtgcgtggacactcgctatgaatctctg",
       2,
       "ctctaatgcgtcacgcagaccg",
       22,
       {{30, 31, 27, 28, 2},
        {26, 28, 21, 23, 3},
        {24, 25, 17, 18, 2},
        {22, 23, 12, 13, 2},
        {16, 17, 9, 10, 2},
        {11, 12, 6, 7, 2},
        {4, 6, 0, 2, 3}}},
      {"xyyyxxxxx", "xyxyyxxxxxxyxxx", 3, "xyyyxxxxx", 9, {{6, 8, 12, 14, 3}}},
      // A tie between two equally long subsequences: Redis steps left (drops b's byte).
      {"ab", "ba", 0, "b", 1, {{1, 1, 0, 0, 1}}},
      // Arbitrary bytes, NUL and >= 0x80 included (octal escapes).
      {"\0\377a\0b\376"sv,
       "\377\0ab\0\376\377"sv,
       0,
       "\377\0b\376"sv,
       4,
       {{5, 5, 5, 5, 1}, {4, 4, 3, 3, 1}, {3, 3, 1, 1, 1}, {1, 1, 0, 0, 1}}},
  };
  return cases;
}

TEST(Lcs, EqualsRedisOnRandomInputs) {
  for (const RedisCase& c : RedisCases()) {
    SCOPED_TRACE(std::string(c.a) + " / " + std::string(c.b));
    const LcsResult r = ComputeLcs(c.a, c.b, true, true, c.min_match_len);
    EXPECT_EQ(r.lcs, c.lcs);
    EXPECT_EQ(r.len, c.len);
    EXPECT_EQ(Matches(r), c.matches);
  }
}

TEST(LcsTableBytes, IsTheUint32TableSize) {
  EXPECT_EQ(LcsTableBytes(0, 0), 4u);
  EXPECT_EQ(LcsTableBytes(8, 9), 9u * 10u * 4u);
  // Redis 7 with proto-max-bulk-len 1mb accepts 511 x 511 (exactly 1 MiB) and refuses 511 x 512.
  EXPECT_EQ(LcsTableBytes(511, 511), 1u << 20);
  EXPECT_EQ(LcsTableBytes(511, 512), 512u * 513u * 4u);
  // 2^31 * (2^31 - 1) * 4 = 2^64 - 2^33 is the largest product here that still fits.
  EXPECT_EQ(LcsTableBytes((1ull << 31) - 1, (1ull << 31) - 2), ~uint64_t{0} - (1ull << 33) + 1);
}

TEST(LcsTableBytes, SaturatesInsteadOfOverflowing) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  constexpr size_t kSizeMax = std::numeric_limits<size_t>::max();
  EXPECT_EQ(LcsTableBytes((1ull << 31) - 1, (1ull << 31) - 1), kMax);  // exactly 2^64
  EXPECT_EQ(LcsTableBytes(1ull << 32, 1ull << 32), kMax);
  EXPECT_EQ(LcsTableBytes(kLcsMaxInputLen, kLcsMaxInputLen), kMax);
  EXPECT_EQ(LcsTableBytes(kSizeMax, 0), kMax);
  EXPECT_EQ(LcsTableBytes(0, kSizeMax), kMax);
  EXPECT_EQ(LcsTableBytes(kSizeMax, kSizeMax), kMax);
  EXPECT_EQ(LcsTableBytes(kSizeMax - 1, 0), kMax);  // (2^64 - 1) cells * 4
}

}  // namespace
}  // namespace larder::server
