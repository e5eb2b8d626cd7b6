// Opening and closing a store: RocksDB options, column families, index rebuild.
#include <malloc.h>
#include <pthread.h>
#include <rocksdb/cache.h>
#include <rocksdb/convenience.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/table.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>

#include "format.h"
#include "store_impl.h"

namespace larder {
namespace {

// See Options::tune_allocator. Without mmap, freed multi-MiB buffers return to the heap and
// are reused without page faults; one arena keeps large requests out of the per-thread
// arenas, whose heaps cannot hold them and would fall back to mmap anyway.
void TuneAllocatorOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_TOP_PAD, 64 << 20);
  });
}

rocksdb::ColumnFamilyOptions ValueCfOptions(const Options& o, std::shared_ptr<rocksdb::Cache> c) {
  rocksdb::ColumnFamilyOptions cf;
  cf.enable_blob_files = true;
  cf.min_blob_size = format::kMinBlobBytes;
  cf.blob_file_size = 1ull << 30;
  cf.blob_compression_type = rocksdb::kNoCompression;  // bf16 tensors do not compress (LZ4 1.0x)
  cf.enable_blob_garbage_collection = false;           // space comes back by dropping generations
  cf.write_buffer_size =
      std::max<uint64_t>(8 << 20, std::min<uint64_t>(256 << 20, o.memtable_bytes / 2));
  cf.max_write_buffer_number = 4;
  cf.compression = rocksdb::kLZ4Compression;
  cf.blob_cache = std::move(c);
  return cf;
}

rocksdb::ColumnFamilyOptions MetaCfOptions() {
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = 32 << 20;
  cf.compression = rocksdb::kLZ4Compression;
  return cf;
}

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  std::string msg = what + ": " + s.ToString();
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return Status::Busy(msg + " (is another larder process using this directory?)");
  }
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsNoSpace()) return Status::NoSpace(msg);
  return Status::IOError(msg);
}

// RocksDB's error for an SST file whose footer or properties fail to load at open may name
// the MANIFEST instead: names every table file in `dir` failing its own block checksums.
std::string DamagedTableFiles(const std::string& dir, const rocksdb::DBOptions& db) {
  std::string bad;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    if (f.path().extension() != ".sst") continue;
    rocksdb::SstFileReader reader(rocksdb::Options(db, rocksdb::ColumnFamilyOptions()));
    rocksdb::Status s = reader.Open(f.path().string());
    if (s.ok()) s = reader.VerifyChecksum();
    if (!s.ok()) bad += (bad.empty() ? "" : ", ") + f.path().string();
  }
  return bad.empty() ? "" : " (table files failing their checksums: " + bad + ")";
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const Options& options, const std::string& dir) {
  if (dir.empty()) return Status::InvalidArgument("data directory path is empty");
  if (options.max_reinsert_fraction < 0 || options.max_reinsert_fraction > 1) {
    return Status::InvalidArgument("max_reinsert_fraction must be in [0, 1]");
  }
  if (options.max_key_bytes == 0) return Status::InvalidArgument("max_key_bytes must be > 0");
  auto store = std::make_unique<StoreImpl>(options, dir);
  Status s = store->OpenDb();
  if (!s.ok()) return s;
  return std::unique_ptr<Store>(std::move(store));
}

StoreImpl::StoreImpl(const Options& options, std::string dir)
    : options_(options), dir_(std::move(dir)) {
  if (!options_.clock) options_.clock = SystemClock();
}

StoreImpl::~StoreImpl() {
  Close().PermitUncheckedError();  // a destructor cannot report; callers wanting it call Close()
}

Status StoreImpl::OpenDb() {
  if (options_.tune_allocator) TuneAllocatorOnce();
  std::error_code ec;
  if (options_.create_if_missing) std::filesystem::create_directories(dir_, ec);
  if (ec) return Status::IOError("creating " + dir_ + ": " + ec.message());

  rocksdb::DBOptions db;
  db.create_if_missing = options_.create_if_missing;
  db.create_missing_column_families = true;
  db.atomic_flush = true;  // meta and value of one write reach disk together (WAL off)
  db.max_background_jobs = std::max(2, options_.background_threads);
  db.max_open_files = -1;
  db.keep_log_file_num = 3;
  db.max_manifest_file_size = 64 << 20;
  db.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  db.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  db.max_total_wal_size = options_.memtable_bytes;
  sfm_.reset(rocksdb::NewSstFileManager(rocksdb::Env::Default()));
  db.sst_file_manager = sfm_;
  wbm_ = std::make_shared<rocksdb::WriteBufferManager>(options_.memtable_bytes, nullptr,
                                                       /*allow_stall=*/true);
  db.write_buffer_manager = wbm_;
  if (options_.blob_cache_bytes > 0) {
    blob_cache_ = rocksdb::NewLRUCache(options_.blob_cache_bytes);
  }
  rocksdb::ColumnFamilyOptions value_cf = ValueCfOptions(options_, blob_cache_);

  std::vector<std::string> names;
  rocksdb::Status ls = rocksdb::DB::ListColumnFamilies(db, dir_, &names);
  if (!ls.ok()) names = {rocksdb::kDefaultColumnFamilyName};  // new database
  if (std::find(names.begin(), names.end(), format::kMetaCf) == names.end()) {
    names.push_back(format::kMetaCf);
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const auto& n : names) {
    if (n == format::kMetaCf) {
      descs.emplace_back(n, MetaCfOptions());
    } else if (n == rocksdb::kDefaultColumnFamilyName) {
      descs.emplace_back(n, rocksdb::ColumnFamilyOptions());
    } else if (format::ParseGenerationCfName(n)) {
      descs.emplace_back(n, value_cf);
    } else {
      return Status::Corruption("unexpected column family '" + n + "' in " + dir_ +
                                " (not a larder data directory?)");
    }
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  Status s = FromRocks(rocksdb::DB::Open(db, dir_, descs, &handles, &raw), "opening " + dir_);
  if (s.IsCorruption()) return Status::Corruption(s.message() + DamagedTableFiles(dir_, db));
  if (!s.ok()) return s;
  db_.reset(raw);
  gens_ = std::make_unique<Generations>(db_.get(), value_cf);
  for (size_t i = 0; i < descs.size(); ++i) {
    const std::string& n = descs[i].name;
    if (n == format::kMetaCf) {
      meta_cf_ = handles[i];
    } else if (n == rocksdb::kDefaultColumnFamilyName) {
      default_cf_ = handles[i];
    } else {
      gens_->Adopt(std::make_shared<Generation>(db_.get(), handles[i],
                                                *format::ParseGenerationCfName(n), 0));
    }
  }

  // Format marker: refuse directories written by a newer, incompatible format.
  std::string ver;
  rocksdb::Status vs = db_->Get(rocksdb::ReadOptions(), default_cf_, format::kFormatKey, &ver);
  if (vs.IsNotFound()) {
    db_->Put(rocksdb::WriteOptions(), default_cf_, format::kFormatKey,
             std::to_string(format::kFormatVersion));
  } else if (!vs.ok() || std::stoul("0" + ver) > format::kFormatVersion) {
    Close().PermitUncheckedError();  // the open failed: its error is the one to report
    return Status::NotSupported(dir_ + " has data format '" + ver + "', this build reads up to " +
                                std::to_string(format::kFormatVersion));
  }

  s = DropDamagedGenerations();
  if (!s.ok()) {
    Close().PermitUncheckedError();  // the open failed: its error is the one to report
    return s;
  }

  // Rebuild the index from the meta column family; drop records that cannot be served.
  const int64_t now = Now();
  rocksdb::WriteBatch cleanup;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto m = format::MetaRecord::Decode(it->value().ToStringView());
    if (!m) {
      ++open_corrupt_;
      counters_.corruptions++;
      cleanup.Delete(meta_cf_, it->key());
      continue;
    }
    GenerationPtr g = gens_->Find(m->generation);
    if (!g && damaged_generations_.count(m->generation)) {
      if (++open_damaged_ <= kMaxReportedDamagedKeys) {
        damaged_keys_.push_back("generation " + std::to_string(m->generation) + " key '" +
                                it->key().ToString() + "'");
      }
      counters_.corruptions++;
      cleanup.Delete(meta_cf_, it->key());
      continue;
    }
    if (!g) {
      ++open_orphans_;
      cleanup.Delete(meta_cf_, it->key());
      continue;
    }
    Entry e = Entry::FromMeta(*m);
    if (e.ExpiredAt(now)) {
      cleanup.Delete(meta_cf_, it->key());
      cleanup.Delete(g->cf, it->key());
      counters_.expired_keys++;
      continue;
    }
    std::string_view key = it->key().ToStringView();
    index_.Upsert(KeyHash(key), key, e);
    g->bytes += format::StoredBytes(key.size(), e.value_size);
    if (g->start_ms == 0 || e.created_ms < g->start_ms) g->start_ms = e.created_ms;
  }
  s = FromRocks(it->status(), "reading metadata");
  it.reset();
  if (s.ok() && cleanup.Count() > 0) s = FromRocks(db_->Write(WriteOpts(), &cleanup), "cleanup");
  if (s.ok() && gens_->size() == 0) s = gens_->Rotate(now);
  if (!s.ok()) {
    Close().PermitUncheckedError();  // the open failed: its error is the one to report
    return s;
  }

  budget_ = options_.max_disk_bytes;
  if (budget_ == 0) {
    struct statvfs vfs {};
    if (statvfs(dir_.c_str(), &vfs) != 0) return Status::IOError("statvfs " + dir_);
    uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize + sfm_->GetTotalSize();
    budget_ = avail / 10 * 8;
  }
  generation_bytes_ = options_.generation_bytes;
  if (generation_bytes_ == 0) {
    generation_bytes_ = std::clamp<uint64_t>(budget_ / 16, 64ull << 20, 4ull << 30);
  }
  if (options_.maintenance_interval_ms > 0) {
    maintenance_ = std::thread([this] {
      // Named like RocksDB's own threads ("rocksdb:low"), for top -H and /proc.
      ::pthread_setname_np(::pthread_self(), "larder:maint");
      MaintenanceLoop();
    });
  }
  return Status::OK();
}

Status StoreImpl::DropDamagedGenerations() {
  std::vector<rocksdb::LiveFileMetaData> files;
  db_->GetLiveFilesMetaData(&files);
  rocksdb::Options opts(db_->GetDBOptions(), rocksdb::ColumnFamilyOptions());
  for (const auto& f : files) {
    std::optional<uint64_t> id = format::ParseGenerationCfName(f.column_family_name);
    if (!id || damaged_generations_.count(*id)) continue;
    const std::string path = f.directory + "/" + f.relative_filename;
    rocksdb::SstFileReader reader(opts);
    rocksdb::Status rs = reader.Open(path);
    if (rs.ok()) rs = reader.VerifyChecksum();
    if (rs.ok()) continue;
    damaged_sst_files_.push_back(path + " (" + rs.ToString() + ")");
    damaged_generations_.insert(*id);
  }
  for (uint64_t id : damaged_generations_) {
    Status s = gens_->Drop(id, /*allow_head=*/true);
    if (!s.ok())
      return Status::Corruption("dropping generation " + std::to_string(id) + " of " + dir_ +
                                ", which has a damaged SST file: " + s.message());
  }
  return Status::OK();
}

Status StoreImpl::Close() {
  if (closed_.exchange(true)) return Status::OK();
  {
    std::lock_guard lock(maint_mu_);
    stop_maintenance_ = true;
  }
  maint_cv_.notify_all();
  if (maintenance_.joinable()) maintenance_.join();
  if (!db_) return Status::OK();
  Status s;
  if (meta_cf_) {
    PersistDirty();
    if (!options_.wal) s = Flush();
  }
  if (gens_) gens_->ReleaseAll();
  if (meta_cf_) db_->DestroyColumnFamilyHandle(meta_cf_);
  if (default_cf_) db_->DestroyColumnFamilyHandle(default_cf_);
  meta_cf_ = default_cf_ = nullptr;
  rocksdb::Status cs = db_->Close();
  db_.reset();
  if (s.ok() && !cs.ok()) s = Status::IOError("closing: " + cs.ToString());
  return s;
}

Status StoreImpl::Flush() {
  if (!db_) return Status::IOError("store is closed");
  std::vector<rocksdb::ColumnFamilyHandle*> cfs{meta_cf_, default_cf_};
  auto all = gens_->All();
  for (auto& g : all) cfs.push_back(g->cf);
  rocksdb::FlushOptions fo;
  return FromRocks(db_->Flush(fo, cfs), "flush");
}

Status StoreImpl::Compact() {
  if (Status s = CheckOpen(); !s.ok()) return s;
  PersistDirty();
  rocksdb::CompactRangeOptions co;
  std::vector<GenerationPtr> gens = gens_->All();  // held: a drop cannot free a handle in use
  std::vector<rocksdb::ColumnFamilyHandle*> cfs{meta_cf_};
  for (auto& g : gens) cfs.push_back(g->cf);
  for (auto* cf : cfs) {
    rocksdb::Status s = db_->CompactRange(co, cf, nullptr, nullptr);
    if (!s.ok()) return FromRocks(s, "compacting");
  }
  return Status::OK();
}

void StoreImpl::PersistDirty() {
  std::vector<std::pair<std::string, Entry>> dirty;
  index_.ForEach([&](const std::string& key, Entry& e) {
    if (e.dirty) dirty.emplace_back(key, e);
  });
  PersistEntries(dirty);
}

void StoreImpl::PersistEntries(const std::vector<std::pair<std::string, Entry>>& dirty) {
  for (const auto& [key, e] : dirty) {
    // Under the key's stripe no writer can delete or replace this version between the
    // snapshot and the write, so a deleted key's record is never written back.
    const uint64_t hash = KeyHash(key);
    std::lock_guard stripe(Stripe(hash));
    std::optional<Entry> snapshot;
    index_.UpdateIf(hash, key, e.generation, e.checksum, [&](Entry& x) {
      if (!x.dirty) return;
      snapshot = x;
      x.dirty = false;  // a hit after this point marks it dirty again for the next pass
    });
    if (snapshot && !WriteMeta(key, *snapshot).ok()) {
      // Not persisted: mark it dirty again so that the next pass retries.
      index_.UpdateIf(hash, key, e.generation, e.checksum, [](Entry& x) { x.dirty = true; });
    }
  }
}

rocksdb::WriteOptions StoreImpl::WriteOpts() const {
  rocksdb::WriteOptions wo;
  wo.disableWAL = !options_.wal;
  wo.sync = options_.wal && options_.sync_writes;
  // A write may race with the eviction of the generation holding a key's older version;
  // its tombstone for that dropped generation is then moot, not an error.
  wo.ignore_missing_column_families = true;
  return wo;
}

}  // namespace larder
