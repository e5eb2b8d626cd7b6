// RequestParser: incremental, Redis-compatible parser of client requests (RESP multibulk and
// inline commands). Never throws; protocol violations are reported as State::kError with
// Redis's exact error text.
#pragma once

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace larder::resp {

// Bytes that big bulks hold reserved ahead of their bodies, shared by the parsers that are given
// the same pool (a server's connections). Thread-safe.
class ReserveAheadPool {
 public:
  // Takes n bytes if that leaves at most `limit` reserved.
  bool Take(uint64_t n, uint64_t limit) {
    uint64_t cur = reserved_.load(std::memory_order_relaxed);
    while (cur + n <= limit) {
      if (reserved_.compare_exchange_weak(cur, cur + n, std::memory_order_relaxed)) return true;
    }
    return false;
  }
  void Give(uint64_t n) { reserved_.fetch_sub(n, std::memory_order_relaxed); }
  uint64_t reserved() const { return reserved_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> reserved_{0};
};

// Protocol limits. Defaults are Redis 7's: proto-max-bulk-len, the multibulk count cap (INT_MAX;
// the arguments' memory is bounded by client-query-buffer-limit) and PROTO_INLINE_MAX_SIZE.
struct Limits {
  uint64_t max_bulk_len = 512ull << 20;
  uint64_t max_multibulk_len = INT_MAX;
  // Longest inline request, and longest multibulk/bulk header line, in bytes before its
  // terminator ('\n' for inline lines, including any '\r' before it; '\r' for header lines,
  // including the '*' or '$').
  size_t max_inline_len = 64 * 1024;
  // A client that has not authenticated while a password is required (Redis's authRequired())
  // may send a multibulk of at most kUnauthenticatedMaxArgs arguments, each at most
  // kUnauthenticatedMaxBulkLen bytes, as in Redis 7.0.15+: a connection that has not proven it
  // knows the password cannot make the server buffer more than a small command.
  bool unauthenticated = false;
  // Where a big bulk may reserve its declared length when its header arrives, so that its body
  // lands in its final buffer with no growth copy: while `reserve_ahead` holds at most
  // `reserve_ahead_limit` bytes for all the parsers sharing it (a bulk's bytes return when it
  // completes, or its command is dropped). Null, or a pool too full: the bulk earns its
  // storage as its bytes arrive (the rule below).
  ReserveAheadPool* reserve_ahead = nullptr;
  uint64_t reserve_ahead_limit = 0;
};
inline constexpr uint64_t kUnauthenticatedMaxArgs = 10;
inline constexpr uint64_t kUnauthenticatedMaxBulkLen = 16 * 1024;

// Parses one command at a time out of a byte stream.
//
// Accepted syntax, as Redis's processMultibulkBuffer/processInlineBuffer:
//  * A command whose first byte is '*' is multibulk: "*<n>\r\n" then n × "$<len>\r\n<len bytes>"
//    each followed by two bytes. As in Redis, a header line ends at the first '\r' and the byte
//    after it is skipped unchecked, as are the two bytes after a bulk body. Counts are decimal
//    integers without '+' or leading zeros. A count <= 0 yields no command (skipped).
//  * Any other command is an inline line ending at '\n' (an optional '\r' before it is
//    dropped), split by common::SplitArgs (Redis's sdssplitargs, the rules config files use
//    too). A line with no arguments is skipped.
//
// Allocation rule for bulk bodies (a client cannot make the server reserve memory it has not
// been sent, beyond what Limits::reserve_ahead allows all clients together):
//  * A bulk of fewer than kBigArg bytes is reserved in full when its header is parsed (only
//    one bulk is in progress at a time, so at most 16 KiB is unearned).
//  * A bulk whose body and trailer are already in the fed data is copied with one exactly-sized
//    allocation.
//  * Otherwise a big bulk reserves its declared length at once if Limits::reserve_ahead has
//    room for it (the pool's bytes come back when the bulk completes or is dropped).
//  * Otherwise a big bulk's storage is earned as body bytes arrive: it starts at
//    min(len, kBigArgInitialReserve); when full it grows to len if len <= 16 × its size, else
//    to 8 × its size. So the reservation never exceeds max(1 MiB, 16 × bytes received), a
//    "$1000000000" header with no body costs nothing, and any legal body lands in its final
//    buffer after at most 3 reallocations (1 → 8 → 64 → 512 MiB) that copy < 1.15 × len bytes.
//
// Typical use (one parser per connection):
//   for (;;) {
//     if (auto d = parser.DirectBuffer(); !d.empty()) { n = recv(fd, d.data(), d.size());
//                                                       parser.CommitDirect(n); continue; }
//     n = recv(fd, buf, ...); feed buf[0..n) until consumed, handling each kComplete.
//   }
// Redis's string2ll, used for protocol counts and for integer arguments alike: an optional
// '-', then "0" or a digit 1-9 followed by digits; no '+', no leading zeros, no "-0", no
// blanks; must fit in int64.
bool ParseInt64(std::string_view s, int64_t* out);

class RequestParser {
 public:
  enum class State { kNeedMore, kComplete, kError };

  // Bulks at least this long may be received through DirectBuffer().
  static constexpr size_t kBigArg = 16 * 1024;
  // First reservation for a big bulk whose body has not arrived yet.
  static constexpr size_t kBigArgInitialReserve = 1 << 20;

  explicit RequestParser(Limits limits = {});
  ~RequestParser();

  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  // The limits the next headers are checked against (a header already accepted stays so).
  void set_limits(const Limits& limits) { limits_ = limits; }
  const Limits& limits() const { return limits_; }

  // Consumes bytes from data[0..len) and sets *consumed to the number used. Returns
  // kComplete right after the last byte of one command (later pipelined bytes are left
  // unconsumed), kError at a protocol error (*consumed is where it was detected; every later
  // call returns kError and consumes nothing), else kNeedMore with *consumed == len. Calling
  // Feed after kComplete starts the next command (an implicit Reset()).
  State Feed(const char* data, size_t len, size_t* consumed);

  // While the body of a bulk of at least kBigArg bytes is being read: the next unfilled span
  // of that argument's own storage (already sized, never past the bulk's end), which the
  // caller may recv() into directly. Empty otherwise. It is non-empty only when the last
  // Feed() returned kNeedMore, i.e. consumed all it was given, so stream order is kept. The
  // span stays valid until the next call to any non-const member.
  std::span<char> DirectBuffer();
  // Declares that the first n bytes of the last DirectBuffer() span were written.
  // Precondition: n <= that span's size.
  void CommitDirect(size_t n);

  // The arguments. Complete after kComplete; the caller may modify or move from them (e.g.
  // move a value into a write batch) until the next Feed() or Reset().
  std::vector<std::string>& args() { return args_; }
  const std::vector<std::string>& args() const { return args_; }
  // After kError: Redis's error text without the leading '-' and trailing CRLF, e.g.
  // "ERR Protocol error: invalid bulk length". The text may hold the offending raw byte.
  const std::string& error() const { return error_; }
  // Whether the current (or last completed) command came as an inline line.
  bool inline_command() const { return inline_; }
  bool has_error() const { return phase_ == Phase::kError; }

  // Discards any partial or completed command and any error; ready for the next command.
  // Keeps the argument vector's capacity and a few small argument buffers for reuse.
  void Reset();

  // Payload bytes held for the current partial command: completed arguments, the body bytes
  // received so far of the argument being read, and any buffered partial line.
  size_t buffered_bytes() const;
  // Memory reserved for the current command: the argument vector, the arguments' and the
  // line buffer's capacities.
  size_t reserved_bytes() const;

 private:
  enum class Phase : uint8_t {
    kStart,            // before a command's first byte
    kMultibulkHeader,  // reading "*<n>\r?"
    kBulkHeader,       // reading "$<len>\r?"
    kBulkBody,         // reading a bulk's bytes
    kBulkTrailer,      // skipping the two bytes after a bulk's body
    kInline,           // reading an inline line
    kDone,             // a command is complete
    kError,
  };
  enum class LineStatus { kPartial, kReady, kTooLong };

  State Fail(std::string error);
  // The steps of Feed for one phase each: consume from *p, return kNeedMore to go on.
  State ParseMultibulkHeader(const char** p, const char* end);
  State ParseBulkHeader(const char** p, const char* end);
  State ParseInline(const char** p, const char* end);
  // Finds a line ending at `term` (plus one skipped byte if skip_after_term). On kReady,
  // *line holds the bytes before `term`; it may view line_, which the caller then clears.
  LineStatus ScanLine(const char** p, const char* end, char term, bool skip_after_term,
                      std::string_view* line);
  // Appends an empty argument (a recycled buffer unless `fresh`).
  std::string& NewArg(bool fresh);
  // Starts a bulk of `len` bytes whose body begins at *p.
  void StartBulk(uint64_t len, const char** p, const char* end);
  void ReadBody(const char** p, const char* end);
  // Enlarges a big bulk's storage by the allocation rule; keeps its received prefix.
  void GrowBigArg();
  // Ends the current bulk; returns true if it was the command's last.
  bool FinishBulk();
  // Gives the bytes the current bulk took from a reserve-ahead pool back to it.
  void GiveBackReservation();

  Limits limits_;
  Phase phase_ = Phase::kStart;
  bool inline_ = false;
  bool big_ = false;              // the bulk being read uses the big-bulk allocation rule
  bool line_terminated_ = false;  // line_ holds a full header line awaiting its skipped byte
  uint64_t args_left_ = 0;        // bulks still expected by the multibulk header
  uint64_t bulk_len_ = 0;         // declared length of the bulk being read
  uint64_t received_ = 0;         // body bytes of that bulk received so far
  uint8_t trailer_left_ = 0;      // bytes of the bulk trailer still to skip
  size_t args_bytes_ = 0;         // sum of completed bulk lengths
  ReserveAheadPool* reserved_from_ = nullptr;  // the pool the current bulk took bytes from
  uint64_t reserved_ahead_ = 0;                // and how many
  std::vector<std::string> args_;
  std::vector<std::string> pool_;  // cleared small buffers reused by NewArg()
  std::string line_;               // partial line carried across Feed() calls
  std::string error_;
};

}  // namespace larder::resp
