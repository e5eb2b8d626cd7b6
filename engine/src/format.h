// On-disk formats of the engine. All integers are little-endian.
//
// Column families:
//   "default"        holds kFormatKey -> the data directory's format version.
//   "meta"           key -> MetaRecord (small; the durable copy of the in-memory index).
//   "gen-<16 hex>"   key -> ValueHeader + value bytes (values >= kMinBlobBytes in blob files).
//
// A value is trusted only if its header's checksum matches both the bytes read and the
// checksum in its MetaRecord; anything else is corruption and reads as a miss.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace larder::format {

inline constexpr char kFormatKey[] = "larder.format";
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr char kMetaCf[] = "meta";
inline constexpr char kGenCfPrefix[] = "gen-";

// Values at least this large go to blob files; smaller ones stay inline in SSTs.
inline constexpr uint64_t kMinBlobBytes = 64 * 1024;

// 64-bit XXH3 of `data` (runtime-dispatched to the widest SIMD the CPU has).
uint64_t Checksum(const char* data, size_t n);
inline uint64_t Checksum(std::string_view s) {
  return Checksum(s.data(), s.size());
}

// Header stored in front of every value.
struct ValueHeader {
  static constexpr uint32_t kMagic = 0x5644524c;  // "LRDV"
  static constexpr size_t kSize = 24;
  uint64_t value_size = 0;
  uint64_t checksum = 0;

  void EncodeTo(char out[kSize]) const;
  // Parses the header of a stored record; nullopt if the magic, version or size is wrong.
  static std::optional<ValueHeader> Decode(std::string_view record);
};

// Bytes one value occupies in its generation: key, header, value.
inline uint64_t StoredBytes(size_t key_size, uint64_t value_size) {
  return key_size + ValueHeader::kSize + value_size;
}

// The durable metadata of one key.
struct MetaRecord {
  static constexpr uint8_t kVersion = 1;
  static constexpr size_t kSize = 57;  // 1 + 6*8 + 4 + 4
  uint64_t generation = 0;
  uint64_t value_size = 0;
  uint64_t checksum = 0;
  int64_t expire_at_ms = 0;
  int64_t created_ms = 0;
  int64_t last_access_ms = 0;
  uint32_t reuse_count = 0;

  std::string Encode() const;
  // nullopt if the record is malformed or its own checksum does not match.
  static std::optional<MetaRecord> Decode(std::string_view bytes);
};

// "gen-000000000000002a" <-> 42.
std::string GenerationCfName(uint64_t id);
std::optional<uint64_t> ParseGenerationCfName(std::string_view name);

}  // namespace larder::format
