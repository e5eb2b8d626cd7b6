// On-disk formats of the engine (data format 3). All integers are little-endian unless noted.
//
// A data directory holds:
//   RocksDB (the index):
//     "default"            kFormatKey -> the data format version ("3");
//                          kWalAnchorKey -> "" (StoreImpl::RocksWrite; meaningless on disk).
//     "idx-<16 hex>"       one column family per generation: IndexKey(key) -> IndexRecord.
//   values/gen-<16 hex>-<2 hex>.lbv
//                          the generation's blob files ("partitions"): a 4 KiB BlobFileHeader,
//                          then values, each starting at a multiple of kValueAlign. Append-only;
//                          a dropped value's blocks may be freed in place (a hole reads as
//                          zeros), and a file outlives its generation while records of later
//                          generations point into it (entries kept in place by eviction).
//
// Format 3 differs from 2 only in that an index record may name a blob file of an earlier
// generation than its own; a format-2 directory is a valid format-3 one (the open rewrites the
// version), and a build that reads only format 2 refuses a format-3 directory.
//
// Values smaller than kMinBlobBytes live inside their IndexRecord; larger ones in a blob file.
// A value is trusted only if XXH3 of the bytes read matches the record's value_hash; a record
// pointing past the end of its file is a write that never became durable (a miss, not damage).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct XXH3_state_s;  // xxhash.h

namespace larder::format {

inline constexpr char kFormatKey[] = "larder.format";
inline constexpr char kWalAnchorKey[] = "larder.wal-anchor";
inline constexpr uint32_t kFormatVersion = 3;
// The blob file header's own version (unchanged since data format 2).
inline constexpr uint32_t kBlobFileVersion = 2;
inline constexpr char kIndexCfPrefix[] = "idx-";
inline constexpr char kValuesDir[] = "values";

// Values at least this large go to blob files; smaller ones stay inside the index record.
inline constexpr uint64_t kMinBlobBytes = 16 * 1024;
// Every value in a blob file starts at a multiple of this (direct I/O's alignment).
inline constexpr uint64_t kValueAlign = 4096;
// Largest value the format can address (the in-memory index keeps sizes in 32 bits).
inline constexpr uint64_t kMaxValueBytes = (1ull << 32) - 1;

inline constexpr uint64_t AlignUp(uint64_t n, uint64_t a = kValueAlign) {
  return (n + a - 1) / a * a;
}

// 64-bit XXH3 of `data` (runtime-dispatched to the widest SIMD the CPU has).
uint64_t Checksum(const char* data, size_t n);
inline uint64_t Checksum(std::string_view s) {
  return Checksum(s.data(), s.size());
}
// Checksum() of bytes that arrive in pieces: Update() each piece in order, then Digest() equals
// Checksum() of their concatenation.
class ChecksumStream {
 public:
  ChecksumStream();
  ~ChecksumStream();
  ChecksumStream(const ChecksumStream&) = delete;
  ChecksumStream& operator=(const ChecksumStream&) = delete;
  void Update(const char* data, size_t n);
  uint64_t Digest() const;

 private:
  ::XXH3_state_s* state_;
};
// The key's 64-bit hash: the in-memory index's identity of a key, never 0.
uint64_t KeyHash(std::string_view key);
// Tests only: replaces KeyHash's function for the whole process (nullptr restores it), so that
// tests can make keys collide.
void SetKeyHashForTesting(uint64_t (*fn)(std::string_view));
// A second, independent 64-bit hash of the key. The in-memory index keeps value_hash ^ KeyTag
// so that a read verifies both the bytes and that they belong to the key asked for, even when
// two keys share a KeyHash.
uint64_t KeyTag(std::string_view key);

// RocksDB key of a record: the KeyHash big-endian (so iteration runs in hash order, which is
// SCAN's cursor order), then the key.
std::string IndexKey(uint64_t hash, std::string_view key);
inline constexpr size_t kIndexKeyPrefix = 8;
// Splits an IndexKey; nullopt if it is too short.
std::optional<std::pair<uint64_t, std::string_view>> ParseIndexKey(std::string_view ik);

// Where a value lives and how it has been used: the durable copy of an in-memory index slot.
struct IndexRecord {
  static constexpr uint8_t kVersion = 2;
  static constexpr size_t kFixedSize = 68;     // without the inline value
  static constexpr size_t kInlineOffset = 64;  // where an inline value starts

  // The blob file holding the value: generation `generation`'s partition `partition`. The
  // record's own generation (its column family) or, for an entry kept in place by eviction, an
  // earlier one. An inline value names the record's own generation (partition unused).
  uint64_t generation = 0;
  uint16_t partition = 0;
  uint64_t offset = 0;  // in the blob file (unused for inline values)
  uint64_t value_size = 0;
  uint64_t value_hash = 0;  // XXH3 of the value bytes
  int64_t expire_at_ms = 0;
  int64_t created_ms = 0;
  int64_t last_access_ms = 0;
  uint32_t reuse_count = 0;
  bool is_inline = false;
  std::string_view inline_value;  // Decode: points into the decoded bytes

  // Encodes the record; `inline_value` is appended when is_inline.
  std::string Encode() const;
  // nullopt if the bytes are malformed or the record's own checksum does not match.
  static std::optional<IndexRecord> Decode(std::string_view bytes);
};

// Bytes a value occupies on disk: padded to kValueAlign in a blob file, or inside its record.
inline constexpr uint64_t StoredBytes(size_t key_size, uint64_t value_size) {
  return value_size >= kMinBlobBytes
             ? AlignUp(value_size)
             : IndexRecord::kFixedSize + kIndexKeyPrefix + key_size + value_size;
}

// The first kValueAlign bytes of every blob file.
struct BlobFileHeader {
  static constexpr char kMagic[8] = {'L', 'R', 'D', 'R', 'B', 'L', 'B', '2'};
  uint64_t generation = 0;
  uint16_t partition = 0;
  int64_t created_ms = 0;

  // kValueAlign bytes.
  std::string Encode() const;
  static std::optional<BlobFileHeader> Decode(std::string_view bytes);
};

// "idx-000000000000002a" <-> 42.
std::string IndexCfName(uint64_t generation);
std::optional<uint64_t> ParseIndexCfName(std::string_view name);
// "gen-000000000000002a-03.lbv" <-> (42, 3).
std::string BlobFileName(uint64_t generation, uint16_t partition);
std::optional<std::pair<uint64_t, uint16_t>> ParseBlobFileName(std::string_view name);

// Parses "gen-<16 hex>" style names: `prefix` then exactly 16 lowercase hex digits.
std::optional<uint64_t> ParseHex16After(std::string_view name, std::string_view prefix);

}  // namespace larder::format
