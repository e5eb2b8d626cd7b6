#include "resp/request_parser.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <utility>

#include "common/args.h"
#include "common/uninitialized_string.h"

namespace larder::resp {
namespace {

constexpr char kErrMultibulkLen[] = "ERR Protocol error: invalid multibulk length";
constexpr char kErrBulkLen[] = "ERR Protocol error: invalid bulk length";
constexpr char kErrMbulkTooBig[] = "ERR Protocol error: too big mbulk count string";
constexpr char kErrBulkTooBig[] = "ERR Protocol error: too big bulk count string";
constexpr char kErrUnauthMultibulkLen[] = "ERR Protocol error: unauthenticated multibulk length";
constexpr char kErrUnauthBulkLen[] = "ERR Protocol error: unauthenticated bulk length";
constexpr char kErrInlineTooBig[] = "ERR Protocol error: too big inline request";
constexpr char kErrUnbalanced[] = "ERR Protocol error: unbalanced quotes in request";

constexpr size_t kArgsRetain = 1024;       // argument slots reserved up front / kept by Reset
constexpr size_t kPoolEntries = 8;         // recycled argument buffers kept by Reset
constexpr size_t kPoolMaxCapacity = 1024;  // largest recycled argument buffer
constexpr size_t kLineRetain = 4096;       // largest line buffer kept by Reset
constexpr uint64_t kGrowthFactor = 8;      // big-bulk growth step
constexpr uint64_t kFinalJumpFactor = 16;  // grow straight to the declared length within this

}  // namespace

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.size() == 1 && s[0] == '0') {
    *out = 0;
    return true;
  }
  size_t i = 0;
  const bool negative = !s.empty() && s[0] == '-';
  if (negative) i = 1;
  if (i >= s.size() || s[i] < '1' || s[i] > '9') return false;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    const unsigned d = static_cast<unsigned char>(s[i]) - '0';
    if (d > 9) return false;
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (negative) {
    if (v > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = static_cast<int64_t>(0 - v);
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

RequestParser::RequestParser(Limits limits) : limits_(limits) {}

RequestParser::~RequestParser() {
  GiveBackReservation();
}

void RequestParser::GiveBackReservation() {
  if (reserved_from_ != nullptr) reserved_from_->Give(reserved_ahead_);
  reserved_from_ = nullptr;
  reserved_ahead_ = 0;
}

RequestParser::State RequestParser::Fail(std::string error) {
  GiveBackReservation();
  error_ = std::move(error);
  phase_ = Phase::kError;
  return State::kError;
}

RequestParser::State RequestParser::Feed(const char* data, size_t len, size_t* consumed) {
  *consumed = 0;
  if (phase_ == Phase::kError) return State::kError;
  if (phase_ == Phase::kDone) Reset();
  const char* p = data;
  const char* const end = data + len;
  State state = State::kNeedMore;
  while (p < end && state == State::kNeedMore) {
    switch (phase_) {
      case Phase::kStart:
        inline_ = *p != '*';
        phase_ = inline_ ? Phase::kInline : Phase::kMultibulkHeader;
        break;
      case Phase::kMultibulkHeader:
        state = ParseMultibulkHeader(&p, end);
        break;
      case Phase::kBulkHeader:
        state = ParseBulkHeader(&p, end);
        break;
      case Phase::kBulkBody:
        ReadBody(&p, end);
        break;
      case Phase::kBulkTrailer: {
        const size_t n = std::min<size_t>(trailer_left_, end - p);
        p += n;
        trailer_left_ -= static_cast<uint8_t>(n);
        if (trailer_left_ == 0 && FinishBulk()) state = State::kComplete;
        break;
      }
      case Phase::kInline:
        state = ParseInline(&p, end);
        break;
      case Phase::kDone:
      case Phase::kError:
        assert(false);
        p = end;
        break;
    }
  }
  *consumed = static_cast<size_t>(p - data);
  return state;
}

RequestParser::State RequestParser::ParseMultibulkHeader(const char** p, const char* end) {
  std::string_view line;
  const LineStatus status = ScanLine(p, end, '\r', true, &line);
  if (status == LineStatus::kTooLong) return Fail(kErrMbulkTooBig);
  if (status == LineStatus::kPartial) return State::kNeedMore;
  int64_t count = 0;
  const bool ok = ParseInt64(line.substr(1), &count);
  line_.clear();
  if (!ok || (count > 0 && static_cast<uint64_t>(count) > limits_.max_multibulk_len)) {
    return Fail(kErrMultibulkLen);
  }
  if (limits_.unauthenticated && count > static_cast<int64_t>(kUnauthenticatedMaxArgs)) {
    return Fail(kErrUnauthMultibulkLen);
  }
  if (count <= 0) {
    phase_ = Phase::kStart;  // Redis ignores empty and negative multibulks
  } else {
    args_left_ = static_cast<uint64_t>(count);
    args_.reserve(std::min<uint64_t>(args_left_, kArgsRetain));
    phase_ = Phase::kBulkHeader;
  }
  return State::kNeedMore;
}

RequestParser::State RequestParser::ParseBulkHeader(const char** p, const char* end) {
  std::string_view line;
  const LineStatus status = ScanLine(p, end, '\r', true, &line);
  if (status == LineStatus::kTooLong) return Fail(kErrBulkTooBig);
  if (status == LineStatus::kPartial) return State::kNeedMore;
  if (line.empty() || line[0] != '$') {
    // Redis reports the line's first byte, which is the '\r' for an empty line.
    std::string error = "ERR Protocol error: expected '$', got '";
    error += line.empty() ? '\r' : line[0];
    error += '\'';
    return Fail(std::move(error));
  }
  int64_t bulk_len = 0;
  const bool ok = ParseInt64(line.substr(1), &bulk_len);
  line_.clear();
  if (!ok || bulk_len < 0 || static_cast<uint64_t>(bulk_len) > limits_.max_bulk_len) {
    return Fail(kErrBulkLen);
  }
  if (limits_.unauthenticated && static_cast<uint64_t>(bulk_len) > kUnauthenticatedMaxBulkLen) {
    return Fail(kErrUnauthBulkLen);
  }
  StartBulk(static_cast<uint64_t>(bulk_len), p, end);
  return phase_ == Phase::kDone ? State::kComplete : State::kNeedMore;
}

RequestParser::State RequestParser::ParseInline(const char** p, const char* end) {
  std::string_view line;
  const LineStatus status = ScanLine(p, end, '\n', false, &line);
  if (status == LineStatus::kTooLong) return Fail(kErrInlineTooBig);
  if (status == LineStatus::kPartial) return State::kNeedMore;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // Inline requests are rare: their arguments do not reuse pool_'s buffers.
  const bool ok = common::SplitArgs(line, &args_);
  line_.clear();
  if (!ok) return Fail(kErrUnbalanced);
  if (args_.empty()) {
    phase_ = Phase::kStart;  // blank line: no command
    return State::kNeedMore;
  }
  phase_ = Phase::kDone;
  return State::kComplete;
}

RequestParser::LineStatus RequestParser::ScanLine(const char** p, const char* end, char term,
                                                  bool skip_after_term, std::string_view* line) {
  const char* s = *p;
  if (!line_terminated_) {
    const char* t = static_cast<const char*>(std::memchr(s, term, static_cast<size_t>(end - s)));
    const size_t chunk = static_cast<size_t>((t != nullptr ? t : end) - s);
    if (line_.size() + chunk > limits_.max_inline_len) return LineStatus::kTooLong;
    if (t == nullptr) {
      line_.append(s, chunk);
      *p = end;
      return LineStatus::kPartial;
    }
    if (line_.empty() && (!skip_after_term || t + 1 < end)) {
      // The whole line is in the input: use it in place.
      *line = std::string_view(s, chunk);
      *p = t + (skip_after_term ? 2 : 1);
      return LineStatus::kReady;
    }
    line_.append(s, chunk);
    s = t + 1;
    line_terminated_ = true;
  }
  if (skip_after_term) {
    if (s == end) {
      *p = s;
      return LineStatus::kPartial;
    }
    ++s;
  }
  line_terminated_ = false;
  *p = s;
  *line = line_;
  return LineStatus::kReady;
}

std::string& RequestParser::NewArg(bool fresh) {
  if (fresh || pool_.empty()) return args_.emplace_back();
  args_.push_back(std::move(pool_.back()));
  pool_.pop_back();
  return args_.back();
}

void RequestParser::StartBulk(uint64_t len, const char** p, const char* end) {
  bulk_len_ = len;
  received_ = 0;
  big_ = false;
  const size_t avail = static_cast<size_t>(end - *p);
  if (avail >= len + 2) {
    // Body and trailer already here: a single copy; big bulks go to a fresh, exactly sized
    // buffer (a recycled one would be too small and freed anyway).
    NewArg(len >= kBigArg).assign(*p, len);
    *p += len + 2;
    trailer_left_ = 0;
    FinishBulk();
    return;
  }
  big_ = len >= kBigArg;
  std::string& arg = NewArg(big_);
  if (!big_) arg.reserve(len);
  phase_ = len == 0 ? Phase::kBulkTrailer : Phase::kBulkBody;
  trailer_left_ = 2;
}

void RequestParser::ReadBody(const char** p, const char* end) {
  std::string& arg = args_.back();
  if (big_) {
    while (*p < end && received_ < bulk_len_) {
      if (received_ == arg.size()) GrowBigArg();
      const size_t n = std::min<size_t>(arg.size() - received_, end - *p);
      std::memcpy(arg.data() + received_, *p, n);
      *p += n;
      received_ += n;
    }
  } else {
    const size_t n = std::min<size_t>(bulk_len_ - received_, end - *p);
    arg.append(*p, n);
    *p += n;
    received_ += n;
  }
  if (received_ == bulk_len_) phase_ = Phase::kBulkTrailer;
}

void RequestParser::GrowBigArg() {
  std::string& arg = args_.back();
  const uint64_t size = arg.size();
  uint64_t target;
  if (size == 0) {
    target = std::min<uint64_t>(bulk_len_, kBigArgInitialReserve);
    ReserveAheadPool* pool = limits_.reserve_ahead;
    if (target < bulk_len_ && pool != nullptr &&
        pool->Take(bulk_len_, limits_.reserve_ahead_limit)) {
      reserved_from_ = pool;
      reserved_ahead_ = bulk_len_;
      target = bulk_len_;
    }
  } else if (bulk_len_ <= size * kFinalJumpFactor) {
    target = bulk_len_;
  } else {
    target = size * kGrowthFactor;
  }
  // A fresh string so reserve() allocates exactly `target` (growing in place may round up to
  // twice the old capacity) and only the received prefix is copied. The rest is left unwritten:
  // the body's bytes land there next, and nothing reads past received_.
  std::string grown;
  grown.reserve(target);
  grown.append(arg.data(), received_);
  common::ResizeUninitialized(&grown, target);
  arg.swap(grown);
}

bool RequestParser::FinishBulk() {
  GiveBackReservation();  // its bytes have all arrived
  args_bytes_ += bulk_len_;
  bulk_len_ = 0;
  received_ = 0;
  big_ = false;
  if (--args_left_ == 0) {
    phase_ = Phase::kDone;
    return true;
  }
  phase_ = Phase::kBulkHeader;
  return false;
}

std::span<char> RequestParser::DirectBuffer() {
  if (phase_ != Phase::kBulkBody || !big_) return {};
  std::string& arg = args_.back();
  if (received_ == arg.size()) GrowBigArg();
  return {arg.data() + received_, static_cast<size_t>(arg.size() - received_)};
}

void RequestParser::CommitDirect(size_t n) {
  assert(phase_ == Phase::kBulkBody && big_ && received_ + n <= args_.back().size());
  received_ += n;
  if (received_ == bulk_len_) phase_ = Phase::kBulkTrailer;
}

void RequestParser::Reset() {
  GiveBackReservation();
  for (std::string& arg : args_) {
    if (pool_.size() == kPoolEntries) break;
    if (arg.capacity() > std::string().capacity() && arg.capacity() <= kPoolMaxCapacity) {
      arg.clear();
      pool_.push_back(std::move(arg));
    }
  }
  args_.clear();
  if (args_.capacity() > kArgsRetain) std::vector<std::string>().swap(args_);
  line_.clear();
  if (line_.capacity() > kLineRetain) std::string().swap(line_);
  error_.clear();
  phase_ = Phase::kStart;
  inline_ = false;
  big_ = false;
  line_terminated_ = false;
  args_left_ = 0;
  bulk_len_ = 0;
  received_ = 0;
  trailer_left_ = 0;
  args_bytes_ = 0;
}

size_t RequestParser::buffered_bytes() const {
  return args_bytes_ + static_cast<size_t>(received_) + line_.size();
}

size_t RequestParser::reserved_bytes() const {
  size_t total = line_.capacity() + args_.capacity() * sizeof(std::string);
  for (const std::string& arg : args_) total += arg.capacity();
  return total;
}

}  // namespace larder::resp
