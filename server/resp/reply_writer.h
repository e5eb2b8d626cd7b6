// OutputQueue and ReplyWriter: RESP2/RESP3 reply encoding into a scatter-gather queue that
// coalesces small replies and references large values without copying them.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace larder::resp {

// Bytes waiting to be written to a socket, in order: owned blocks (small writes are packed
// into kBlockSize blocks, so many replies become few iovecs), external segments (bytes owned
// elsewhere, kept alive by a shared_ptr until written) and file segments (a range of a file,
// sent with sendfile(2): the kernel hands page-cache pages to the socket, no copy). Not
// thread-safe.
class OutputQueue {
 public:
  static constexpr size_t kBlockSize = 16 * 1024;

  OutputQueue() = default;
  OutputQueue(const OutputQueue&) = delete;
  OutputQueue& operator=(const OutputQueue&) = delete;
  OutputQueue(OutputQueue&&) = default;
  OutputQueue& operator=(OutputQueue&&) = default;
  // A queue that keeps nothing: every append is dropped at once, its keepalive released (the
  // replies CLIENT REPLY drops).
  static OutputQueue Discarding();

  // Appends a copy of `bytes`.
  void Append(std::string_view bytes);
  // Returns space for n contiguous bytes at the tail (in a new block if the tail lacks room);
  // CommitAppend(k), k <= n, must follow before any other call to publish the first k.
  char* PrepareAppend(size_t n);
  void CommitAppend(size_t n);
  // Appends p[0..n) by reference. `keepalive` must keep those bytes valid and unchanged; it
  // is released once they are consumed (or the queue is cleared or destroyed).
  void AppendExternal(const char* p, size_t n, std::shared_ptr<void> keepalive);
  // Appends [offset, offset + n) of file `fd`, which `keepalive` keeps open and unchanged.
  void AppendFile(int fd, uint64_t offset, size_t n, std::shared_ptr<const void> keepalive);

  // Fills iov[0..max) with the pending bytes in order, up to the first file segment; returns
  // the number of entries used (0 if empty(), max == 0, or a file segment comes first).
  // Entries stay valid until the next Consume() or Clear(); appending meanwhile is allowed
  // (it only adds bytes after them).
  size_t FillIov(struct iovec* iov, size_t max) const;
  // Copies the first min(max, bytes()) pending bytes to dst without consuming them, reading
  // file segments with pread (for a transport that cannot send from files, such as TLS).
  // Returns the count copied, or -1 with errno set if a file read fails.
  ssize_t CopyOut(char* dst, size_t max) const;
  // If a file segment comes first, its remaining range; otherwise false.
  bool FrontFile(int* fd, uint64_t* offset, size_t* n) const;
  // Whether any file segment is pending.
  bool has_files() const { return files_ > 0; }
  // Marks the first n pending bytes as written (n <= bytes()). Frees finished blocks and
  // releases the keepalives of finished external segments.
  void Consume(size_t n);
  // Drops everything pending.
  void Clear();
  // Frees the cached spare block (e.g. when the connection goes idle).
  void ReleaseSpare() { spare_.reset(); }

  size_t bytes() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }
  size_t segments() const { return segments_.size(); }

 private:
  struct Segment {
    const char* data = nullptr;
    size_t size = 0;                // bytes in the segment
    size_t capacity = 0;            // owned blocks: usable bytes; external segments: == size
    std::unique_ptr<char[]> block;  // owned storage, null for external segments
    std::shared_ptr<const void> keepalive;  // external and file segments
    int fd = -1;                            // file segments: data is null, bytes from here
    uint64_t file_offset = 0;
  };

  // Appends an owned block with room for at least n bytes.
  Segment& NewBlock(size_t n);
  // Room left in the tail block, 0 if the tail is external or absent.
  size_t TailRoom() const;

  std::deque<Segment> segments_;
  size_t front_offset_ = 0;        // bytes of segments_.front() already consumed
  size_t bytes_ = 0;               // pending bytes
  size_t files_ = 0;               // file segments pending
  std::unique_ptr<char[]> spare_;  // one finished kBlockSize block, reused by NewBlock()
  bool discards_ = false;          // Discarding()
  std::string scratch_;            // while discarding, PrepareAppend's room
};

// Told of every error reply a ReplyWriter writes (the server counts them by code).
class ErrorReplyListener {
 public:
  // `text` excludes the '-' and CRLF.
  virtual void OnErrorReply(std::string_view text) = 0;

 protected:
  ~ErrorReplyListener() = default;
};

// Encodes replies in the connection's protocol version (RESP2 unless set_protocol(3)).
// Text arguments of Error/SimpleString have any CR or LF replaced by a space, so a reply can
// never break framing. Each call appends exactly one complete element (or header).
class ReplyWriter {
 public:
  // External values shorter than this are copied rather than referenced.
  static constexpr size_t kMinExternal = 16 * 1024;

  ReplyWriter() = default;

  // Selects RESP2 or RESP3; returns false (and changes nothing) for any other version.
  bool set_protocol(int version);
  int protocol() const { return resp3_ ? 3 : 2; }

  OutputQueue& queue() { return queue_; }
  const OutputQueue& queue() const { return queue_; }

  void SimpleString(std::string_view text);  // +text
  void Error(std::string_view text);         // -text; `text` excludes the '-' and CRLF
  // Error replies written so far (command statistics tell failed calls by it).
  uint64_t errors() const { return errors_; }
  // Tells `listener` (may be null; must outlive the writer) of every later error reply.
  void set_error_listener(ErrorReplyListener* listener) { error_listener_ = listener; }
  void Integer(int64_t value);  // :value
  // RESP3 ",<repr>"; RESP2 a bulk string. <repr> is printf("%.17g"), or inf, -inf, nan.
  void Double(double value);
  void BulkString(std::string_view bytes);  // $len bytes (copied)
  // Same encoding as BulkString, taking ownership of the bytes (no copy when large).
  void BulkMove(std::string bytes);
  // Same encoding as BulkString; p[0..n) is referenced without copying when n >=
  // kMinExternal, and `keepalive` (e.g. a pinned RocksDB value) holds it until written.
  void BulkExternal(const char* p, size_t n, std::shared_ptr<void> keepalive);
  // Same encoding as BulkString, the bytes being [offset, offset + n) of file `fd` (sent with
  // sendfile); `keepalive` keeps the file open and the range unchanged until written.
  void BulkFile(int fd, uint64_t offset, size_t n, std::shared_ptr<const void> keepalive);
  // A bulk string sent while it is produced (a large value read in pieces): BulkBegin(n), then
  // BulkPart calls adding up to exactly n bytes (referenced, never copied: `keepalive` holds them
  // until written), then BulkEnd(). In between, the queue ends with an incomplete element:
  // Flush() may send part of it, and if the rest cannot follow, AbandonReply().
  void BulkBegin(size_t n) { Header('$', static_cast<int64_t>(n)); }
  void BulkPart(const char* p, size_t n, std::shared_ptr<void> keepalive) {
    sink().AppendExternal(p, n, std::move(keepalive));
  }
  void BulkEnd() {
    sink().Append("\r\n");
    CheckLimit();
  }
  void Null();                 // RESP2 $-1, RESP3 _
  void NullArray();            // RESP2 *-1, RESP3 _
  void Boolean(bool value);    // RESP3 #t / #f, RESP2 :1 / :0
  void ArrayHeader(size_t n);  // *n
  void MapHeader(size_t n);    // RESP3 %n, RESP2 *2n; then n key/value pairs
  void SetHeader(size_t n);    // RESP3 ~n, RESP2 *n
  // RESP3 >n (an out-of-band push: Pub/Sub messages and confirmations), RESP2 *n.
  void PushHeader(size_t n);
  // RESP3 "=<len>\r\n<fmt>:<text>"; RESP2 a bulk string of `text`. `format` must be exactly
  // three bytes (e.g. "txt", "mkd"); anything else is sent as "txt".
  void Verbatim(std::string_view format, std::string_view text);
  // Appends pre-encoded protocol bytes as is.
  void Raw(std::string_view bytes) { sink().Append(bytes); }

  // CLIENT REPLY OFF or SKIP: while dropping, replies are thrown away as they are written
  // (an error reply is still counted and told to the listener; a value referenced is released
  // at once), except what is written in a PushScope.
  void set_dropping(bool on) { dropping_ = on; }
  // While alive, what `w` writes is a push (a Pub/Sub confirmation), queued even while
  // dropping: Redis sends pushes whatever CLIENT REPLY says.
  class PushScope {
   public:
    explicit PushScope(ReplyWriter& w) : w_(w), was_(w.pushing_) { w.pushing_ = true; }
    ~PushScope() { w_.pushing_ = was_; }
    PushScope(const PushScope&) = delete;
    PushScope& operator=(const PushScope&) = delete;

   private:
    ReplyWriter& w_;
    bool was_;
  };

  // Sends what a transport takes of a queue now, without waiting for it.
  class Flusher {
   public:
    virtual void Flush(OutputQueue& q) = 0;

   protected:
    ~Flusher() = default;
  };
  // `flusher` (null: none, the default; it must outlive its use) lets Flush() send the queue
  // while a command runs: set by a connection whose engine-pool job may write to its socket.
  void set_flusher(Flusher* flusher) { flusher_ = flusher; }
  // Not while dropping: a value streamed then would go nowhere, and a failed read abandon a
  // reply nobody saw.
  bool can_flush() const { return flusher_ != nullptr && !abandoned_ && !dropping_; }
  // Sends (and consumes) what the transport takes of the queue now, if can_flush().
  void Flush() {
    if (can_flush()) flusher_->Flush(queue_);
  }
  // The element being written cannot be completed, and part of it may have been sent: nothing
  // more may reach the transport (it would be read as the element's missing bytes), so Flush()
  // sends nothing from now on, and the connection discards the queue and closes. Replies
  // appended after this call (the rest of an EXEC's or an MGET's) are discarded with it.
  void AbandonReply() { abandoned_ = true; }
  bool abandoned() const { return abandoned_; }
  // A bound on the queue (0, the default: none), checked at the end of every bulk string
  // (BulkString, BulkMove, BulkExternal, BulkFile, BulkEnd): one that takes the queue past it
  // abandons the reply (so MGET stops reading values, EXEC its reads) and sets
  // limit_exceeded(), and the connection closes the client as for its output buffer's hard
  // limit. Redis checks that limit at every reply it adds, so one command's reply cannot grow
  // far past it either.
  void set_limit(uint64_t bytes) { limit_ = bytes; }
  bool limit_exceeded() const { return limit_exceeded_; }

 private:
  // Appends <type><value>\r\n.
  void Header(char type, int64_t value);
  // Appends <type><text with CR/LF as spaces>\r\n.
  void Line(char type, std::string_view text);
  void CheckLimit() {
    if (limit_ > 0 && queue_.bytes() > limit_) limit_exceeded_ = abandoned_ = true;
  }
  // Where a reply goes: the queue, or while dropping (and not pushing) nowhere.
  OutputQueue& sink();

  OutputQueue queue_;
  bool dropping_ = false;
  bool pushing_ = false;
  bool resp3_ = false;
  uint64_t errors_ = 0;
  ErrorReplyListener* error_listener_ = nullptr;
  Flusher* flusher_ = nullptr;
  bool abandoned_ = false;
  uint64_t limit_ = 0;
  bool limit_exceeded_ = false;
};

// `items` as a RESP2 array of bulk strings, in one string: a Pub/Sub message frame, encoded
// once and pushed to every subscriber (a RESP3 one gets it with '>' for its first byte).
std::string BulkArrayFrame(std::span<const std::string_view> items);
inline std::string BulkArrayFrame(std::initializer_list<std::string_view> items) {
  return BulkArrayFrame(std::span<const std::string_view>(items.begin(), items.size()));
}

}  // namespace larder::resp
