#include "commands/dump_payload.h"

#include <liblzf/lzf.h>

#include <array>
#include <charconv>
#include <climits>
#include <cstddef>
#include <limits>
#include <utility>

namespace larder::server {
namespace {

constexpr uint8_t kRdbTypeString = 0;
constexpr size_t kFooterBytes = 2 + 8;  // RDB version, CRC-64

// The first byte of a string's RDB encoding: its top two bits (the kLen6, kLen14 and kEncoded
// tags), or for 10xxxxxx the whole byte (kLen32, kLen64), say what follows.
constexpr uint8_t kLen6 = 0;      // 00xxxxxx: the length is xxxxxx
constexpr uint8_t kLen14 = 1;     // 01xxxxxx yyyyyyyy: the length is xxxxxxyyyyyyyy
constexpr uint8_t kLen32 = 0x80;  // 10000000, then the length in 4 bytes, big-endian
constexpr uint8_t kLen64 = 0x81;  // 10000001, then the length in 8 bytes, big-endian
constexpr uint8_t kEncoded = 3;   // 11xxxxxx: xxxxxx is one of kEnc*
constexpr uint8_t kEncInt8 = 0;   // then int8
constexpr uint8_t kEncInt16 = 1;  // then int16, little-endian
constexpr uint8_t kEncInt32 = 2;  // then int32, little-endian
constexpr uint8_t kEncLzf = 3;    // then compressed length, length, compressed bytes
// No LZF input expands more than 88 times: a literal run never expands, a back reference yields
// at most 8 bytes from 2 or 264 bytes from 3.
constexpr uint64_t kLzfMaxExpansion = 88;

// ---- CRC-64 (Jones), slice-by-8 ----

constexpr uint64_t kCrc64PolyReflected = 0x95ac9329ac4bc9b5;  // 0xad93d23594c935a9 reflected

using Crc64Tables = std::array<std::array<uint64_t, 256>, 8>;

// tables[0] advances the CRC by one byte; tables[k] by one byte followed by k zero bytes.
constexpr Crc64Tables MakeCrc64Tables() {
  Crc64Tables tables{};
  for (uint64_t n = 0; n < 256; ++n) {
    uint64_t crc = n;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ kCrc64PolyReflected : crc >> 1;
    tables[0][n] = crc;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (size_t n = 0; n < 256; ++n) {
      uint64_t prev = tables[k - 1][n];
      tables[k][n] = (prev >> 8) ^ tables[0][prev & 0xff];
    }
  }
  return tables;
}

constexpr Crc64Tables kCrc64Tables = MakeCrc64Tables();

// ---- fixed-width integers ----

uint64_t LoadLittleEndian(const char* p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = bytes; i-- > 0;) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint64_t LoadBigEndian(const char* p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

void AppendLittleEndian(uint64_t v, size_t bytes, std::string* out) {
  for (size_t i = 0; i < bytes; ++i, v >>= 8) out->push_back(static_cast<char>(v & 0xff));
}

void AppendBigEndian(uint64_t v, size_t bytes, std::string* out) {
  for (size_t i = bytes; i-- > 0;) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// ---- encoding ----

// Redis's rdbSaveLen: the shortest of the four length forms.
void AppendLength(uint64_t len, std::string* out) {
  if (len < (1u << 6)) {
    out->push_back(static_cast<char>(len));
  } else if (len < (1u << 14)) {
    AppendBigEndian(len | (uint64_t{kLen14} << 14), 2, out);
  } else if (len <= std::numeric_limits<uint32_t>::max()) {
    out->push_back(static_cast<char>(kLen32));
    AppendBigEndian(len, 4, out);
  } else {
    out->push_back(static_cast<char>(kLen64));
    AppendBigEndian(len, 8, out);
  }
}

// Redis's rdbTryIntegerEncoding: appends the integer encoding of `value` and returns true if
// `value` is exactly the decimal text of an int32 (which round-trips through the integer).
bool AppendIntegerEncoding(std::string_view value, std::string* out) {
  int32_t n = 0;
  const char* end = value.data() + value.size();
  auto [parsed_end, ec] = std::from_chars(value.data(), end, n);
  if (ec != std::errc() || parsed_end != end) return false;
  char canonical[16];
  auto printed = std::to_chars(canonical, canonical + sizeof canonical, n);
  if (std::string_view(canonical, printed.ptr - canonical) != value) return false;
  auto enc = [](uint8_t kind) { return static_cast<char>((kEncoded << 6) | kind); };
  if (n >= INT8_MIN && n <= INT8_MAX) {
    out->push_back(enc(kEncInt8));
    AppendLittleEndian(static_cast<uint8_t>(n), 1, out);
  } else if (n >= INT16_MIN && n <= INT16_MAX) {
    out->push_back(enc(kEncInt16));
    AppendLittleEndian(static_cast<uint16_t>(n), 2, out);
  } else {
    out->push_back(enc(kEncInt32));
    AppendLittleEndian(static_cast<uint32_t>(n), 4, out);
  }
  return true;
}

// ---- decoding ----

// The unread part of a payload's body; every read is checked against it.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}

  bool empty() const { return rest_.empty(); }

  bool Take(uint64_t n, std::string_view* out) {
    if (n > rest_.size()) return false;
    *out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return true;
  }

  bool Byte(uint8_t* out) {
    std::string_view b;
    if (!Take(1, &b)) return false;
    *out = static_cast<uint8_t>(b[0]);
    return true;
  }

 private:
  std::string_view rest_;
};

// Redis's rdbLoadLenByRef: reads a length, or (*encoded set) the kEnc* kind of an encoded
// string. Like Redis, accepts a length in a longer form than needed.
bool ReadLength(Reader& in, uint64_t* len, bool* encoded) {
  uint8_t first = 0;
  if (!in.Byte(&first)) return false;
  *encoded = (first >> 6) == kEncoded;
  std::string_view more;
  switch (first >> 6) {
    case kLen6:
    case kEncoded:
      *len = first & 0x3f;
      return true;
    case kLen14:
      if (!in.Take(1, &more)) return false;
      *len = (uint64_t{first & 0x3fu} << 8) | static_cast<uint8_t>(more[0]);
      return true;
    default:
      if (first != kLen32 && first != kLen64) return false;
      size_t bytes = first == kLen32 ? 4 : 8;
      if (!in.Take(bytes, &more)) return false;
      *len = LoadBigEndian(more.data(), bytes);
      return true;
  }
}

// A plain length: not the marker of an encoded string.
bool ReadPlainLength(Reader& in, uint64_t* len) {
  bool encoded = false;
  return ReadLength(in, len, &encoded) && !encoded;
}

bool ReadInteger(Reader& in, size_t bytes, std::string* value) {
  std::string_view raw;
  if (!in.Take(bytes, &raw)) return false;
  uint64_t u = LoadLittleEndian(raw.data(), bytes);
  int shift = static_cast<int>(64 - 8 * bytes);  // sign-extend from `bytes` bytes
  int64_t n = static_cast<int64_t>(u << shift) >> shift;
  char text[24];
  auto printed = std::to_chars(text, text + sizeof text, n);
  value->assign(text, printed.ptr);
  return true;
}

// Redis's rdbLoadLzfStringObject, with every length checked before the allocation.
bool ReadLzf(Reader& in, uint64_t max_value_bytes, std::string* value) {
  uint64_t compressed_len = 0;
  uint64_t len = 0;
  if (!ReadPlainLength(in, &compressed_len) || !ReadPlainLength(in, &len)) return false;
  std::string_view compressed;
  if (!in.Take(compressed_len, &compressed)) return false;
  if (compressed_len == 0 || len == 0 || len > max_value_bytes ||
      len > compressed_len * kLzfMaxExpansion || compressed_len > UINT_MAX || len > UINT_MAX) {
    return false;
  }
  std::string out(len, '\0');
  unsigned int got = lzf_decompress(compressed.data(), static_cast<unsigned int>(compressed_len),
                                    out.data(), static_cast<unsigned int>(len));
  if (got != len) return false;
  *value = std::move(out);
  return true;
}

// Reads one RDB-encoded string (Redis's rdbGenericLoadStringObject). A raw or LZF string longer
// than max_value_bytes is refused before it is copied; an integer's text (<= 11 bytes) is not.
bool ReadString(Reader& in, uint64_t max_value_bytes, std::string* value) {
  uint64_t len = 0;
  bool encoded = false;
  if (!ReadLength(in, &len, &encoded)) return false;
  if (!encoded) {
    std::string_view raw;
    if (len > max_value_bytes || !in.Take(len, &raw)) return false;
    value->assign(raw);
    return true;
  }
  switch (len) {
    case kEncInt8:
      return ReadInteger(in, 1, value);
    case kEncInt16:
      return ReadInteger(in, 2, value);
    case kEncInt32:
      return ReadInteger(in, 4, value);
    case kEncLzf:
      return ReadLzf(in, max_value_bytes, value);
    default:
      return false;
  }
}

// The TYPE command's name for the values of RDB object type `type` (rdb.h's RDB_TYPE_*), or ""
// if Redis 7.2 has no such type.
std::string_view RdbTypeKind(uint8_t type) {
  static constexpr std::string_view kKinds[] = {
      "string", "list", "set",  "zset",   "hash", "zset",  "module", "module",
      "",       "hash", "list", "set",    "zset", "hash",  "list",   "stream",
      "hash",   "zset", "list", "stream", "set",  "stream"};
  return type < std::size(kKinds) ? kKinds[type] : std::string_view();
}

}  // namespace

uint64_t Crc64Jones(uint64_t crc, std::string_view bytes) {
  const auto& t = kCrc64Tables;
  const char* p = bytes.data();
  size_t n = bytes.size();
  for (; n >= 8; p += 8, n -= 8) {
    crc ^= LoadLittleEndian(p, 8);
    crc = t[7][crc & 0xff] ^ t[6][(crc >> 8) & 0xff] ^ t[5][(crc >> 16) & 0xff] ^
          t[4][(crc >> 24) & 0xff] ^ t[3][(crc >> 32) & 0xff] ^ t[2][(crc >> 40) & 0xff] ^
          t[1][(crc >> 48) & 0xff] ^ t[0][crc >> 56];
  }
  for (; n > 0; ++p, --n) crc = t[0][(crc ^ static_cast<uint8_t>(*p)) & 0xff] ^ (crc >> 8);
  return crc;
}

std::string EncodeDumpPayload(std::string_view value) {
  std::string out;
  out.reserve(1 + 9 + value.size() + kFooterBytes);
  out.push_back(static_cast<char>(kRdbTypeString));
  if (!AppendIntegerEncoding(value, &out)) {
    AppendLength(value.size(), &out);
    out.append(value);
  }
  AppendLittleEndian(kDumpRdbVersionWritten, 2, &out);
  AppendLittleEndian(Crc64Jones(0, out), 8, &out);
  return out;
}

std::optional<std::string> DecodeDumpPayload(std::string_view payload, uint64_t max_value_bytes,
                                             std::string* value) {
  if (payload.size() < kFooterBytes) return std::string(kErrDumpPayloadChecksum);
  std::string_view body = payload.substr(0, payload.size() - kFooterBytes);
  const char* footer = payload.data() + body.size();
  if (LoadLittleEndian(footer, 2) > kDumpRdbVersionReadMax ||
      LoadLittleEndian(footer + 2, 8) != Crc64Jones(0, payload.substr(0, body.size() + 2))) {
    return std::string(kErrDumpPayloadChecksum);
  }
  Reader in(body);
  uint8_t type = 0;
  if (!in.Byte(&type)) return std::string(kErrBadDataFormat);
  if (type != kRdbTypeString) {
    std::string_view kind = RdbTypeKind(type);
    if (kind.empty()) return std::string(kErrBadDataFormat);
    return "ERR DUMP payload holds a Redis " + std::string(kind) + " (RDB type " +
           std::to_string(type) + "); Larder stores strings only";
  }
  std::string decoded;
  if (!ReadString(in, max_value_bytes, &decoded) || !in.empty() ||
      decoded.size() > max_value_bytes) {
    return std::string(kErrBadDataFormat);
  }
  *value = std::move(decoded);
  return std::nullopt;
}

}  // namespace larder::server
