#include "format.h"

#include <xxh_x86dispatch.h>
#include <xxhash.h>

#include <cstdio>
#include <cstring>

namespace larder::format {
namespace {

template <typename T>
void Put(char*& p, T v) {
  std::memcpy(p, &v, sizeof(T));  // the engine targets little-endian hosts (x86-64, arm64)
  p += sizeof(T);
}

template <typename T>
T Take(const char*& p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  p += sizeof(T);
  return v;
}

}  // namespace

uint64_t Checksum(const char* data, size_t n) {
  return XXH3_64bits_dispatch(data, n);
}

void ValueHeader::EncodeTo(char out[kSize]) const {
  char* p = out;
  Put<uint32_t>(p, kMagic);
  Put<uint16_t>(p, 1);  // header version
  Put<uint16_t>(p, 0);  // flags (none defined)
  Put<uint64_t>(p, value_size);
  Put<uint64_t>(p, checksum);
}

std::optional<ValueHeader> ValueHeader::Decode(std::string_view record) {
  if (record.size() < kSize) return std::nullopt;
  const char* p = record.data();
  if (Take<uint32_t>(p) != kMagic || Take<uint16_t>(p) != 1 || Take<uint16_t>(p) != 0) {
    return std::nullopt;
  }
  ValueHeader h;
  h.value_size = Take<uint64_t>(p);
  h.checksum = Take<uint64_t>(p);
  if (h.value_size != record.size() - kSize) return std::nullopt;
  return h;
}

std::string MetaRecord::Encode() const {
  std::string out(kSize, '\0');
  char* p = out.data();
  Put<uint8_t>(p, kVersion);
  Put<uint64_t>(p, generation);
  Put<uint64_t>(p, value_size);
  Put<uint64_t>(p, checksum);
  Put<int64_t>(p, expire_at_ms);
  Put<int64_t>(p, created_ms);
  Put<int64_t>(p, last_access_ms);
  Put<uint32_t>(p, reuse_count);
  Put<uint32_t>(p, static_cast<uint32_t>(Checksum(out.data(), kSize - 4)));
  return out;
}

std::optional<MetaRecord> MetaRecord::Decode(std::string_view bytes) {
  if (bytes.size() != kSize) return std::nullopt;
  const char* p = bytes.data();
  if (Take<uint8_t>(p) != kVersion) return std::nullopt;
  MetaRecord m;
  m.generation = Take<uint64_t>(p);
  m.value_size = Take<uint64_t>(p);
  m.checksum = Take<uint64_t>(p);
  m.expire_at_ms = Take<int64_t>(p);
  m.created_ms = Take<int64_t>(p);
  m.last_access_ms = Take<int64_t>(p);
  m.reuse_count = Take<uint32_t>(p);
  uint32_t crc = Take<uint32_t>(p);
  if (crc != static_cast<uint32_t>(Checksum(bytes.data(), kSize - 4))) return std::nullopt;
  return m;
}

std::string GenerationCfName(uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s%016llx", kGenCfPrefix, static_cast<unsigned long long>(id));
  return buf;
}

std::optional<uint64_t> ParseGenerationCfName(std::string_view name) {
  std::string_view prefix(kGenCfPrefix);
  if (name.size() != prefix.size() + 16 || name.substr(0, prefix.size()) != prefix) {
    return std::nullopt;
  }
  uint64_t id = 0;
  for (char c : name.substr(prefix.size())) {
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    id = id * 16 + static_cast<uint64_t>(d);
  }
  return id;
}

}  // namespace larder::format
