// common::ParseBytes over the shared case table (byte_sizes.tsv, which larder-sizing's
// parser is tested against too) and common::FormatBytesHuman.
#include "common/units.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace larder::common {
namespace {

struct Case {
  std::string input;
  std::string want;  // decimal bytes, or "error"
};

std::vector<Case> LoadCases() {
  std::ifstream in(LARDER_BYTE_SIZES_TSV);
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '#') continue;
    size_t tab = line.rfind('\t');
    if (tab == std::string::npos) continue;
    cases.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return cases;
}

TEST(ParseBytesTest, SharedCaseTable) {
  std::vector<Case> cases = LoadCases();
  ASSERT_GT(cases.size(), 30u) << LARDER_BYTE_SIZES_TSV;
  for (const Case& c : cases) {
    std::optional<uint64_t> got = ParseBytes(c.input);
    if (c.want == "error") {
      EXPECT_EQ(got, std::nullopt) << "'" << c.input << "'";
    } else {
      ASSERT_TRUE(got.has_value()) << "'" << c.input << "'";
      EXPECT_EQ(std::to_string(*got), c.want) << "'" << c.input << "'";
    }
  }
}

TEST(FormatBytesHumanTest, LargestExactBinaryUnit) {
  EXPECT_EQ(FormatBytesHuman(0), "0");
  EXPECT_EQ(FormatBytesHuman(1000), "1000");
  EXPECT_EQ(FormatBytesHuman(1536), "1536");
  EXPECT_EQ(FormatBytesHuman(3072), "3kb");
  EXPECT_EQ(FormatBytesHuman(512ull << 20), "512mb");
  EXPECT_EQ(FormatBytesHuman(100ull << 30), "100gb");
  for (uint64_t v : {0ull, 1ull, 1024ull, 1ull << 40, 18446744073709551615ull}) {
    EXPECT_EQ(ParseBytes(FormatBytesHuman(v)), v);
  }
}

}  // namespace
}  // namespace larder::common
