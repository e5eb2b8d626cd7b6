#include "resp/pipeline_peek.h"

#include <strings.h>

#include <cstdint>

namespace larder::resp {

namespace {

// A cursor over one request; every Take* returns false if the bytes are not there or not the
// expected shape.
class Cursor {
 public:
  Cursor(const char* data, size_t len) : p_(data), end_(data + len) {}

  size_t offset(const char* base) const { return static_cast<size_t>(p_ - base); }

  // `<prefix><digits>\r\n`, a length of at most `max`.
  bool TakeLength(char prefix, uint64_t max, uint64_t* n) {
    if (p_ == end_ || *p_ != prefix) return false;
    const char* q = p_ + 1;
    uint64_t v = 0;
    const char* digits = q;
    while (q < end_ && *q >= '0' && *q <= '9' && q - digits < 12) v = v * 10 + (*q++ - '0');
    if (q == digits || q + 2 > end_ || q[0] != '\r' || q[1] != '\n' || v > max) return false;
    *n = v;
    p_ = q + 2;
    return true;
  }

  // `$<n>\r\n<n bytes>\r\n`.
  bool TakeBulk(std::string_view* out) {
    uint64_t n = 0;
    if (!TakeLength('$', UINT32_MAX, &n)) return false;
    if (static_cast<uint64_t>(end_ - p_) < n + 2 || p_[n] != '\r' || p_[n + 1] != '\n') {
      return false;
    }
    *out = std::string_view(p_, n);
    p_ += n + 2;
    return true;
  }

 private:
  const char* p_;
  const char* end_;
};

bool IsCommand(std::string_view got, std::string_view name) {
  return got.size() == name.size() && ::strncasecmp(got.data(), name.data(), name.size()) == 0;
}

}  // namespace

size_t PeekReadKeys(const char* data, size_t len, size_t max_keys,
                    std::vector<std::string_view>* keys) {
  size_t taken = 0;
  while (taken < len && keys->size() < max_keys) {
    Cursor c(data + taken, len - taken);
    uint64_t argc = 0;
    std::string_view name;
    if (!c.TakeLength('*', 1 << 20, &argc) || argc < 2 || !c.TakeBulk(&name)) break;
    const bool get = IsCommand(name, "GET");
    if (!(get && argc == 2) && !IsCommand(name, "MGET")) break;
    const size_t before = keys->size();
    bool whole = true;
    for (uint64_t i = 1; i < argc && whole; ++i) {
      std::string_view key;
      whole = c.TakeBulk(&key);
      if (whole) keys->push_back(key);
    }
    if (!whole) {
      keys->resize(before);  // an incomplete request: none of its keys
      break;
    }
    taken += c.offset(data + taken);
  }
  return taken;
}

}  // namespace larder::resp
