#include "format.h"

#include <xxh_x86dispatch.h>
#include <xxhash.h>

#include <atomic>
#include <cstdio>
#include <cstring>

#include "le_coding.h"

namespace larder::format {

namespace {

constexpr uint64_t kKeyTagSeed = 0x4c61726465725447ull;  // "LarderTG"

// The value of a lowercase hex digit, or -1.
int HexDigit(char c) {
  return (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

}  // namespace

uint64_t Checksum(const char* data, size_t n) {
  return XXH3_64bits_dispatch(data, n);
}

ChecksumStream::ChecksumStream() : state_(XXH3_createState()) {
  if (state_ == nullptr) std::abort();  // out of memory for 576 bytes
  XXH3_64bits_reset(state_);
}

ChecksumStream::~ChecksumStream() {
  XXH3_freeState(state_);
}

void ChecksumStream::Update(const char* data, size_t n) {
  XXH3_64bits_update_dispatch(state_, data, n);
}

uint64_t ChecksumStream::Digest() const {
  return XXH3_64bits_digest(state_);
}

namespace {
std::atomic<uint64_t (*)(std::string_view)> key_hash_override{nullptr};
}  // namespace

void SetKeyHashForTesting(uint64_t (*fn)(std::string_view)) {
  key_hash_override = fn;
}

uint64_t KeyHash(std::string_view key) {
  auto* fn = key_hash_override.load(std::memory_order_relaxed);
  uint64_t h = fn ? fn(key) : Checksum(key);
  return h == 0 ? 1 : h;  // 0 marks an empty slot in the index
}

uint64_t KeyTag(std::string_view key) {
  return XXH3_64bits_withSeed_dispatch(key.data(), key.size(), kKeyTagSeed);
}

std::string IndexKey(uint64_t hash, std::string_view key) {
  std::string out(kIndexKeyPrefix + key.size(), '\0');
  for (size_t i = 0; i < kIndexKeyPrefix; ++i) {
    out[i] = static_cast<char>(hash >> (8 * (kIndexKeyPrefix - 1 - i)));
  }
  // An empty key (a seek by hash alone) may have no data pointer, which memcpy must not get.
  if (!key.empty()) std::memcpy(out.data() + kIndexKeyPrefix, key.data(), key.size());
  return out;
}

std::optional<std::pair<uint64_t, std::string_view>> ParseIndexKey(std::string_view ik) {
  if (ik.size() <= kIndexKeyPrefix) return std::nullopt;
  uint64_t hash = 0;
  for (size_t i = 0; i < kIndexKeyPrefix; ++i) {
    hash = (hash << 8) | static_cast<unsigned char>(ik[i]);
  }
  return std::make_pair(hash, ik.substr(kIndexKeyPrefix));
}

std::string IndexRecord::Encode() const {
  const size_t inline_bytes = is_inline ? inline_value.size() : 0;
  std::string out(kFixedSize + inline_bytes, '\0');
  char* p = out.data();
  PutLE<uint8_t>(p, kVersion);
  PutLE<uint8_t>(p, is_inline ? 1 : 0);
  PutLE<uint16_t>(p, partition);
  PutLE<uint64_t>(p, generation);
  PutLE<uint64_t>(p, offset);
  PutLE<uint64_t>(p, value_size);
  PutLE<uint64_t>(p, value_hash);
  PutLE<int64_t>(p, expire_at_ms);
  PutLE<int64_t>(p, created_ms);
  PutLE<int64_t>(p, last_access_ms);
  PutLE<uint32_t>(p, reuse_count);
  if (inline_bytes) std::memcpy(p, inline_value.data(), inline_bytes);
  p += inline_bytes;
  PutLE<uint32_t>(p, static_cast<uint32_t>(Checksum(out.data(), out.size() - 4)));
  return out;
}

std::optional<IndexRecord> IndexRecord::Decode(std::string_view bytes) {
  if (bytes.size() < kFixedSize) return std::nullopt;
  const char* p = bytes.data();
  if (TakeLE<uint8_t>(p) != kVersion) return std::nullopt;
  IndexRecord r;
  uint8_t flags = TakeLE<uint8_t>(p);
  if (flags > 1) return std::nullopt;
  r.is_inline = flags == 1;
  r.partition = TakeLE<uint16_t>(p);
  r.generation = TakeLE<uint64_t>(p);
  r.offset = TakeLE<uint64_t>(p);
  r.value_size = TakeLE<uint64_t>(p);
  r.value_hash = TakeLE<uint64_t>(p);
  r.expire_at_ms = TakeLE<int64_t>(p);
  r.created_ms = TakeLE<int64_t>(p);
  r.last_access_ms = TakeLE<int64_t>(p);
  r.reuse_count = TakeLE<uint32_t>(p);
  const size_t inline_bytes = bytes.size() - kFixedSize;
  if (r.is_inline ? inline_bytes != r.value_size : inline_bytes != 0) return std::nullopt;
  if (r.value_size > kMaxValueBytes) return std::nullopt;
  r.inline_value = std::string_view(p, inline_bytes);
  p += inline_bytes;
  uint32_t crc = TakeLE<uint32_t>(p);
  if (crc != static_cast<uint32_t>(Checksum(bytes.data(), bytes.size() - 4))) return std::nullopt;
  return r;
}

std::string BlobFileHeader::Encode() const {
  std::string out(kValueAlign, '\0');
  char* p = out.data();
  std::memcpy(p, kMagic, sizeof(kMagic));
  p += sizeof(kMagic);
  PutLE<uint32_t>(p, kBlobFileVersion);
  PutLE<uint16_t>(p, partition);
  PutLE<uint16_t>(p, 0);
  PutLE<uint64_t>(p, generation);
  PutLE<int64_t>(p, created_ms);
  const size_t body = static_cast<size_t>(p - out.data());
  PutLE<uint32_t>(p, static_cast<uint32_t>(Checksum(out.data(), body)));
  return out;
}

std::optional<BlobFileHeader> BlobFileHeader::Decode(std::string_view bytes) {
  constexpr size_t kBody = sizeof(kMagic) + 4 + 2 + 2 + 8 + 8;
  if (bytes.size() < kBody + 4 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return std::nullopt;
  }
  const char* p = bytes.data() + sizeof(kMagic);
  if (TakeLE<uint32_t>(p) != kBlobFileVersion) return std::nullopt;
  BlobFileHeader h;
  h.partition = TakeLE<uint16_t>(p);
  TakeLE<uint16_t>(p);
  h.generation = TakeLE<uint64_t>(p);
  h.created_ms = TakeLE<int64_t>(p);
  if (TakeLE<uint32_t>(p) != static_cast<uint32_t>(Checksum(bytes.data(), kBody))) {
    return std::nullopt;
  }
  return h;
}

std::optional<uint64_t> ParseHex16After(std::string_view name, std::string_view prefix) {
  if (name.size() < prefix.size() + 16 || name.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  uint64_t id = 0;
  for (char c : name.substr(prefix.size(), 16)) {
    int d = HexDigit(c);
    if (d < 0) return std::nullopt;
    id = id * 16 + static_cast<uint64_t>(d);
  }
  return id;
}

std::string IndexCfName(uint64_t generation) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s%016llx", kIndexCfPrefix,
                static_cast<unsigned long long>(generation));
  return buf;
}

std::optional<uint64_t> ParseIndexCfName(std::string_view name) {
  if (name.size() != std::string_view(kIndexCfPrefix).size() + 16) return std::nullopt;
  return ParseHex16After(name, kIndexCfPrefix);
}

std::string BlobFileName(uint64_t generation, uint16_t partition) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "gen-%016llx-%02x.lbv",
                static_cast<unsigned long long>(generation), static_cast<unsigned>(partition));
  return buf;
}

std::optional<std::pair<uint64_t, uint16_t>> ParseBlobFileName(std::string_view name) {
  // gen-<16 hex>-<2 hex>.lbv
  if (name.size() != 4 + 16 + 1 + 2 + 4 || name.substr(20, 1) != "-" || name.substr(23) != ".lbv") {
    return std::nullopt;
  }
  auto gen = ParseHex16After(name, "gen-");
  if (!gen) return std::nullopt;
  unsigned part = 0;
  for (char c : name.substr(21, 2)) {
    int d = HexDigit(c);
    if (d < 0) return std::nullopt;
    part = part * 16 + static_cast<unsigned>(d);
  }
  return std::make_pair(*gen, static_cast<uint16_t>(part));
}

}  // namespace larder::format
