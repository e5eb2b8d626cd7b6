// Data format 1 (values inside RocksDB's integrated blob files), read only to convert an
// existing directory to format 2 at open (convert_v1.cc). Nothing writes it any more.
//
//   "meta"           key -> MetaRecord (57 bytes)
//   "gen-<16 hex>"   key -> ValueHeader (24 bytes) + value bytes
#pragma once

#include <rocksdb/options.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace larder::format::v1 {

inline constexpr char kMetaCf[] = "meta";

struct MetaRecord {
  uint64_t generation = 0;
  uint64_t value_size = 0;
  uint64_t checksum = 0;  // XXH3 of the value
  int64_t expire_at_ms = 0;
  int64_t created_ms = 0;
  int64_t last_access_ms = 0;
  uint32_t reuse_count = 0;

  // nullopt if malformed or its own checksum does not match.
  static std::optional<MetaRecord> Decode(std::string_view bytes);
};

// The value bytes of a stored "gen-" record if its header is intact and agrees with `m`.
std::optional<std::string_view> ValueOf(std::string_view record, const MetaRecord& m);

// "gen-000000000000002a" -> 42.
std::optional<uint64_t> ParseGenerationCfName(std::string_view name);

// Options to open format 1's column families with (to read them).
rocksdb::ColumnFamilyOptions CfOptions();

}  // namespace larder::format::v1
