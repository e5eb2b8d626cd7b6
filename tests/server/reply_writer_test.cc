// Tests for the RESP codec's ReplyWriter and OutputQueue: byte-exact RESP2/RESP3 encodings,
// iovec draining.
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
#include "resp/reply_writer.h"

namespace larder::resp {
namespace {

using test::Pattern;

std::string Pending(const OutputQueue& q) {
  std::vector<iovec> iov(q.segments() + 1);
  const size_t n = q.FillIov(iov.data(), iov.size());
  std::string out;
  for (size_t i = 0; i < n; ++i) out.append(static_cast<char*>(iov[i].iov_base), iov[i].iov_len);
  EXPECT_EQ(out.size(), q.bytes());
  return out;
}

// Expects `write` to produce `resp2` under RESP2 and `resp3` under RESP3.
template <typename Fn>
void ExpectEncodes(Fn write, std::string_view resp2, std::string_view resp3) {
  for (int protocol : {2, 3}) {
    ReplyWriter w;
    EXPECT_TRUE(w.set_protocol(protocol));
    write(w);
    EXPECT_EQ(Pending(w.queue()), protocol == 2 ? resp2 : resp3) << "RESP" << protocol;
  }
}

TEST(ReplyWriterTest, EncodesEveryKindInResp2AndResp3) {
  using W = ReplyWriter;
  const double inf = std::numeric_limits<double>::infinity();
  ExpectEncodes([](W& w) { w.SimpleString("OK"); }, "+OK\r\n", "+OK\r\n");
  ExpectEncodes([](W& w) { w.SimpleString("a\r\nb"); }, "+a  b\r\n", "+a  b\r\n");
  ExpectEncodes([](W& w) { w.Error("ERR x\r\ny\n"); }, "-ERR x  y \r\n", "-ERR x  y \r\n");
  ExpectEncodes([](W& w) { w.Integer(-42); }, ":-42\r\n", ":-42\r\n");
  ExpectEncodes([](W& w) { w.Integer(INT64_MIN); }, ":-9223372036854775808\r\n",
                ":-9223372036854775808\r\n");
  ExpectEncodes([](W& w) { w.Double(1.5); }, "$3\r\n1.5\r\n", ",1.5\r\n");
  ExpectEncodes([](W& w) { w.Double(0.1); }, "$19\r\n0.10000000000000001\r\n",
                ",0.10000000000000001\r\n");
  ExpectEncodes([](W& w) { w.Double(3); }, "$1\r\n3\r\n", ",3\r\n");
  ExpectEncodes([](W& w) { w.Double(1e21); }, "$5\r\n1e+21\r\n", ",1e+21\r\n");
  ExpectEncodes([](W& w) { w.Double(-0.0); }, "$2\r\n-0\r\n", ",-0\r\n");
  ExpectEncodes([inf](W& w) { w.Double(inf); }, "$3\r\ninf\r\n", ",inf\r\n");
  ExpectEncodes([inf](W& w) { w.Double(-inf); }, "$4\r\n-inf\r\n", ",-inf\r\n");
  ExpectEncodes([](W& w) { w.Double(std::nan("")); }, "$3\r\nnan\r\n", ",nan\r\n");
  ExpectEncodes([](W& w) { w.BulkString("a\r\nb"); }, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n");
  ExpectEncodes([](W& w) { w.BulkString(""); }, "$0\r\n\r\n", "$0\r\n\r\n");
  ExpectEncodes([](W& w) { w.BulkMove("xyz"); }, "$3\r\nxyz\r\n", "$3\r\nxyz\r\n");
  ExpectEncodes([](W& w) { w.Null(); }, "$-1\r\n", "_\r\n");
  ExpectEncodes([](W& w) { w.NullArray(); }, "*-1\r\n", "_\r\n");
  ExpectEncodes([](W& w) { w.Boolean(true); }, ":1\r\n", "#t\r\n");
  ExpectEncodes([](W& w) { w.Boolean(false); }, ":0\r\n", "#f\r\n");
  ExpectEncodes([](W& w) { w.ArrayHeader(3); }, "*3\r\n", "*3\r\n");
  ExpectEncodes([](W& w) { w.ArrayHeader(0); }, "*0\r\n", "*0\r\n");
  ExpectEncodes([](W& w) { w.MapHeader(2); }, "*4\r\n", "%2\r\n");
  ExpectEncodes([](W& w) { w.SetHeader(5); }, "*5\r\n", "~5\r\n");
  ExpectEncodes([](W& w) { w.Verbatim("txt", "hello"); }, "$5\r\nhello\r\n", "=9\r\ntxt:hello\r\n");
  ExpectEncodes([](W& w) { w.Verbatim("mkd", "# a\r\n"); }, "$5\r\n# a\r\n\r\n",
                "=9\r\nmkd:# a\r\n\r\n");
  ExpectEncodes([](W& w) { w.Verbatim("markdown", "x"); }, "$1\r\nx\r\n", "=5\r\ntxt:x\r\n");
  ExpectEncodes([](W& w) { w.Raw("+PONG\r\n"); }, "+PONG\r\n", "+PONG\r\n");
}

TEST(ReplyWriterTest, ProtocolSelection) {
  ReplyWriter w;
  EXPECT_EQ(w.protocol(), 2);
  EXPECT_FALSE(w.set_protocol(4));
  EXPECT_TRUE(w.set_protocol(3));
  EXPECT_FALSE(w.set_protocol(1));
  w.Null();
  EXPECT_EQ(w.protocol(), 3);
  EXPECT_TRUE(w.set_protocol(2));
  w.Null();
  EXPECT_EQ(Pending(w.queue()), "_\r\n$-1\r\n");
}

TEST(ReplyWriterTest, LargeCopiedRepliesAreExact) {
  const std::string value = Pattern(100000, 1);
  const std::string text(20000, 'e');
  ReplyWriter w;
  w.set_protocol(3);
  w.SimpleString("a");
  w.BulkString(value);
  w.Error(text);
  w.Verbatim("txt", value);
  EXPECT_EQ(Pending(w.queue()),
            "+a\r\n$100000\r\n" + value + "\r\n-" + text + "\r\n=100004\r\ntxt:" + value + "\r\n");
}

// A keepalive whose release is observable.
std::shared_ptr<std::string> Tracked(std::string bytes, int* released) {
  return std::shared_ptr<std::string>(new std::string(std::move(bytes)),
                                      [released](std::string* s) {
                                        ++*released;
                                        delete s;
                                      });
}

TEST(ReplyWriterTest, BulkExternalIsZeroCopyAndReleasedAfterPartialWrites) {
  int released = 0;
  ReplyWriter w;
  // Sends `v` as an external bulk whose keepalive counts its release; returns its bytes.
  auto send = [&](const std::string& v) {
    auto buf = Tracked(v, &released);
    w.BulkExternal(buf->data(), buf->size(), buf);
    return buf->data();
  };
  send("hello");  // small external values are copied; the keepalive goes at once
  EXPECT_EQ(released, 1);
  const std::string value = Pattern(ReplyWriter::kMinExternal + 12345, 2);
  const char* external = send(value);
  w.Integer(7);
  const std::string expected =
      "$5\r\nhello\r\n$" + std::to_string(value.size()) + "\r\n" + value + "\r\n:7\r\n";
  OutputQueue& q = w.queue();
  EXPECT_EQ(Pending(q), expected);  // also checks bytes()
  iovec iov[8];
  ASSERT_EQ(q.FillIov(iov, 8), 3u);  // owned block, external value, owned block
  EXPECT_EQ(iov[1].iov_base, external);
  EXPECT_EQ(iov[1].iov_len, value.size());
  EXPECT_EQ(q.FillIov(iov, 1), 1u);
  EXPECT_EQ(q.FillIov(iov, 0), 0u);

  // Drain with partial writes of odd sizes; the keepalive goes exactly when its last byte does.
  const size_t external_end = expected.size() - std::string("\r\n:7\r\n").size();
  size_t done = 0;
  const size_t kSteps[] = {3, 1, 4093, 7, 65521};
  for (size_t k = 0; done < expected.size(); ++k) {
    const size_t step = std::min(kSteps[k % 5], expected.size() - done);
    q.Consume(step);
    done += step;
    EXPECT_EQ(released, done >= external_end ? 2 : 1) << done;
    ASSERT_EQ(Pending(q), expected.substr(done)) << done;
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.FillIov(iov, 8), 0u);
  w.SimpleString("again");  // reusable once drained
  EXPECT_EQ(Pending(q), "+again\r\n");

  send(value);  // Clear() releases pending keepalives too
  q.Consume(3);
  EXPECT_EQ(released, 2);
  q.Clear();
  EXPECT_EQ(released, 3);
  EXPECT_TRUE(q.empty());
}

// A transport that takes at most `room` bytes per Flush, as a full socket buffer would.
class PartialFlusher final : public ReplyWriter::Flusher {
 public:
  explicit PartialFlusher(size_t room) : room_(room) {}
  void Flush(OutputQueue& q) override {
    const std::string pending = Pending(q);
    const size_t n = std::min(room_, pending.size());
    sent.append(pending, 0, n);
    q.Consume(n);
  }
  std::string sent;

 private:
  const size_t room_;
};

TEST(ReplyWriterTest, StreamedBulkIsFlushedAsItIsProduced) {
  const std::string value = Pattern(3 * ReplyWriter::kMinExternal + 5, 6);
  const std::string piece1 = value.substr(0, 40000), piece2 = value.substr(40000);
  ReplyWriter w;
  EXPECT_FALSE(w.can_flush());
  w.Flush();  // no flusher: nothing leaves the queue
  w.Integer(1);
  EXPECT_EQ(Pending(w.queue()), ":1\r\n");
  PartialFlusher transport(30000);
  w.set_flusher(&transport);
  EXPECT_TRUE(w.can_flush());
  w.BulkBegin(value.size());
  w.BulkPart(piece1.data(), piece1.size(), nullptr);
  w.Flush();  // the earlier reply, the header and what fits of the first piece
  const std::string all = ":1\r\n$" + std::to_string(value.size()) + "\r\n" + value + "\r\n";
  EXPECT_EQ(transport.sent, all.substr(0, 30000));
  w.BulkPart(piece2.data(), piece2.size(), nullptr);
  w.BulkEnd();
  EXPECT_EQ(transport.sent + Pending(w.queue()), all);
  EXPECT_FALSE(w.abandoned());
  w.AbandonReply();
  EXPECT_TRUE(w.abandoned());
  // Nothing more reaches the transport: it would read as the abandoned element's bytes.
  EXPECT_FALSE(w.can_flush());
  const size_t sent = transport.sent.size();
  w.Integer(2);
  w.Flush();
  EXPECT_EQ(transport.sent.size(), sent);
}

TEST(ReplyWriterTest, BulkMoveReferencesTheMovedBuffer) {
  std::string value = Pattern(1 << 20, 4);
  const std::string copy = value;
  const char* data = value.data();
  ReplyWriter w;
  w.BulkMove(std::move(value));
  iovec iov[4];
  ASSERT_EQ(w.queue().FillIov(iov, 4), 3u);
  EXPECT_EQ(iov[1].iov_base, data);
  EXPECT_EQ(Pending(w.queue()), "$1048576\r\n" + copy + "\r\n");
}

TEST(ReplyWriterTest, DroppingQueuesOnlyPushesAndKeepsNothingElse) {
  ReplyWriter w;
  w.SimpleString("before");
  w.set_dropping(true);
  auto value = std::make_shared<std::string>(1 << 20, 'v');
  w.BulkExternal(value->data(), value->size(), value);
  EXPECT_EQ(value.use_count(), 1);  // released at once, not held until the command ends
  w.Error("ERR dropped");
  {
    ReplyWriter::PushScope push(w);
    w.PushHeader(1);
    w.BulkString("pushed");
  }
  w.Integer(7);
  w.BulkString(std::string(3 * OutputQueue::kBlockSize, 'x'));
  EXPECT_EQ(Pending(w.queue()), "+before\r\n*1\r\n$6\r\npushed\r\n");
  EXPECT_EQ(w.errors(), 1u);  // counted, as Redis counts an error it does not send
  w.set_dropping(false);
  w.Integer(8);
  EXPECT_EQ(Pending(w.queue()), "+before\r\n*1\r\n$6\r\npushed\r\n:8\r\n");
}

TEST(OutputQueueTest, CoalescesAndDrainsInPieces) {
  ReplyWriter w;
  OutputQueue& q = w.queue();
  std::string expected;
  size_t segments_at_1000 = 0;
  for (int i = 0; i < 10000; ++i) {
    w.SimpleString(std::to_string(i));
    expected += "+" + std::to_string(i) + "\r\n";
    segments_at_1000 = i == 999 ? q.segments() : segments_at_1000;
  }
  EXPECT_EQ(segments_at_1000, 1u);  // 5890 bytes
  EXPECT_LE(q.segments(), (expected.size() + 16383) / 16384);
  q.Append(std::string(40000, 'z'));
  expected += std::string(40000, 'z');
  size_t done = 0;
  for (size_t step = 1; done < expected.size(); step = step * 3 + 1) {
    const size_t n = std::min(step, expected.size() - done);
    q.Consume(n);
    done += n;
    ASSERT_EQ(Pending(q), expected.substr(done));
  }
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.segments(), 0u);
  q.Append("x");
  EXPECT_EQ(Pending(q), "x");
}

// CopyOut (what a TLS connection sends): memory and file segments in order, from the consumed
// point, up to the room given; a file shorter than its segment is an error, never fewer bytes.
TEST(OutputQueueTest, CopyOutReadsMemoryAndFileSegmentsInOrder) {
  char path[] = "/tmp/larder_copyout_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  const std::string file_bytes = "0123456789abcdefghij";
  ASSERT_EQ(::pwrite(fd, file_bytes.data(), file_bytes.size(), 0), 20);
  ReplyWriter w;
  w.SimpleString("OK");
  w.BulkFile(fd, 5, 10, nullptr);
  w.SimpleString("end");
  const std::string expected = "+OK\r\n$10\r\n" + file_bytes.substr(5, 10) + "\r\n+end\r\n";
  OutputQueue& q = w.queue();
  std::string out(64, '\0');
  ASSERT_EQ(q.CopyOut(out.data(), out.size()), static_cast<ssize_t>(expected.size()));
  EXPECT_EQ(out.substr(0, expected.size()), expected);
  for (size_t consumed = 0; consumed < expected.size(); ++consumed) {
    const size_t room = 7;
    std::string part(room, '\0');
    const ssize_t n = q.CopyOut(part.data(), room);
    ASSERT_EQ(n, static_cast<ssize_t>(std::min(room, expected.size() - consumed)));
    EXPECT_EQ(part.substr(0, static_cast<size_t>(n)), expected.substr(consumed, room));
    q.Consume(1);
  }
  EXPECT_TRUE(q.empty());
  w.BulkFile(fd, 15, 10, nullptr);  // 5 bytes past the end of the file
  EXPECT_EQ(q.CopyOut(out.data(), out.size()), -1);
  EXPECT_EQ(errno, EIO);
  ::close(fd);
}

}  // namespace
}  // namespace larder::resp
