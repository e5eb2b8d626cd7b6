// The MANIFEST's records, checked before RocksDB reads them.
//
// RocksDB's recovery takes a MANIFEST record that runs past the end of the file, a header cut
// short there, or a fragment left open as the tail of a write torn by a crash: it drops that
// record and every edit after it without a word and opens. A torn tail can hold only the last
// edit, which was never acknowledged, so nothing is lost. But a flipped length byte in an earlier
// record looks the same to RocksDB and rolls the index back to an old state (generations and
// flushes forgotten). The check below tells the two apart: a write torn by a crash is the last
// write, so a whole record with a valid checksum after the break means the file was damaged.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace larder {

// Where the records of a RocksDB log file stop parsing.
struct LogBreak {
  uint64_t offset = 0;  // of the record (or block trailer) that does not parse
  std::string what;     // why, e.g. "record running past the end of the file"
  // A whole record with a valid CRC32C lies after `offset`: the file was written past the break,
  // so the break is damage, not a torn tail.
  bool records_follow = false;
};

// The first place where `bytes`, a file in RocksDB's log format, stops parsing; nullopt if every
// record parses to the end (or to zero-filled preallocated space). Checksums of the records
// before the break are RocksDB's to check; the ones after it are checked to set records_follow.
std::optional<LogBreak> FindLogBreak(std::string_view bytes);

// The MANIFEST that `dir`/CURRENT names, checked as above.
struct ManifestBreak {
  std::string file;  // the MANIFEST's name, e.g. "MANIFEST-000042"
  LogBreak at;

  // "MANIFEST-000042: record running past the end of the file at offset 126, with whole
  // records after it: ..." -- what it means for the index, for a log line or a verify report.
  std::string Describe() const;
};

// nullopt when CURRENT or its MANIFEST cannot be read (the open reports that) or parses whole.
std::optional<ManifestBreak> CheckManifest(const std::string& dir);

}  // namespace larder
