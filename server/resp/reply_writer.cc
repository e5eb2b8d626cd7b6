#include "resp/reply_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <utility>

namespace larder::resp {

// ---- OutputQueue ----

size_t OutputQueue::TailRoom() const {
  if (segments_.empty() || segments_.back().block == nullptr) return 0;
  return segments_.back().capacity - segments_.back().size;
}

OutputQueue::Segment& OutputQueue::NewBlock(size_t n) {
  Segment& s = segments_.emplace_back();
  s.capacity = std::max(n, kBlockSize);
  if (s.capacity == kBlockSize && spare_ != nullptr) {
    s.block = std::move(spare_);
  } else {
    s.block = std::make_unique_for_overwrite<char[]>(s.capacity);
  }
  s.data = s.block.get();
  return s;
}

OutputQueue OutputQueue::Discarding() {
  OutputQueue q;
  q.discards_ = true;
  return q;
}

void OutputQueue::Append(std::string_view bytes) {
  if (bytes.empty() || discards_) return;
  const size_t head = std::min(TailRoom(), bytes.size());
  if (head > 0) {
    Segment& tail = segments_.back();
    std::memcpy(tail.block.get() + tail.size, bytes.data(), head);
    tail.size += head;
    bytes.remove_prefix(head);
  }
  if (!bytes.empty()) {
    Segment& s = NewBlock(bytes.size());
    std::memcpy(s.block.get(), bytes.data(), bytes.size());
    s.size = bytes.size();
  }
  bytes_ += head + bytes.size();
}

char* OutputQueue::PrepareAppend(size_t n) {
  if (discards_) {
    if (scratch_.size() < n) scratch_.resize(n);
    return scratch_.data();
  }
  if (TailRoom() < n) NewBlock(n);
  Segment& tail = segments_.back();
  return tail.block.get() + tail.size;
}

void OutputQueue::CommitAppend(size_t n) {
  if (discards_) return;
  assert(n <= TailRoom());
  segments_.back().size += n;
  bytes_ += n;
}

void OutputQueue::AppendExternal(const char* p, size_t n, std::shared_ptr<void> keepalive) {
  if (n == 0 || discards_) return;
  Segment& s = segments_.emplace_back();
  s.data = p;
  s.size = n;
  s.capacity = n;
  s.keepalive = std::move(keepalive);
  bytes_ += n;
}

void OutputQueue::AppendFile(int fd, uint64_t offset, size_t n,
                             std::shared_ptr<const void> keepalive) {
  if (n == 0 || discards_) return;
  Segment& s = segments_.emplace_back();
  s.fd = fd;
  s.file_offset = offset;
  s.size = n;
  s.capacity = n;
  s.keepalive = std::move(keepalive);
  bytes_ += n;
  ++files_;
}

bool OutputQueue::FrontFile(int* fd, uint64_t* offset, size_t* n) const {
  if (segments_.empty() || segments_.front().fd < 0) return false;
  const Segment& s = segments_.front();
  *fd = s.fd;
  *offset = s.file_offset + front_offset_;
  *n = s.size - front_offset_;
  return true;
}

size_t OutputQueue::FillIov(struct iovec* iov, size_t max) const {
  size_t used = 0;
  size_t skip = front_offset_;
  for (const Segment& s : segments_) {
    if (used == max || s.fd >= 0) break;
    if (s.size > skip) {
      iov[used].iov_base = const_cast<char*>(s.data + skip);
      iov[used].iov_len = s.size - skip;
      ++used;
    }
    skip = 0;
  }
  return used;
}

ssize_t OutputQueue::CopyOut(char* dst, size_t max) const {
  size_t copied = 0;
  size_t skip = front_offset_;
  for (const Segment& s : segments_) {
    if (copied == max) break;
    const size_t n = std::min(s.size - skip, max - copied);
    if (s.fd < 0) {
      std::memcpy(dst + copied, s.data + skip, n);
    } else {
      for (size_t done = 0; done < n;) {
        ssize_t r = ::pread(s.fd, dst + copied + done, n - done,
                            static_cast<off_t>(s.file_offset + skip + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
          if (r == 0) errno = EIO;  // the file is shorter than its segment: never send less
          return -1;
        }
        done += static_cast<size_t>(r);
      }
    }
    copied += n;
    skip = 0;
  }
  return static_cast<ssize_t>(copied);
}

void OutputQueue::Consume(size_t n) {
  assert(n <= bytes_);
  bytes_ -= n;
  while (!segments_.empty()) {
    Segment& front = segments_.front();
    const size_t left = front.size - front_offset_;
    if (n < left) {
      front_offset_ += n;
      return;
    }
    n -= left;
    front_offset_ = 0;
    if (front.block != nullptr && front.capacity == kBlockSize) spare_ = std::move(front.block);
    if (front.fd >= 0) --files_;
    segments_.pop_front();
  }
}

void OutputQueue::Clear() {
  segments_.clear();
  front_offset_ = 0;
  bytes_ = 0;
  files_ = 0;
}

// ---- ReplyWriter ----

namespace {

constexpr size_t kMaxHeader = 1 + 20 + 2;  // type byte, int64, CRLF
constexpr size_t kMaxDouble = 32;          // "%.17g" of any double is at most 24 bytes

// Writes Redis's textual form of a double into buf; returns its length.
size_t FormatDouble(double value, char* buf) {
  if (std::isnan(value)) {
    std::memcpy(buf, "nan", 3);
    return 3;
  }
  if (std::isinf(value)) {
    if (value > 0) {
      std::memcpy(buf, "inf", 3);
      return 3;
    }
    std::memcpy(buf, "-inf", 4);
    return 4;
  }
  // to_chars with a precision is specified as printf("%.17g") in the C locale.
  const auto result = std::to_chars(buf, buf + kMaxDouble, value, std::chars_format::general, 17);
  assert(result.ec == std::errc());
  return static_cast<size_t>(result.ptr - buf);
}

}  // namespace

OutputQueue& ReplyWriter::sink() {
  // One per thread: it keeps nothing (its room for PrepareAppend aside).
  static thread_local OutputQueue discarded = OutputQueue::Discarding();
  return dropping_ && !pushing_ ? discarded : queue_;
}

bool ReplyWriter::set_protocol(int version) {
  if (version != 2 && version != 3) return false;
  resp3_ = version == 3;
  return true;
}

void ReplyWriter::Header(char type, int64_t value) {
  char* out = sink().PrepareAppend(kMaxHeader);
  char* p = out;
  *p++ = type;
  p = std::to_chars(p, out + kMaxHeader, value).ptr;
  *p++ = '\r';
  *p++ = '\n';
  sink().CommitAppend(static_cast<size_t>(p - out));
}

void ReplyWriter::Line(char type, std::string_view text) {
  char* out = sink().PrepareAppend(text.size() + 3);
  out[0] = type;
  std::replace_copy_if(
      text.begin(), text.end(), out + 1, [](char c) { return c == '\r' || c == '\n'; }, ' ');
  out[text.size() + 1] = '\r';
  out[text.size() + 2] = '\n';
  sink().CommitAppend(text.size() + 3);
}

void ReplyWriter::SimpleString(std::string_view text) {
  Line('+', text);
}

void ReplyWriter::Error(std::string_view text) {
  ++errors_;
  if (error_listener_ != nullptr) error_listener_->OnErrorReply(text);
  Line('-', text);
}

void ReplyWriter::Integer(int64_t value) {
  Header(':', value);
}

void ReplyWriter::Double(double value) {
  char text[kMaxDouble];
  const size_t len = FormatDouble(value, text);
  if (resp3_) {
    char* out = sink().PrepareAppend(len + 3);
    out[0] = ',';
    std::memcpy(out + 1, text, len);
    out[len + 1] = '\r';
    out[len + 2] = '\n';
    sink().CommitAppend(len + 3);
  } else {
    BulkString(std::string_view(text, len));
  }
}

void ReplyWriter::BulkString(std::string_view bytes) {
  if (bytes.size() + kMaxHeader + 2 <= OutputQueue::kBlockSize) {
    // Header, body and trailer contiguously with one room check.
    char* out = sink().PrepareAppend(bytes.size() + kMaxHeader + 2);
    char* p = out;
    *p++ = '$';
    p = std::to_chars(p, out + kMaxHeader, bytes.size()).ptr;
    *p++ = '\r';
    *p++ = '\n';
    std::memcpy(p, bytes.data(), bytes.size());
    p += bytes.size();
    *p++ = '\r';
    *p++ = '\n';
    sink().CommitAppend(static_cast<size_t>(p - out));
    CheckLimit();
    return;
  }
  BulkBegin(bytes.size());
  sink().Append(bytes);
  BulkEnd();
}

void ReplyWriter::BulkMove(std::string bytes) {
  if (bytes.size() < kMinExternal) {
    BulkString(bytes);
    return;
  }
  auto owned = std::make_shared<std::string>(std::move(bytes));
  const char* data = owned->data();
  const size_t size = owned->size();
  BulkExternal(data, size, std::move(owned));
}

void ReplyWriter::BulkExternal(const char* p, size_t n, std::shared_ptr<void> keepalive) {
  if (n < kMinExternal) {
    BulkString(std::string_view(p, n));
    return;
  }
  BulkBegin(n);
  BulkPart(p, n, std::move(keepalive));
  BulkEnd();
}

void ReplyWriter::BulkFile(int fd, uint64_t offset, size_t n,
                           std::shared_ptr<const void> keepalive) {
  BulkBegin(n);
  sink().AppendFile(fd, offset, n, std::move(keepalive));
  BulkEnd();
}

void ReplyWriter::Null() {
  sink().Append(resp3_ ? std::string_view("_\r\n") : "$-1\r\n");
}

void ReplyWriter::NullArray() {
  sink().Append(resp3_ ? std::string_view("_\r\n") : "*-1\r\n");
}

void ReplyWriter::Boolean(bool value) {
  if (resp3_) {
    sink().Append(value ? std::string_view("#t\r\n") : "#f\r\n");
  } else {
    sink().Append(value ? std::string_view(":1\r\n") : ":0\r\n");
  }
}

void ReplyWriter::ArrayHeader(size_t n) {
  Header('*', static_cast<int64_t>(n));
}

void ReplyWriter::MapHeader(size_t n) {
  if (resp3_) {
    Header('%', static_cast<int64_t>(n));
  } else {
    Header('*', static_cast<int64_t>(2 * n));
  }
}

void ReplyWriter::SetHeader(size_t n) {
  Header(resp3_ ? '~' : '*', static_cast<int64_t>(n));
}

void ReplyWriter::PushHeader(size_t n) {
  Header(resp3_ ? '>' : '*', static_cast<int64_t>(n));
}

void ReplyWriter::Verbatim(std::string_view format, std::string_view text) {
  if (!resp3_) {
    BulkString(text);
    return;
  }
  if (format.size() != 3) format = "txt";
  Header('=', static_cast<int64_t>(text.size() + 4));
  char* out = sink().PrepareAppend(4);
  std::memcpy(out, format.data(), 3);
  out[3] = ':';
  sink().CommitAppend(4);
  sink().Append(text);
  sink().Append("\r\n");
}

std::string BulkArrayFrame(std::span<const std::string_view> items) {
  std::string out = "*" + std::to_string(items.size()) + "\r\n";
  for (std::string_view item : items) {
    out += "$" + std::to_string(item.size()) + "\r\n";
    out.append(item);
    out += "\r\n";
  }
  return out;
}

}  // namespace larder::resp
