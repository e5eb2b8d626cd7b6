// libFuzzer target: the RESP request parser must never crash, hang, or over-allocate on any
// byte stream, whether fed whole, in pieces, or through the direct-receive buffer.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "resp/request_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  larder::resp::Limits limits;
  limits.max_bulk_len = 1 << 20;  // small limits so the fuzzer reaches the limit paths
  limits.max_multibulk_len = 1024;
  limits.max_inline_len = 4096;
  larder::resp::RequestParser parser(limits);
  // The first byte picks a chunk size, so split points are fuzzed too.
  const size_t chunk = 1 + data[0] % 17;
  const char* p = reinterpret_cast<const char*>(data + 1);
  size_t left = size - 1;
  int guard = 0;
  while (left > 0 && ++guard < 1'000'000) {
    auto direct = parser.DirectBuffer();
    if (!direct.empty()) {
      size_t n = std::min(direct.size(), std::min(left, chunk));
      std::memcpy(direct.data(), p, n);
      parser.CommitDirect(n);
      p += n;
      left -= n;
      continue;
    }
    size_t consumed = 0;
    auto st = parser.Feed(p, std::min(left, chunk), &consumed);
    p += consumed;
    left -= consumed;
    if (st == larder::resp::RequestParser::State::kError) {
      if (parser.error().rfind("ERR Protocol error", 0) != 0) __builtin_trap();
      break;
    }
    if (st == larder::resp::RequestParser::State::kComplete) {
      for (const auto& a : parser.args()) {
        if (a.size() > limits.max_bulk_len + limits.max_inline_len) __builtin_trap();
      }
      parser.Reset();
    }
    if (parser.reserved_bytes() > (8u << 20)) __builtin_trap();  // bounded by the limits
  }
  return 0;
}
