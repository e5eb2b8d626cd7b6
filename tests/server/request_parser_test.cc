// Tests for the RESP codec's RequestParser: framing, inline quoting, Redis error texts, bulk
// allocation.
#include <gtest/gtest.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pattern.h"
#include "resp/request_parser.h"

namespace larder::resp {
namespace {

using test::Pattern;
using State = RequestParser::State;
using Command = std::vector<std::string>;

// Serializes args as a RESP multibulk request.
std::string Multibulk(const Command& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

struct Fed {
  State state;
  size_t used;
};
Fed Feed(RequestParser& parser, std::string_view bytes) {
  Fed r{State::kError, 0};
  r.state = parser.Feed(bytes.data(), bytes.size(), &r.used);
  return r;
}

struct Outcome {
  std::vector<Command> commands;
  std::vector<bool> inline_flags;
  std::string error;  // empty unless the parser failed
};

// Feeds `input` in pieces whose sizes cycle through `pieces`, as a server loop would: each
// piece is fed until consumed, collecting every completed command. Checks that Feed consumes
// everything unless it completes a command or fails.
Outcome FeedInPieces(RequestParser& parser, std::string_view input,
                     const std::vector<size_t>& pieces) {
  Outcome out;
  size_t pos = 0;
  for (size_t k = 0; pos < input.size(); ++k) {
    const size_t size = std::min(pieces[k % pieces.size()], input.size() - pos);
    std::string_view chunk = input.substr(pos, size);
    pos += size;
    while (!chunk.empty()) {
      const Fed r = Feed(parser, chunk);
      EXPECT_LE(r.used, chunk.size());
      chunk.remove_prefix(r.used);
      if (r.state == State::kError) {
        out.error = parser.error();
        return out;
      }
      if (r.state == State::kComplete) {
        EXPECT_GT(r.used, 0u);
        out.commands.push_back(parser.args());
        out.inline_flags.push_back(parser.inline_command());
        parser.Reset();
      } else {
        EXPECT_TRUE(chunk.empty());
      }
    }
  }
  return out;
}

Outcome ParseWhole(std::string_view input, Limits limits = {}) {
  RequestParser parser(limits);
  return FeedInPieces(parser, input, {input.size() + 1});
}

std::string ErrorOf(std::string_view input, Limits limits = {}) {
  return ParseWhole(input, limits).error;
}

TEST(RequestParserTest, PipelinedCommandsComeOneAtATime) {
  const std::vector<Command> want = {{"SET", "key", "value"}, {"GET", "k"}, {"DEL", "k"}};
  const std::vector<std::string> parts = {Multibulk(want[0]), "GET k\r\n", Multibulk(want[2])};
  const std::string in = parts[0] + parts[1] + parts[2] + "*1\r\n$4\r\nPI";
  RequestParser parser;
  std::string_view rest = in;
  for (size_t i = 0; i < want.size(); ++i) {
    const Fed r = Feed(parser, rest);  // no Reset(): Feed after kComplete starts a new command
    ASSERT_EQ(r.state, State::kComplete);
    EXPECT_EQ(r.used, parts[i].size());
    EXPECT_EQ(parser.args(), want[i]);
    EXPECT_EQ(parser.inline_command(), i == 1);
    rest.remove_prefix(r.used);
  }
  EXPECT_EQ(Feed(parser, rest).used, rest.size());
  const Fed r = Feed(parser, "NG\r\n");
  ASSERT_EQ(r.state, State::kComplete);
  EXPECT_EQ(r.used, 4u);
  EXPECT_EQ(parser.args(), (Command{"PING"}));
}

TEST(RequestParserTest, SkipsEmptyNegativeAndBlankCommands) {
  const std::string in = "*0\r\n*-1\r\n\r\n \t \r\n\n*1\r\n$4\r\nPING\r\n";
  RequestParser parser;
  const Fed r = Feed(parser, in);
  ASSERT_EQ(r.state, State::kComplete);
  EXPECT_EQ(r.used, in.size());
  EXPECT_EQ(parser.args(), (Command{"PING"}));
  parser.Reset();
  EXPECT_EQ(Feed(parser, "*0\r\n").used, 4u);
  EXPECT_EQ(parser.buffered_bytes(), 0u);
  EXPECT_TRUE(parser.args().empty());
}

// A mix of commands exercising every parser phase.
std::string MixedStream(std::vector<Command>* expected, bool with_big) {
  std::string in;
  auto add = [&](const Command& c) {
    in += Multibulk(c);
    expected->push_back(c);
  };
  add({"SET", "key", std::string("va\r\nl\0ue", 8)});
  in += "GET \"a b\" 'c'\r\n";
  expected->push_back({"GET", "a b", "c"});
  add({"ECHO", ""});
  in += "*0\r\n\n";
  add({"MSET", "$3\r\n", "*1\r\n", "\r\n\r\n"});
  in += "PING\n";
  expected->push_back({"PING"});
  if (with_big) add({"SET", "big", Pattern(RequestParser::kBigArg + 3000, 7)});
  add({"X"});
  return in;
}

TEST(RequestParserTest, OneByteAtATimeMatchesWhole) {
  std::vector<Command> expected;
  const std::string in = MixedStream(&expected, /*with_big=*/true);
  const Outcome whole = ParseWhole(in);
  EXPECT_EQ(whole.commands, expected);
  RequestParser parser;
  const Outcome bytes = FeedInPieces(parser, in, {1});
  ASSERT_EQ(bytes.error, "");
  EXPECT_EQ(bytes.commands, expected);
  EXPECT_EQ(bytes.inline_flags, whole.inline_flags);
}

TEST(RequestParserTest, EverySplitPointMatchesWhole) {
  std::vector<Command> expected;
  const std::string in = MixedStream(&expected, /*with_big=*/false);
  for (size_t split = 0; split <= in.size(); ++split) {
    RequestParser parser;
    const Outcome out = FeedInPieces(parser, in, {split == 0 ? in.size() : split, in.size()});
    ASSERT_EQ(out.error, "") << "split " << split;
    ASSERT_EQ(out.commands, expected) << "split " << split;
  }
}

TEST(RequestParserTest, RandomCommandsRandomChunks) {
  std::mt19937 rng(12345);
  std::vector<Command> expected;
  std::string in;
  for (int i = 0; i < 300; ++i) {
    Command c(1 + rng() % 5);
    for (std::string& arg : c) {
      arg = Pattern(rng() % 8 == 0 ? rng() % 40000 : rng() % 64, static_cast<uint32_t>(rng()));
    }
    in += Multibulk(c);
    expected.push_back(std::move(c));
  }
  for (uint32_t seed = 0; seed < 4; ++seed) {
    std::mt19937 sizes_rng(seed);
    std::vector<size_t> pieces;
    for (int i = 0; i < 97; ++i) pieces.push_back(1 + sizes_rng() % (seed == 0 ? 16 : 70000));
    RequestParser parser;
    const Outcome out = FeedInPieces(parser, in, pieces);
    ASSERT_EQ(out.error, "");
    ASSERT_EQ(out.commands, expected) << "seed " << seed;
  }
}

TEST(RequestParserTest, BulksAreBinarySafe) {
  const Command c = {"SET", std::string("\0\r\n\0", 4), "\r\n$5\r\n*2\r\n", std::string(1, '\0')};
  const std::string in = Multibulk(c);
  EXPECT_EQ(ParseWhole(in).commands, std::vector<Command>{c});
  RequestParser parser;
  EXPECT_EQ(FeedInPieces(parser, in, {1}).commands, std::vector<Command>{c});
}

TEST(RequestParserTest, SkipsTerminatorBytesUncheckedLikeRedis) {
  // Redis ends a header line at '\r' and skips the next byte, and skips the two bytes after a
  // bulk body, without looking at them.
  const Outcome out = ParseWhole("*2\rx$3\r\nGETyy$1\r!kZZ");
  ASSERT_EQ(out.error, "");
  EXPECT_EQ(out.commands, (std::vector<Command>{{"GET", "k"}}));
}

TEST(RequestParserTest, BufferedBytesCountsHeldPayload) {
  RequestParser parser;
  ASSERT_EQ(Feed(parser, "*3\r\n$3\r\nSET\r\n$5\r\nab").state, State::kNeedMore);
  EXPECT_EQ(parser.buffered_bytes(), 3u + 2u);
  ASSERT_EQ(Feed(parser, "cde\r\n$1").state, State::kNeedMore);
  EXPECT_EQ(parser.buffered_bytes(), 3u + 5u + 2u);  // "$1" waits in the line buffer
  ASSERT_EQ(Feed(parser, "0\r\n0123456789\r\n").state, State::kComplete);
  EXPECT_EQ(parser.args(), (Command{"SET", "abcde", "0123456789"}));
  parser.Reset();
  EXPECT_EQ(parser.buffered_bytes(), 0u);
}

TEST(RequestParserTest, InlineSplittingAndQuoting) {
  const std::vector<std::pair<std::string, Command>> cases = {
      {"SET key value\r\n", {"SET", "key", "value"}},
      {"  SET\t key   value  \n", {"SET", "key", "value"}},
      {"SET \"a b\" 'c d'\r\n", {"SET", "a b", "c d"}},
      {"ECHO \"\\n\\r\\t\\b\\a\\\\\\\"\\x41\\x4a\\xfF\\xzz\\q\"\r\n",
       {"ECHO",
        "\n\r\t\b\a\\\"AJ\xff"
        "xzzq"}},
      {"ECHO 'it\\'s' 'a\\nb' '\"'\r\n", {"ECHO", "it's", "a\\nb", "\""}},
      {"ECHO \"\" ''\r\n", {"ECHO", "", ""}},
      {"ab\"cd ef\" x\r\n", {"abcd ef", "x"}},
      {"\vECHO a\vb\n", {"ECHO", "a\vb"}},
      {"a\rb\n", {"a", "b"}},
      {std::string("ECHO a\0b \"c\r\n", 13), {"ECHO", "a"}},
      {"ECHO \"x\"\t'y'\r\n", {"ECHO", "x", "y"}}};
  for (const auto& [line, args] : cases) {
    const Outcome out = ParseWhole(line);
    ASSERT_EQ(out.error, "") << line;
    EXPECT_EQ(out.commands, std::vector<Command>{args}) << line;
    EXPECT_EQ(out.inline_flags, std::vector<bool>{true});
    RequestParser parser;
    EXPECT_EQ(FeedInPieces(parser, line, {1}).commands, out.commands) << line;
  }
  RequestParser parser;  // the line ends only at '\n'
  EXPECT_EQ(Feed(parser, "PING\r").state, State::kNeedMore);
  const Fed r = Feed(parser, "\nX");
  EXPECT_EQ(r.state, State::kComplete);
  EXPECT_EQ(r.used, 1u);
  EXPECT_EQ(parser.args(), (Command{"PING"}));
}

TEST(RequestParserTest, RedisErrorTexts) {
  const std::string kMbulk = "ERR Protocol error: invalid multibulk length";
  const std::string kBulk = "ERR Protocol error: invalid bulk length";
  const std::string kQuotes = "ERR Protocol error: unbalanced quotes in request";
  for (const char* in : {"*abc\r\n", "*\r\n", "*01\r\n", "*+1\r\n", "* 1\r\n", "*1 \r\n", "*-0\r\n",
                         "*2147483648\r\n", "*9223372036854775808\r\n", "*-9223372036854775809\r\n",
                         "*99999999999999999999\r\n"}) {
    EXPECT_EQ(ErrorOf(in), kMbulk) << in;
  }
  for (const char* in :
       {"*1\r\n$-1\r\n", "*1\r\n$abc\r\n", "*1\r\n$\r\n", "*1\r\n$01\r\n", "*1\r\n$536870913\r\n",
        "*1\r\n$1000000000\r\n", "*2\r\n$1\r\na\r\n$1x\r\n"}) {
    EXPECT_EQ(ErrorOf(in), kBulk) << in;
  }
  for (const char* in : {"SET \"abc\r\n", "SET 'abc\n", "SET \"a\"b\r\n", "SET 'a'b\n",
                         "SET \"abc\\\"\r\n", "SET \"abc\\\r\n"}) {
    EXPECT_EQ(ErrorOf(in), kQuotes) << in;
  }
  // Valid limits; a negative count is skipped, as in Redis.
  for (const char* in :
       {"*1048577\r\n", "*2147483647\r\n", "*-9223372036854775808\r\n", "*1\r\n$536870912\r\n"}) {
    EXPECT_EQ(ErrorOf(in), "") << in;
  }
  EXPECT_EQ(ErrorOf("*1\r\nfoo\r\n"), "ERR Protocol error: expected '$', got 'f'");
  EXPECT_EQ(ErrorOf("*2\r\n$1\r\na\r\n:1\r\n"), "ERR Protocol error: expected '$', got ':'");
  EXPECT_EQ(ErrorOf("*1\r\n\r\n"), "ERR Protocol error: expected '$', got '\r'");
  Limits limits;
  limits.max_multibulk_len = 3;
  EXPECT_EQ(ErrorOf("*4\r\n", limits), kMbulk);
  EXPECT_EQ(ErrorOf("*3\r\n", limits), "");
  // Like Redis, a header's first byte is judged only once the whole line is in.
  RequestParser parser;
  EXPECT_EQ(Feed(parser, "*1\r\nx").state, State::kNeedMore);
  EXPECT_EQ(Feed(parser, "\r\n").state, State::kError);
  EXPECT_EQ(parser.error(), "ERR Protocol error: expected '$', got 'x'");
}

TEST(RequestParserTest, TooBigLines) {
  const std::string kMbulk = "ERR Protocol error: too big mbulk count string";
  const std::string kBulk = "ERR Protocol error: too big bulk count string";
  const std::string kInline = "ERR Protocol error: too big inline request";
  // 64 KiB without a terminator waits; one more byte fails.
  for (const auto& [prefix, text] : std::vector<std::pair<std::string, std::string>>{
           {"*" + std::string(65535, '1'), kMbulk},
           {"*1\r\n$" + std::string(65535, '1'), kBulk},
           {std::string(65536, 'a'), kInline}}) {
    RequestParser parser;
    EXPECT_EQ(Feed(parser, prefix).state, State::kNeedMore);
    EXPECT_EQ(Feed(parser, "1").state, State::kError);
    EXPECT_EQ(parser.error(), text);
  }
  // The cap applies before the '$' check, as in Redis, and whether or not the terminator
  // arrived in the same read. For inline lines it counts the bytes before '\n'.
  EXPECT_EQ(ErrorOf("*1\r\n" + std::string(70000, 'X')), kBulk);
  EXPECT_EQ(ErrorOf("*" + std::string(70000, '1') + "\r\n"), kMbulk);
  EXPECT_EQ(ParseWhole(std::string(65536, 'a') + "\n").commands,
            (std::vector<Command>{{std::string(65536, 'a')}}));
  EXPECT_EQ(ErrorOf(std::string(65535, 'a') + "\r\n"), "");
  EXPECT_EQ(ErrorOf(std::string(65536, 'a') + "\r\n"), kInline);
  Limits limits;
  limits.max_inline_len = 8;
  EXPECT_EQ(ErrorOf("PING 123\n", limits), "");
  EXPECT_EQ(ErrorOf("PING 1234\n", limits), kInline);
}

TEST(RequestParserTest, ErrorIsSticky) {
  RequestParser parser;
  ASSERT_EQ(Feed(parser, "*x\r\n").state, State::kError);
  EXPECT_TRUE(parser.has_error());
  const Fed r = Feed(parser, "PING\r\n");
  EXPECT_EQ(r.state, State::kError);
  EXPECT_EQ(r.used, 0u);
  EXPECT_EQ(parser.error(), "ERR Protocol error: invalid multibulk length");
  parser.Reset();
  EXPECT_EQ(Feed(parser, "PING\r\n").state, State::kComplete);
  EXPECT_EQ(parser.error(), "");
}

TEST(RequestParserTest, UnauthenticatedClientsSendSmallCommandsOnly) {
  Limits before_auth;
  before_auth.unauthenticated = true;
  const auto refused = [&](std::string_view bytes) {
    RequestParser parser(before_auth);
    return Feed(parser, bytes).state == State::kError ? parser.error() : std::string();
  };
  EXPECT_EQ(refused("*11\r\n"), "ERR Protocol error: unauthenticated multibulk length");
  EXPECT_EQ(refused("*1\r\n$16385\r\n"), "ERR Protocol error: unauthenticated bulk length");
  // The absolute limits come first, as in Redis.
  EXPECT_EQ(refused("*3000000000\r\n"), "ERR Protocol error: invalid multibulk length");
  EXPECT_EQ(refused("*1\r\n$600000000\r\n"), "ERR Protocol error: invalid bulk length");
  // At the limits, and inline requests (bounded by max_inline_len), are accepted.
  EXPECT_EQ(refused("*10\r\n$16384\r\n"), "");
  EXPECT_EQ(refused("AUTH " + std::string(20000, 'p') + "\r\n"), "");

  // Limits set between commands apply from the next header on.
  RequestParser parser(before_auth);
  const std::string big_set =
      "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$20000\r\n" + std::string(20000, 'v') + "\r\n";
  const std::string in = "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n" + big_set;
  const Fed auth = Feed(parser, in);
  ASSERT_EQ(auth.state, State::kComplete);
  parser.set_limits(Limits{});
  const Fed set = Feed(parser, std::string_view(in).substr(auth.used));
  ASSERT_EQ(set.state, State::kComplete);
  EXPECT_EQ(parser.args()[2].size(), 20000u);
}

TEST(RequestParserTest, HugeDeclaredBulkWithoutBodyAllocatesLittle) {
  constexpr size_t kInitial = RequestParser::kBigArgInitialReserve;
  Limits limits;
  limits.max_bulk_len = 4ull << 30;
  RequestParser parser(limits);
  // DirectBuffer() is offered only inside the body of a bulk of at least kBigArg bytes.
  EXPECT_TRUE(parser.DirectBuffer().empty());
  ASSERT_EQ(Feed(parser, "*1\r\n$16383\r\nabc").state, State::kNeedMore);
  EXPECT_TRUE(parser.DirectBuffer().empty());
  parser.Reset();
  ASSERT_EQ(Feed(parser, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000000\r\n").state, State::kNeedMore);
  EXPECT_LT(parser.reserved_bytes(), 4096u);
  EXPECT_EQ(parser.buffered_bytes(), 4u);

  ASSERT_EQ(Feed(parser, "0123456789").state, State::kNeedMore);
  EXPECT_LE(parser.reserved_bytes(), kInitial + 4096);
  EXPECT_EQ(parser.buffered_bytes(), 14u);
  EXPECT_EQ(parser.DirectBuffer().size(), kInitial - 10);
  EXPECT_EQ(parser.args().back().compare(0, 10, "0123456789"), 0);

  // Filling the first reservation earns 8x more, never the declared gigabyte.
  ASSERT_EQ(Feed(parser, std::string(kInitial - 10 + 1, 'x')).state, State::kNeedMore);
  EXPECT_LE(parser.reserved_bytes(), 8 * kInitial + 4096);
  EXPECT_GT(parser.reserved_bytes(), kInitial);
}

TEST(RequestParserTest, BigBulksReserveTheirLengthAheadWhileThePoolHasRoom) {
  constexpr size_t kInitial = RequestParser::kBigArgInitialReserve;
  constexpr size_t kLen = 4 << 20;
  ReserveAheadPool pool;
  Limits limits;
  limits.reserve_ahead = &pool;
  limits.reserve_ahead_limit = 10 << 20;
  const std::string head = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + std::to_string(kLen) + "\r\n";
  const std::string value = Pattern(kLen, 7);
  RequestParser a(limits);
  ASSERT_EQ(Feed(a, head + value.substr(0, 10)).state, State::kNeedMore);
  EXPECT_EQ(pool.reserved(), kLen);
  std::span<char> direct = a.DirectBuffer();
  ASSERT_EQ(direct.size(), kLen - 10) << "the whole body's buffer, reserved at the header";

  {
    // A second bulk finds the pool short (4 + 8 MiB > 10 MiB) and earns its storage.
    RequestParser b(limits);
    const std::string big_head =
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + std::to_string(8 << 20) + "\r\n";
    ASSERT_EQ(Feed(b, big_head + "x").state, State::kNeedMore);
    EXPECT_EQ(b.DirectBuffer().size(), kInitial - 1);
    EXPECT_EQ(pool.reserved(), kLen);
  }
  {
    // A parser dropped in the middle of a reserved bulk gives its bytes back.
    RequestParser c(limits);
    ASSERT_EQ(Feed(c, head + "y").state, State::kNeedMore);
    EXPECT_EQ(pool.reserved(), 2 * kLen);
  }
  EXPECT_EQ(pool.reserved(), kLen);

  // The body lands in that one buffer: no growth, no copy.
  const char* const buffer = direct.data() - 10;  // the 10 bytes fed with the header
  size_t at = 10;
  while (at < kLen) {
    direct = a.DirectBuffer();
    ASSERT_EQ(direct.data(), buffer + at);
    const size_t n = std::min<size_t>(direct.size(), 300000);
    std::memcpy(direct.data(), value.data() + at, n);
    a.CommitDirect(n);
    at += n;
  }
  ASSERT_EQ(Feed(a, "\r\n").state, State::kComplete);
  EXPECT_EQ(pool.reserved(), 0u) << "a completed bulk's bytes are earned";
  EXPECT_TRUE(a.args()[2] == value);
  EXPECT_EQ(a.args()[2].data(), buffer);

  // Reset drops a reserved bulk in progress and gives its bytes back.
  a.Reset();
  ASSERT_EQ(Feed(a, head).state, State::kNeedMore);
  ASSERT_EQ(Feed(a, "z").state, State::kNeedMore);
  EXPECT_EQ(pool.reserved(), kLen);
  a.Reset();
  EXPECT_EQ(pool.reserved(), 0u);
}

TEST(RequestParserTest, DirectBufferReceivesFortyMiB) {
  const size_t kLen = 40u << 20;
  const std::string value = Pattern(kLen, 99);
  const std::string head = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + std::to_string(kLen) + "\r\n";
  const std::string tail = "\r\n*1\r\n$4\r\nPING\r\n";
  RequestParser parser;
  // The header and the first 1000 body bytes arrive through Feed().
  const Fed first = Feed(parser, head + value.substr(0, 1000));
  ASSERT_EQ(first.state, State::kNeedMore);
  ASSERT_EQ(first.used, head.size() + 1000);

  size_t pos = 1000;
  std::set<const char*> buffers;
  const size_t kPieces[] = {65521, 7, 1, 131071, 4093};
  for (size_t k = 0; pos < kLen; ++k) {
    std::span<char> direct = parser.DirectBuffer();
    ASSERT_FALSE(direct.empty()) << pos;
    ASSERT_LE(direct.size(), kLen - pos);
    buffers.insert(parser.args().back().data());
    const size_t n = std::min(kPieces[k % 5], direct.size());
    std::memcpy(direct.data(), value.data() + pos, n);
    parser.CommitDirect(n);
    pos += n;
  }
  EXPECT_TRUE(parser.DirectBuffer().empty());
  EXPECT_LE(buffers.size(), 3u);  // 1 MiB -> 8 MiB -> 40 MiB
  EXPECT_EQ(parser.buffered_bytes(), 4 + kLen);

  const Fed r = Feed(parser, tail);
  ASSERT_EQ(r.state, State::kComplete);
  EXPECT_EQ(r.used, 2u);
  ASSERT_EQ(parser.args().size(), 3u);
  EXPECT_EQ(parser.args()[0] + parser.args()[1], "SETk");
  EXPECT_EQ(parser.args()[2].size(), kLen);
  EXPECT_LE(parser.args()[2].capacity(), kLen + 64);
  EXPECT_TRUE(parser.args()[2] == value);
  parser.Reset();
  ASSERT_EQ(Feed(parser, std::string_view(tail).substr(2)).state, State::kComplete);
  EXPECT_EQ(parser.args(), (Command{"PING"}));
}

TEST(RequestParserTest, BigBulkThroughFeed) {
  const Command c = {"SET", "k", Pattern(40u << 20, 5)};
  const std::string in = Multibulk(c) + "PING\r\n";
  RequestParser parser;
  const Outcome out = FeedInPieces(parser, in, {100003, 7, 65537, 1, 3000017});
  ASSERT_EQ(out.error, "");
  ASSERT_EQ(out.commands.size(), 2u);
  EXPECT_TRUE(out.commands[0] == c);
  EXPECT_EQ(out.commands[1], (Command{"PING"}));
  // A big bulk that is wholly in one Feed() is copied once into an exactly sized buffer.
  parser.Reset();
  ASSERT_EQ(Feed(parser, in).state, State::kComplete);
  EXPECT_TRUE(parser.args() == c);
  EXPECT_LE(parser.args()[2].capacity(), c[2].size() + 64);
}

}  // namespace
}  // namespace larder::resp
