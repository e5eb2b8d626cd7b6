// libFuzzer target: RESTORE's payload decoder (DecodeDumpPayload) takes any bytes a client sends.
// It must never crash or allocate past its bound, fail only with one of its documented errors
// (leaving the value untouched), and every value it accepts must survive EncodeDumpPayload and a
// second decode unchanged.
//
// Each input is decoded twice: as it is (so the footer's version and CRC-64 checks run), and with
// its last 10 bytes replaced by a footer carrying the same version and a matching CRC-64, so that
// the string decoding behind the checksum (lengths, integers, LZF) sees the fuzzer's bytes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "commands/dump_payload.h"

namespace {

using larder::server::Crc64Jones;
using larder::server::DecodeDumpPayload;
using larder::server::EncodeDumpPayload;

constexpr uint64_t kMaxValueBytes = 1 << 20;
constexpr std::string_view kUntouched = "untouched";

bool DocumentedError(const std::string& error) {
  return error == larder::server::kErrDumpPayloadChecksum ||
         error == larder::server::kErrBadDataFormat ||
         (error.starts_with("ERR DUMP payload holds a Redis ") &&
          error.ends_with("; Larder stores strings only"));
}

void Check(std::string_view payload) {
  std::string value(kUntouched);
  const std::optional<std::string> error = DecodeDumpPayload(payload, kMaxValueBytes, &value);
  if (error) {
    if (!DocumentedError(*error) || value != kUntouched) __builtin_trap();
    return;
  }
  if (value.size() > kMaxValueBytes) __builtin_trap();
  std::string again;
  if (DecodeDumpPayload(EncodeDumpPayload(value), kMaxValueBytes, &again) || again != value) {
    __builtin_trap();
  }
}

// `input` with a footer of the same RDB version (10 if it has none) and a matching CRC-64.
std::string WithValidFooter(std::string_view input) {
  std::string body(input.size() >= 10 ? input.substr(0, input.size() - 10) : input);
  const char version[2] = {input.size() >= 10 ? input[input.size() - 10] : '\x0a',
                           input.size() >= 10 ? input[input.size() - 9] : '\x00'};
  body.append(version, 2);
  uint64_t crc = Crc64Jones(0, body);
  for (int i = 0; i < 8; ++i, crc >>= 8) body.push_back(static_cast<char>(crc & 0xff));
  return body;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Check(input);
  Check(WithValidFooter(input));
  return 0;
}
