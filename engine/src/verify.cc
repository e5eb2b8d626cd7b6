// larder::Verify: every value against its XXH3, every SST of the index against its block
// checksums, and what the open found and dropped.
#include <rocksdb/sst_file_reader.h>

#include <fstream>
#include <iterator>
#include <optional>

#include "format.h"
#include "store_impl.h"

namespace larder {

namespace {

void AddProblem(VerifyReport* r, std::string line) {
  if (r->problems.size() < 1000) r->problems.push_back(std::move(line));
}

// Checks every block of every live SST file; adds the bad files to `r`.
void VerifySstFiles(rocksdb::DB* db, VerifyReport* r) {
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  rocksdb::Options opts(db->GetDBOptions(), rocksdb::ColumnFamilyOptions());
  for (const auto& f : files) {
    r->sst_files++;
    const std::string path = f.directory + "/" + f.relative_filename;
    rocksdb::SstFileReader reader(opts);
    rocksdb::Status s = reader.Open(path);
    if (s.ok()) s = reader.VerifyChecksum();
    if (s.ok()) continue;
    r->corrupt_sst_files++;
    AddProblem(r,
               "file " + path + " (column family " + f.column_family_name + "): " + s.ToString());
  }
}

// RocksDB's log format, which the MANIFEST is written in: 32 KiB blocks of records, each a
// 7-byte header (masked CRC32C, little-endian length, type) and its payload, never crossing a
// block; a block's last bytes, when fewer than a header, are zero. Types: 1 a whole record, 2/3/4
// the first/middle/last fragment of one.
constexpr size_t kLogBlock = 32768;
constexpr size_t kLogHeader = 7;

// Where the records of the log file `bytes` stop parsing, or nullopt if they all do. RocksDB's
// recovery takes a record that runs past the end of the file, a header cut short there or a
// fragment left open for a write torn by a crash, and drops it and every edit after it without
// a word: a flipped length or type byte in the MANIFEST's last records rolls the index back to
// an older state (generations and flushes forgotten) while the open succeeds. A bad CRC it
// reports itself; this walk finds what it takes for a torn tail.
std::optional<std::string> LogDamage(const std::string& bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t size = bytes.size();
  bool in_fragment = false;
  for (size_t off = 0; off < size;) {
    auto at = [&off] { return " at offset " + std::to_string(off); };
    const size_t block_left = kLogBlock - off % kLogBlock;
    if (block_left < kLogHeader) {
      for (size_t i = off; i < std::min(size, off + block_left); ++i) {
        if (p[i]) return "non-zero block trailer" + at();
      }
      off += block_left;
      continue;
    }
    if (size - off < kLogHeader) return "record header cut short by the end of the file" + at();
    const size_t len = p[off + 4] | (size_t{p[off + 5]} << 8);
    const int type = p[off + 6];
    if (type == 0 && len == 0) {  // zero-filled space at the end (preallocation)
      for (size_t i = off; i < size; ++i) {
        if (p[i]) return "data after zero-filled space" + at();
      }
      break;
    }
    if (kLogHeader + len > block_left) return "record crossing its block" + at();
    if (off + kLogHeader + len > size) return "record running past the end of the file" + at();
    const bool starts = type == 1 || type == 2, continues = type == 3 || type == 4;
    if (!starts && !continues) return "unknown record type " + std::to_string(type) + at();
    if (starts == in_fragment) return "fragment out of sequence" + at();
    in_fragment = type == 2 || type == 3;
    off += kLogHeader + len;
  }
  if (in_fragment) return std::string("last record's fragments incomplete");
  return std::nullopt;
}

// The MANIFEST that CURRENT names, checked as above (before an open replaces it).
std::optional<std::string> ManifestDamage(const std::string& dir) {
  std::ifstream current(dir + "/CURRENT");
  std::string name;
  if (!std::getline(current, name) || name.empty()) return std::nullopt;  // the open reports it
  std::ifstream f(dir + "/" + name, std::ios::binary);
  if (!f) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto damage = LogDamage(bytes);
  if (!damage) return std::nullopt;
  return name + ": " + *damage +
         "; the index edits from there on were lost (damaged, or torn by a power cut)";
}

}  // namespace

VerifyReport StoreImpl::VerifyAll(void (*progress)(uint64_t, uint64_t, void*), void* arg) {
  VerifyReport r;
  r.corrupt = found_.corrupt_records + found_.damaged_generations.size();
  r.missing = found_.lost_writes;
  r.corrupt_sst_files = found_.damaged_sst_files.size();
  for (const std::string& f : found_.damaged_sst_files) {
    AddProblem(&r, f + ": failed its block checksums at open; its generation was dropped");
  }
  for (const std::string& f : found_.damaged_files) {
    AddProblem(&r, f + ": not a readable blob file; its values were dropped");
  }
  if (found_.corrupt_records) {
    AddProblem(&r, std::to_string(found_.corrupt_records) + " unreadable index records");
  }
  if (found_.lost_writes) {
    AddProblem(&r, std::to_string(found_.lost_writes) +
                       " index records whose values never reached the disk");
  }
  for (const std::string& k : found_.dropped_keys) AddProblem(&r, k);
  const uint64_t total = index_.size();
  r.entries = total + r.corrupt + r.missing;
  uint64_t done = 0;
  std::vector<char> buf;
  for (const GenerationPtr& g : gens_->All()) {
    ForEachRecord(*g, [&](RecordMember m) {
      buf.resize(m.at.entry.size);
      Status s = ReadVerified(m.hash, m.key, m.at, buf.data(), /*allow_direct=*/false);
      if (s.ok()) {
        r.ok++;
      } else {
        (s.IsNotFound() ? r.missing : r.corrupt)++;
        AddProblem(&r, "generation " + std::to_string(g->id) + " key '" + m.key +
                           "': " + (s.message().empty() ? "value missing" : s.message()));
      }
      ++done;
      if (progress && (done % 64 == 0 || done == total)) progress(done, total, arg);
    });
  }
  VerifySstFiles(db_.get(), &r);
  return r;
}

Result<VerifyReport> Verify(const std::string& dir, void (*progress)(uint64_t, uint64_t, void*),
                            void* arg) {
  Options o;
  o.create_if_missing = false;
  o.maintenance_interval_ms = 0;
  o.max_disk_bytes = ~0ull >> 2;
  std::optional<std::string> manifest = ManifestDamage(dir);
  StoreImpl store(o, dir);
  if (Status s = store.OpenDb(); !s.ok()) return s;
  VerifyReport r = store.VerifyAll(progress, arg);
  if (manifest) {
    r.damaged_manifests++;
    AddProblem(&r, *manifest);
  }
  return r;
}

}  // namespace larder
