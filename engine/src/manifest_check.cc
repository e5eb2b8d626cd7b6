#include "manifest_check.h"

#include <rocksdb/file_checksum.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "le_coding.h"

namespace larder {
namespace {

// RocksDB's log format, which the MANIFEST is written in: 32 KiB blocks of records, each a
// 7-byte header (masked CRC32C of the type and payload, little-endian length, type) and its
// payload, never crossing a block; a block's last bytes, when fewer than a header, are zero.
// Types: 1 a whole record, 2/3/4 the first/middle/last fragment of one.
constexpr size_t kLogBlock = 32768;
constexpr size_t kLogHeader = 7;

// The length and type in the header of the record at `off` (its CRC is checked apart).
struct RecordHeader {
  size_t len;
  int type;
};
RecordHeader HeaderAt(const unsigned char* p, size_t off) {
  const char* len = reinterpret_cast<const char*>(p + off + 4);
  return {format::TakeLE<uint16_t>(len), p[off + 6]};
}

// CRC32C of `n` bytes, by RocksDB's own (hardware-accelerated) implementation, which it offers
// publicly as a file checksum generator; the checksum comes back as 4 big-endian bytes.
uint32_t Crc32c(const unsigned char* data, size_t n) {
  static const std::shared_ptr<rocksdb::FileChecksumGenFactory> factory =
      rocksdb::GetFileChecksumGenCrc32cFactory();
  auto gen = factory->CreateFileChecksumGenerator(rocksdb::FileChecksumGenContext());
  gen->Update(reinterpret_cast<const char*>(data), n);
  gen->Finalize();
  const std::string be = gen->GetChecksum();
  uint32_t crc = 0;
  for (unsigned char c : be) crc = crc << 8 | c;
  return crc;
}

// RocksDB stores CRCs masked (rotated and offset), so a CRC of data holding CRCs stays strong.
uint32_t MaskCrc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

// Whether a whole record with a valid checksum starts at `off`.
bool ValidRecordAt(const unsigned char* p, size_t size, size_t off) {
  const size_t block_left = kLogBlock - off % kLogBlock;
  if (block_left < kLogHeader || size - off < kLogHeader) return false;
  const RecordHeader h = HeaderAt(p, off);
  if (h.type < 1 || h.type > 4 || kLogHeader + h.len > block_left ||
      off + kLogHeader + h.len > size) {
    return false;
  }
  const char* stored_crc = reinterpret_cast<const char*>(p + off);
  return MaskCrc(Crc32c(p + off + 6, 1 + h.len)) == format::TakeLE<uint32_t>(stored_crc);
}

// Whether a valid record starts anywhere after `from`: at each offset of its block, then at the
// start of every later block (a record never crosses a block, so each block opens with one).
bool RecordsFollow(const unsigned char* p, size_t size, size_t from) {
  const size_t block_end = std::min(size, (from / kLogBlock + 1) * kLogBlock);
  for (size_t off = from + 1; off < block_end; ++off) {
    if (ValidRecordAt(p, size, off)) return true;
  }
  for (size_t off = block_end; off < size; off += kLogBlock) {
    if (ValidRecordAt(p, size, off)) return true;
  }
  return false;
}

// The break itself: what RocksDB's reader would take for the end of the log, or reject.
std::optional<LogBreak> FirstBreak(const unsigned char* p, size_t size) {
  bool in_fragment = false;
  for (size_t off = 0; off < size;) {
    auto at = [&off](std::string what) { return LogBreak{off, std::move(what), false}; };
    const size_t block_left = kLogBlock - off % kLogBlock;
    if (block_left < kLogHeader) {
      for (size_t i = off; i < std::min(size, off + block_left); ++i) {
        if (p[i]) return at("non-zero block trailer");
      }
      off += block_left;
      continue;
    }
    if (size - off < kLogHeader) return at("record header cut short by the end of the file");
    const auto [len, type] = HeaderAt(p, off);
    if (type == 0 && len == 0) {  // zero-filled space at the end (preallocation)
      for (size_t i = off; i < size; ++i) {
        if (p[i]) return at("data after zero-filled space");
      }
      return std::nullopt;
    }
    if (kLogHeader + len > block_left) return at("record crossing its block");
    if (off + kLogHeader + len > size) return at("record running past the end of the file");
    const bool starts = type == 1 || type == 2, continues = type == 3 || type == 4;
    if (!starts && !continues) return at("unknown record type " + std::to_string(type));
    if (starts == in_fragment) return at("fragment out of sequence");
    in_fragment = type == 2 || type == 3;
    off += kLogHeader + len;
  }
  if (in_fragment) return LogBreak{size, "last record's fragments incomplete", false};
  return std::nullopt;
}

}  // namespace

std::optional<LogBreak> FindLogBreak(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::optional<LogBreak> b = FirstBreak(p, bytes.size());
  if (b) b->records_follow = RecordsFollow(p, bytes.size(), b->offset);
  return b;
}

std::string ManifestBreak::Describe() const {
  std::string s = file + ": " + at.what + " at offset " + std::to_string(at.offset);
  if (at.records_follow) {
    return s +
           ", with whole records after it: the MANIFEST is damaged (a write torn by a crash "
           "leaves nothing after it), and opening it would forget the index edits from there "
           "on";
  }
  return s +
         ", the end of the file: the tail of a write torn by a crash (or damage there); "
         "the index edit in it is dropped";
}

std::optional<ManifestBreak> CheckManifest(const std::string& dir) {
  std::ifstream current(dir + "/CURRENT");
  std::string name;
  if (!std::getline(current, name) || name.empty()) return std::nullopt;
  std::ifstream f(dir + "/" + name, std::ios::binary);
  if (!f) return std::nullopt;
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::optional<LogBreak> at = FindLogBreak(bytes);
  if (!at) return std::nullopt;
  return ManifestBreak{name, std::move(*at)};
}

}  // namespace larder
