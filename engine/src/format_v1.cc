#include "format_v1.h"

#include "format.h"
#include "le_coding.h"

namespace larder::format::v1 {

namespace {
constexpr size_t kMetaSize = 57;
constexpr size_t kHeaderSize = 24;
constexpr uint32_t kValueMagic = 0x5644524c;  // "LRDV"
}  // namespace

std::optional<MetaRecord> MetaRecord::Decode(std::string_view bytes) {
  if (bytes.size() != kMetaSize) return std::nullopt;
  const char* p = bytes.data();
  if (TakeLE<uint8_t>(p) != 1) return std::nullopt;
  MetaRecord m;
  m.generation = TakeLE<uint64_t>(p);
  m.value_size = TakeLE<uint64_t>(p);
  m.checksum = TakeLE<uint64_t>(p);
  m.expire_at_ms = TakeLE<int64_t>(p);
  m.created_ms = TakeLE<int64_t>(p);
  m.last_access_ms = TakeLE<int64_t>(p);
  m.reuse_count = TakeLE<uint32_t>(p);
  uint32_t crc = TakeLE<uint32_t>(p);
  if (crc != static_cast<uint32_t>(Checksum(bytes.data(), kMetaSize - 4))) return std::nullopt;
  return m;
}

std::optional<std::string_view> ValueOf(std::string_view record, const MetaRecord& m) {
  if (record.size() < kHeaderSize) return std::nullopt;
  const char* p = record.data();
  if (TakeLE<uint32_t>(p) != kValueMagic || TakeLE<uint16_t>(p) != 1 || TakeLE<uint16_t>(p) != 0) {
    return std::nullopt;
  }
  const uint64_t size = TakeLE<uint64_t>(p);
  const uint64_t checksum = TakeLE<uint64_t>(p);
  if (size != record.size() - kHeaderSize || size != m.value_size || checksum != m.checksum) {
    return std::nullopt;
  }
  return record.substr(kHeaderSize);
}

std::optional<uint64_t> ParseGenerationCfName(std::string_view name) {
  if (name.size() != 4 + 16) return std::nullopt;
  return ParseHex16After(name, "gen-");
}

rocksdb::ColumnFamilyOptions CfOptions() {
  rocksdb::ColumnFamilyOptions cf;
  cf.enable_blob_files = true;
  cf.min_blob_size = 64 * 1024;
  return cf;
}

}  // namespace larder::format::v1
