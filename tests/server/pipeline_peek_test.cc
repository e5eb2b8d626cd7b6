// PeekReadKeys: the keys of the GET/MGET requests at a pipeline's head, never consuming or
// misreading anything the real parser would see differently.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "resp/pipeline_peek.h"

namespace larder::resp {
namespace {

std::string Req(std::vector<std::string> args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

std::vector<std::string> Peek(const std::string& in, size_t max_keys, size_t* taken) {
  std::vector<std::string_view> keys;
  *taken = PeekReadKeys(in.data(), in.size(), max_keys, &keys);
  return {keys.begin(), keys.end()};
}

TEST(PipelinePeekTest, TakesGetAndMgetKeysInOrderUntilAnotherCommand) {
  const std::string head = Req({"GET", "a"}) + Req({"mget", "b", "c\r\nd"}) + Req({"get", ""});
  const std::string in = head + Req({"SET", "x", "y"}) + Req({"GET", "z"});
  size_t taken = 0;
  EXPECT_EQ(Peek(in, 100, &taken), (std::vector<std::string>{"a", "b", "c\r\nd", ""}));
  EXPECT_EQ(taken, head.size());
}

TEST(PipelinePeekTest, StopsAtIncompleteMalformedOrOddRequests) {
  size_t taken = 0;
  const std::string one = Req({"GET", "a"});
  const std::string full = one + Req({"GET", "bbbb"});
  for (size_t cut = one.size(); cut < full.size(); ++cut) {
    EXPECT_EQ(Peek(full.substr(0, cut), 100, &taken), (std::vector<std::string>{"a"})) << cut;
    EXPECT_EQ(taken, one.size());
  }
  EXPECT_TRUE(Peek(Req({"GET", "a", "extra"}), 100, &taken).empty());  // wrong arity: not ours
  EXPECT_TRUE(Peek(Req({"GETX", "a"}), 100, &taken).empty());
  EXPECT_TRUE(Peek("GET a\r\n", 100, &taken).empty());  // inline requests are left alone
  EXPECT_TRUE(Peek("*2\r\n$3\r\nGET\r\n$1\r\nab\r\n", 100, &taken).empty());  // bad length
  EXPECT_TRUE(Peek("*2\r\n$3\r\nGET\r\n$-1\r\n", 100, &taken).empty());
  EXPECT_TRUE(Peek("*2\r\n$3\r\nGET\r\n$99999999999999\r\n", 100, &taken).empty());
  EXPECT_EQ(taken, 0u);
}

TEST(PipelinePeekTest, StopsOnceItHasEnoughKeys) {
  std::string in;
  for (int i = 0; i < 10; ++i) in += Req({"GET", "k" + std::to_string(i)});
  size_t taken = 0;
  EXPECT_EQ(Peek(in, 3, &taken).size(), 3u);
  EXPECT_EQ(taken, 3 * Req({"GET", "k0"}).size());
}

}  // namespace
}  // namespace larder::resp
