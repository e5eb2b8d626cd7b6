// At open: before RocksDB, sync the value files an earlier process left; after it, check the
// index's SST files, attach the blob files to their generations, and rebuild the in-memory
// index from the records.
#include <fcntl.h>
#include <malloc.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "format.h"
#include "store_impl.h"

namespace larder {

std::string StoreImpl::DamagedTableFiles(const rocksdb::DBOptions& db) const {
  std::string bad;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir_, ec)) {
    if (f.path().extension() != ".sst") continue;
    rocksdb::SstFileReader reader(rocksdb::Options(db, rocksdb::ColumnFamilyOptions()));
    rocksdb::Status s = reader.Open(f.path().string());
    if (s.ok()) s = reader.VerifyChecksum();
    if (!s.ok()) bad += (bad.empty() ? "" : ", ") + f.path().string();
  }
  return bad.empty() ? "" : " (table files failing their checksums: " + bad + ")";
}

Status StoreImpl::DropDamagedGenerations() {
  std::vector<rocksdb::LiveFileMetaData> files;
  db_->GetLiveFilesMetaData(&files);
  rocksdb::Options opts(db_->GetDBOptions(), rocksdb::ColumnFamilyOptions());
  for (const auto& f : files) {
    std::optional<uint64_t> id = format::ParseIndexCfName(f.column_family_name);
    if (!id || found_.damaged_generations.count(*id)) continue;
    const std::string path = f.directory + "/" + f.relative_filename;
    rocksdb::SstFileReader reader(opts);
    rocksdb::Status rs = reader.Open(path);
    if (rs.ok()) rs = reader.VerifyChecksum();
    if (rs.ok()) continue;
    if (!rs.IsCorruption()) {
      // A compaction that started with the open may have replaced the file meanwhile: gone is
      // not damaged (its records live on in the compaction's output). Any other failure to
      // read it (too many open files, EIO) says nothing of its records: the open fails.
      std::error_code ec;
      if (!std::filesystem::exists(path, ec) && !ec) continue;
      return Status::IOError("checking the index file " + path + ": " + rs.ToString());
    }
    found_.damaged_sst_files.push_back(path + " (" + rs.ToString() + ")");
    found_.damaged_generations.insert(*id);
  }
  // Debian's librocksdb, built with assertions, aborts on a malformed block: a generation
  // whose index is damaged is dropped unread, values and all.
  for (uint64_t id : found_.damaged_generations) {
    GenerationPtr g = gens_->Find(id);
    if (!g) continue;
    counters_.corruptions++;
    if (options_.read_only) {  // left out, and left on disk
      gens_->Release(g, /*unlink_files=*/false);
      continue;
    }
    if (Status s = DropGeneration(g, [] {}); !s.ok()) {
      return Status::Corruption("dropping generation " + std::to_string(id) + " of " + dir_ +
                                ", which has a damaged SST file: " + s.message());
    }
  }
  return Status::OK();
}

Status StoreImpl::SyncLeftValueFiles() {
  const std::string dir = ValuesDir();
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    if (!format::ParseBlobFileName(f.path().filename().string())) continue;  // not ours
    const int fd = ::open(f.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || ::fdatasync(fd) != 0) {
      // A writeback error the kernel kept for the next opener, or EMFILE (which the open of
      // the blob files reports): their reads are checked as always.
      rocksdb::Log(rocksdb::InfoLogLevel::ERROR_LEVEL, info_log_, "syncing %s: %s",
                   f.path().c_str(), std::strerror(errno));
    }
    if (fd >= 0) ::close(fd);
  }
  if (ec == std::errc::no_such_file_or_directory) return Status::OK();  // a format-1 store
  if (ec) return Status::IOError("listing " + dir + ": " + ec.message());
  return BlobFile::SyncDirectory(dir);
}

Status StoreImpl::LoadBlobFiles() {
  const std::string dir = gens_->values_dir();
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    auto name = format::ParseBlobFileName(f.path().filename().string());
    if (!name) continue;  // not ours
    GenerationPtr g = gens_->Find(name->first);
    if (g && g->HasPartition(name->second)) continue;  // created by this open (a conversion)
    auto file = BlobFile::Open(f.path().string(), /*writable=*/!options_.read_only);
    if (!file.ok() && !file.status().IsCorruption()) {
      // Could not be read (too many open files, EIO, ...): nothing is known to be wrong with
      // it, and its values must not be dropped for that. The open fails, naming it.
      return Status::IOError("opening the store's value files: " + file.status().message());
    }
    if (file.ok() && (*file)->header().generation == name->first &&
        (*file)->header().partition == name->second) {
      // A file of a dropped generation stays while records of later ones may point into it
      // (entries kept in place); LoadIndex unlinks it if none does.
      g ? gens_->AttachFile(*g, std::move(file).value())
        : gens_->AdoptOrphan(std::move(file).value());
      continue;
    }
    const bool damaged = f.file_size(ec) >= format::kValueAlign;
    if (damaged) {
      found_.damaged_files.push_back(f.path().string() + " (bad header)");
      found_.damaged_partitions.insert(*name);
    }
    // Shorter than its header: its creation never became durable (a power cut), and its
    // records' values with it: lost writes, not damage. A header that reads whole but is not
    // this file's: its values cannot be trusted.
    if (!options_.read_only) {
      rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, info_log_, "removing %s: %s",
                   f.path().c_str(),
                   damaged ? "its header is damaged" : "shorter than its header (never durable)");
      std::filesystem::remove(f.path(), ec);
    }
  }
  if (ec) return Status::IOError("listing " + dir + ": " + ec.message());
  return Status::OK();
}

void StoreImpl::NoteDroppedKey(uint64_t gen, std::string_view key, const char* why) {
  if (found_.dropped_keys.size() >= 1000) return;
  found_.dropped_keys.push_back("generation " + std::to_string(gen) + " key '" + std::string(key) +
                                "': " + why);
}

void StoreImpl::LoadRecord(Generation& g, std::string_view ik_bytes, std::string_view value,
                           int64_t now, rocksdb::WriteBatch* cleanup) {
  auto ik = format::ParseIndexKey(ik_bytes);
  auto rec = format::IndexRecord::Decode(value);
  if (!ik || !rec) {
    found_.corrupt_records++;
    counters_.corruptions++;
    cleanup->Delete(g.cf, rocksdb::Slice(ik_bytes.data(), ik_bytes.size()));
    return;
  }
  if (rec->expire_at_ms != 0 && rec->expire_at_ms <= now) {
    counters_.expired_keys++;
    cleanup->Delete(g.cf, rocksdb::Slice(ik_bytes.data(), ik_bytes.size()));
    const BlobFilePtr f = rec->is_inline ? nullptr : gens_->FileOf(rec->generation, rec->partition);
    if (f) found_.unnamed_ranges.push_back({f, rec->offset, rec->value_size});
    return;
  }
  Entry e;
  e.hash = ik->first;
  e.check = rec->value_hash ^ format::KeyTag(ik->second);
  e.size = static_cast<uint32_t>(rec->value_size);
  e.expire_at_ms = rec->expire_at_ms;
  e.last_access_ms = rec->last_access_ms;
  e.access_gen = static_cast<uint16_t>(g.id);
  e.reuse = static_cast<uint8_t>(std::min<uint32_t>(rec->reuse_count, 255));
  if (rec->is_inline) {
    e.seg = g.inline_seg;
    e.flags = Entry::kInline;
  } else {
    // The file is this generation's, or an earlier one's for an entry kept in place.
    const BlobFilePtr f = gens_->FileOf(rec->generation, rec->partition);
    if (!f || rec->offset + rec->value_size > f->end()) {
      cleanup->Delete(g.cf, rocksdb::Slice(ik_bytes.data(), ik_bytes.size()));
      if (found_.damaged_partitions.count({rec->generation, rec->partition})) {
        found_.corrupt_records++;
        counters_.corruptions++;
        NoteDroppedKey(g.id, ik->second, "its blob file is damaged");
      } else {
        // The record became durable but its value did not (a power cut with the WAL on and
        // wal-sync off): the write is lost, nothing is damaged.
        found_.lost_writes++;
        NoteDroppedKey(g.id, ik->second, "value missing (never reached the disk)");
      }
      return;
    }
    if (f->Freed(rec->offset, rec->value_size)) {
      // Its bytes were given back (replaced, deleted, expired or evicted) and the crash forgot
      // the record's removal: the version is gone, nothing is damaged.
      cleanup->Delete(g.cf, rocksdb::Slice(ik_bytes.data(), ik_bytes.size()));
      return;
    }
    e.seg = gens_->Borrow(g, f);
    e.offset = rec->offset;
  }
  IndexLoaded(e, ik->second, cleanup);
  g.live++;
  if (g.start_ms == 0 || rec->created_ms < g.start_ms) g.start_ms = rec->created_ms;
}

void StoreImpl::IndexLoaded(const Entry& e, std::string_view key, rocksdb::WriteBatch* cleanup) {
  // Generations load oldest first, so a key found again is a newer version (left behind by
  // a crash between writes that normally delete the older record in the same batch): the
  // older record goes, and its value's range with it.
  std::optional<Located> older = LookupExact(e.hash, key);
  if (!older) return index_.Insert(e);
  if (index_.Replace(older->entry, e) && older->seg.gen) older->seg.gen->live--;
  if (older->seg.gen) cleanup->Delete(older->seg.gen->cf, format::IndexKey(e.hash, key));
  const bool same_range = older->seg.file && older->seg.file == gens_->SegmentOf(e.seg).file &&
                          older->entry.offset == e.offset;
  if (older->seg.file && !same_range) {
    found_.unnamed_ranges.push_back({older->seg.file, older->entry.offset, older->entry.size});
  }
}

Status StoreImpl::LoadIndex() {
  const int64_t now = NowMs();
  for (const GenerationPtr& g : gens_->All()) {
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;
    ro.readahead_size = 2 << 20;
    rocksdb::WriteBatch cleanup;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, g->cf));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      LoadRecord(*g, it->key().ToStringView(), it->value().ToStringView(), now, &cleanup);
    }
    if (!it->status().ok()) {
      return Status::Corruption("reading the index of generation " + std::to_string(g->id) + ": " +
                                it->status().ToString());
    }
    it.reset();
    if (cleanup.Count() > 0 && !options_.read_only) {
      rocksdb::Status ws = RocksWrite(WriteOpts(), &cleanup);
      if (!ws.ok()) return Status::IOError("cleaning the index: " + ws.ToString());
    }
  }
  if (!options_.read_only) {
    // The values of the records removed above, which nothing names now (their removal reaches
    // disk later: a record a crash brings back points into a hole, and the next open drops it).
    for (const Generation::Extent& x : found_.unnamed_ranges) gens_->Punch(x);
    // A crash between a drop and its punches left ranges of the kept files no record names.
    const std::vector<BlobFilePtr> kept = gens_->DropUnheldOrphans();
    if (!kept.empty()) PunchAroundLive(gens_->SegmentsOf(kept));
  }
  found_.unnamed_ranges = {};
  index_.ShrinkToFit();
  malloc_trim(0);  // what the load allocated for a while goes back to the system
  return Status::OK();
}

}  // namespace larder
