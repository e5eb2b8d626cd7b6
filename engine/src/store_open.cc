// Opening and closing a store: sizes from the budget, RocksDB options, the column families,
// then (store_load.cc) the blob files and the in-memory index.
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/table.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <string>

#include "format.h"
#include "format_v1.h"
#include "info_log.h"
#include "manifest_check.h"
#include "rocks_status.h"
#include "store_impl.h"
#include "testing.h"

namespace larder {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;
// Background value writes in flight at once (each one large, O_DIRECT: the disk's queue). WAL
// off, each generation spreads its values over this many blob files: a file's appends go one
// at a time (writes past a file's end hold its inode lock for their whole duration), so the
// writers keep this many in flight only if they append to different files.
constexpr int kValueWriterThreads = 4;

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

rocksdb::ColumnFamilyOptions IndexCfOptions(uint64_t memtable_bytes) {
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = std::clamp<uint64_t>(memtable_bytes / 2, 4 * kMiB, 128 * kMiB);
  cf.max_write_buffer_number = 4;
  // Memtables allocate in blocks of this size, and the allocation counts against the disk budget
  // until the flush (BudgetUsage): with many generations' families written at once (eviction
  // moves records into the generation of their last use), the default (write_buffer_size/8)
  // would hold megabytes per family for a few records each.
  cf.arena_block_size = 16 * 1024;
  cf.compression = rocksdb::kLZ4Compression;
  rocksdb::BlockBasedTableOptions t;
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  // The table readers keep every SST's index block in memory: 16 KiB data blocks make it a
  // quarter of 4 KiB ones (~1.5 bytes per key instead of ~6), where point lookups are rare
  // (writes confirming a key, inline values) and scans read blocks whole anyway.
  t.block_size = 16 * 1024;
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return cf;
}

// FromRocks, and Busy where another process holds the directory's lock.
Status OpenFailed(const rocksdb::Status& s, const std::string& what) {
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return Status::Busy(what + ": " + s.ToString() +
                        " (is another larder process using this directory?)");
  }
  return FromRocks(s, what);
}

// Bytes of the files under `dir` (what the store already uses of the filesystem).
uint64_t DirectoryBytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) n += it->file_size(ec);
  }
  return n;
}

// Before RocksDB flushes index records, the blob files they point into are made durable, so
// that even with the WAL off a record on disk never points at bytes that are not. Counts the
// memtables sealed: RocksDB calls OnMemTableSealed while writers are held off, so an index
// write that reads the same count before and after went into the same memtable as every other
// write in between (with atomic_flush, all reach disk together or none do).
class SyncValuesBeforeFlush : public rocksdb::EventListener {
 public:
  SyncValuesBeforeFlush(std::function<void()> sync, std::atomic<uint64_t>* seals)
      : sync_(std::move(sync)), seals_(seals) {}
  void OnFlushBegin(rocksdb::DB*, const rocksdb::FlushJobInfo&) override { sync_(); }
  void OnMemTableSealed(const rocksdb::MemTableInfo&) override { seals_->fetch_add(1); }

 private:
  std::function<void()> sync_;
  std::atomic<uint64_t>* seals_;
};

// RocksDB 7.8's own recovery from a full disk (its SstFileManager polling the free space every
// 5 s) can stop for good with atomic_flush: a flush that ran meanwhile and succeeded once space
// returned is dropped without giving back its memtables, and the recovery waits for them
// forever, every write refused (fixed upstream in 8.7.3, PR 11872). So it is off for NoSpace,
// and so is its resume of retryable errors (DbOptions): the store resumes the index itself
// (StoreImpl::ResumeIndex), with no flush of its own beside it. Each error is recorded in
// `errors` (IndexErrors::Record says what each kind stops), with the WAL file then current.
class ResumeIndexItself : public rocksdb::EventListener {
 public:
  ResumeIndexItself(IndexErrors* errors, const std::atomic<uint64_t>* seals)
      : errors_(errors), seals_(seals) {}
  void OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status* error) override {
    errors_->Record(reason, *error, seals_->load());
  }
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status error,
                            bool* auto_recovery) override {
    if (error.IsNoSpace()) *auto_recovery = false;
  }

 private:
  IndexErrors* errors_;
  const std::atomic<uint64_t>* seals_;
};

}  // namespace

namespace {

// InvalidArgument for a size option set below `floor` (0 = derived from the budget).
Status CheckSizeFloor(const char* field, uint64_t value, uint64_t floor) {
  if (value == 0 || value >= floor) return Status::OK();
  return Status::InvalidArgument(
      std::string(field) + " must be 0 (derived from the budget) or at least " +
      std::to_string(floor >> 20) + " MiB, not " + std::to_string(value));
}

Result<std::unique_ptr<Store>> OpenStore(const Options& options, const std::string& dir,
                                         rocksdb::Env* env) {
  if (dir.empty()) return Status::InvalidArgument("data directory path is empty");
  if (!(options.max_reinsert_fraction >= 0 && options.max_reinsert_fraction <= 1)) {
    return Status::InvalidArgument("max_reinsert_fraction must be in [0, 1]");
  }
  // Below one memtable (its 4 MiB floor) writers would stall with nothing to flush; below
  // 1 MiB each few values would open a column family of their own.
  if (Status s = CheckSizeFloor("memtable_bytes", options.memtable_bytes, kMinMemtableBytes);
      !s.ok()) {
    return s;
  }
  if (Status s = CheckSizeFloor("generation_bytes", options.generation_bytes, kMinGenerationBytes);
      !s.ok()) {
    return s;
  }
  if (options.max_key_bytes == 0) return Status::InvalidArgument("max_key_bytes must be > 0");
  if (options.max_value_bytes > format::kMaxValueBytes) {
    return Status::InvalidArgument("max_value_bytes must be at most 4 GiB - 1");
  }
  if (options.read_queue_depth < 1 || options.read_queue_depth > kMaxReadQueueDepth) {
    return Status::InvalidArgument("read_queue_depth must be 1 to " +
                                   std::to_string(kMaxReadQueueDepth) + ", not " +
                                   std::to_string(options.read_queue_depth));
  }
  auto store = std::make_unique<StoreImpl>(options, dir, env);
  Status s = store->OpenDb();
  if (!s.ok()) return s;
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const Options& options, const std::string& dir) {
  return OpenStore(options, dir, nullptr);
}

Result<std::unique_ptr<Store>> testing::OpenWithEnv(const Options& options, const std::string& dir,
                                                    rocksdb::Env* env) {
  return OpenStore(options, dir, env);
}

uint64_t testing::UnflushedMemtables(Store& store) {
  return static_cast<StoreImpl&>(store).UnflushedMemtables();
}

StoreImpl::StoreImpl(const Options& options, std::string dir, rocksdb::Env* env)
    : options_(options), dir_(std::move(dir)), env_(env) {
  if (!options_.clock) options_.clock = SystemClock();
}

StoreImpl::~StoreImpl() {
  Close().PermitUncheckedError();  // a destructor cannot report; callers wanting it call Close()
}

Status StoreImpl::SizeFromBudget() {
  budget_ = options_.max_disk_bytes;
  if (budget_ == 0) {
    struct statvfs vfs {};
    if (statvfs(dir_.c_str(), &vfs) != 0) return Status::IOError("statvfs " + dir_);
    uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize + DirectoryBytes(dir_);
    budget_ = avail / 10 * 8;
  }
  memtable_bytes_ = options_.memtable_bytes;
  if (memtable_bytes_ == 0) memtable_bytes_ = std::clamp(budget_ / 256, 16 * kMiB, 256 * kMiB);
  write_buffer_bytes_ = options_.write_buffer_bytes;
  if (write_buffer_bytes_ == 0) {
    write_buffer_bytes_ = std::clamp(budget_ / 64, 64 * kMiB, 1 * kGiB);
  }
  generation_bytes_ = options_.generation_bytes;
  if (generation_bytes_ == 0) generation_bytes_ = std::clamp(budget_ / 32, 1 * kMiB, 64 * kGiB);
  max_generations_by_hits_ = 4 * std::max<uint64_t>(8, budget_ / generation_bytes_);
  return Status::OK();
}

rocksdb::DBOptions StoreImpl::DbOptions() {
  rocksdb::DBOptions db;
  if (!index_env_) {
    rocksdb::Env* base = env_ ? env_ : rocksdb::Env::Default();
    index_env_ = rocksdb::NewCompositeEnv(RetryableWriteErrors(base->GetFileSystem()));
  }
  db.env = index_env_.get();
  db.max_bgerror_resume_count = 0;  // ResumeIndexItself: the store resumes the index
  db.create_if_missing = options_.create_if_missing;
  db.create_missing_column_families = true;
  db.atomic_flush = true;  // a batch spanning two generations reaches disk whole (WAL off)
  // One flush at a time: after a flush's sync of a closed WAL file failed, a second flush job
  // admitted beside it would sync that file again, which RocksDB 7.8's writer asserts on. The
  // other threads compact (setting one limit, RocksDB takes both from the two options).
  db.max_background_flushes = 1;
  db.max_background_compactions = std::max(1, options_.background_threads - 1);
  db.max_open_files = -1;
  db.max_manifest_file_size = 64 << 20;
  db.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  // Survives a full disk. Read-only, nothing is written: the lines are dropped (errors reach
  // the caller as statuses).
  info_log_ = std::make_shared<InfoLog>(options_.read_only ? "" : dir_ + "/LOG", db.info_log_level);
  db.info_log = info_log_;
  db.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  db.max_total_wal_size = memtable_bytes_;
  // What it logs (deleting files, its recovery from a full disk) goes to the index's LOG.
  sfm_.reset(rocksdb::NewSstFileManager(rocksdb::Env::Default(), info_log_));
  db.sst_file_manager = sfm_;
  wbm_ = std::make_shared<rocksdb::WriteBufferManager>(memtable_bytes_, nullptr,
                                                       /*allow_stall=*/true);
  db.write_buffer_manager = wbm_;
  index_errors_.WatchMemory(wbm_, memtable_bytes_);
  db.listeners.push_back(std::make_shared<SyncValuesBeforeFlush>(
      [this] {
        if (gens_) SyncValues().PermitUncheckedError();  // a failed sync fails the next Flush
      },
      &memtable_seals_));
  db.listeners.push_back(std::make_shared<ResumeIndexItself>(&index_errors_, &memtable_seals_));
  return db;
}

Status StoreImpl::CheckManifestRecords() {
  std::optional<ManifestBreak> b = CheckManifest(dir_);
  if (!b) return Status::OK();
  if (b->at.records_follow) return Status::Corruption(dir_ + "/" + b->Describe());
  found_.torn_manifest = b->Describe();
  return Status::OK();
}

Status StoreImpl::OpenRocks(LegacyHandles* legacy) {
  rocksdb::DBOptions db = DbOptions();
  if (!options_.read_only) {
    if (Status s = SyncLeftValueFiles(); !s.ok()) return s;
  }
  const rocksdb::ColumnFamilyOptions index_cf = IndexCfOptions(memtable_bytes_);
  std::vector<std::string> names;
  if (!rocksdb::DB::ListColumnFamilies(db, dir_, &names).ok()) {
    names = {rocksdb::kDefaultColumnFamilyName};  // a new database
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const auto& n : names) {
    if (n == rocksdb::kDefaultColumnFamilyName) {
      descs.emplace_back(n, rocksdb::ColumnFamilyOptions());
    } else if (format::ParseIndexCfName(n)) {
      descs.emplace_back(n, index_cf);
    } else if (n == format::v1::kMetaCf || format::v1::ParseGenerationCfName(n)) {
      descs.emplace_back(n, format::v1::CfOptions());
    } else {
      return Status::Corruption("unexpected column family '" + n + "' in " + dir_ +
                                " (not a larder data directory?)");
    }
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  Status s =
      OpenFailed(options_.read_only ? rocksdb::DB::OpenForReadOnly(db, dir_, descs, &handles, &raw)
                                    : rocksdb::DB::Open(db, dir_, descs, &handles, &raw),
                 "opening " + dir_);
  if (s.IsCorruption()) return Status::Corruption(s.message() + DamagedTableFiles(db));
  if (!s.ok()) return s;
  db_.reset(raw);
  if (!found_.torn_manifest.empty()) {
    rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, db.info_log, "%s",
                 found_.torn_manifest.c_str());
  }
  // Background writers work on different files at once, each file a 4 KiB header: a generation
  // starts with one file per 64 MiB of it, up to one per writer (more open when all are held).
  const auto spread = static_cast<uint16_t>(
      std::clamp<uint64_t>(generation_bytes_ / (64 * kMiB), 1, kValueWriterThreads));
  gens_ = std::make_unique<Generations>(db_.get(), &index_errors_, index_cf, ValuesDir(),
                                        options_.wal && options_.sync_writes,
                                        options_.wal ? 1 : spread);
  for (size_t i = 0; i < descs.size(); ++i) {
    const std::string& n = descs[i].name;
    if (n == rocksdb::kDefaultColumnFamilyName) {
      default_cf_ = handles[i];
    } else if (auto id = format::ParseIndexCfName(n)) {
      gens_->Adopt(*id, handles[i]);
    } else {
      legacy->push_back(handles[i]);
    }
  }
  return Status::OK();
}

Status StoreImpl::CheckFormat(LegacyHandles* legacy) {
  std::string ver;
  rocksdb::Status vs = db_->Get(rocksdb::ReadOptions(), default_cf_, format::kFormatKey, &ver);
  if (!vs.ok() && !vs.IsNotFound()) return OpenFailed(vs, "reading the data format of " + dir_);
  unsigned v = 0;
  if (vs.ok()) {
    const auto [end, ec] = std::from_chars(ver.data(), ver.data() + ver.size(), v);
    if (ec != std::errc() || end != ver.data() + ver.size()) {
      return Status::Corruption(dir_ + " has data format '" + ver +
                                "', which is not a version number");
    }
  }
  if (v > format::kFormatVersion) {
    return Status::NotSupported(dir_ + " has data format '" + ver + "', this build reads up to " +
                                std::to_string(format::kFormatVersion));
  }
  const bool convert = v == 1 || !legacy->empty();
  if (options_.read_only) {
    if (!convert) return Status::OK();  // the version record, if missing or older, stays so
    return Status::NotSupported(dir_ + " has data format 1, which a read-write open converts to " +
                                std::to_string(format::kFormatVersion) +
                                "; it cannot be read read-only before that");
  }
  if (convert) {
    if (Status s = ConvertFormat1(legacy); !s.ok()) return s;
  }
  if (v == format::kFormatVersion) return Status::OK();
  rocksdb::WriteOptions wo;
  wo.sync = true;
  return OpenFailed(
      db_->Put(wo, default_cf_, format::kFormatKey, std::to_string(format::kFormatVersion)),
      "writing the data format of " + dir_);
}

Status StoreImpl::OpenDb() {
  if (options_.tune_allocator) TuneAllocatorOnce();
  std::error_code ec;
  if (options_.create_if_missing && !options_.read_only) {
    std::filesystem::create_directories(ValuesDir(), ec);
  } else if (!std::filesystem::is_directory(dir_, ec)) {
    // Before RocksDB's open, which would create it (and its LOCK) on the way to failing.
    if (std::filesystem::exists(dir_, ec)) return Status::NotFound(dir_ + ": not a directory");
    return Status::NotFound(dir_ + ": no such directory (" +
                            (ec ? ec.message() : std::string("create_if_missing is false")) + ")");
  } else if (!std::filesystem::exists(dir_ + "/CURRENT", ec)) {
    if (ec) return Status::IOError("reading " + dir_ + "/CURRENT: " + ec.message());
    return Status::NotFound(dir_ + " is not a Larder data directory (it has no CURRENT file)");
  }
  if (ec) return Status::IOError("creating " + dir_ + ": " + ec.message());
  LegacyHandles legacy;
  Status s = SizeFromBudget();
  if (s.ok() && options_.read_only) s = LockForReading();
  if (s.ok()) s = CheckManifestRecords();
  if (s.ok()) s = OpenRocks(&legacy);
  if (s.ok()) s = CheckFormat(&legacy);
  for (auto* h : legacy) {
    if (db_) db_->DestroyColumnFamilyHandle(h);
  }
  if (s.ok()) s = DropDamagedGenerations();
  if (s.ok()) s = LoadBlobFiles();
  if (s.ok()) s = LoadIndex();
  if (!s.ok() || options_.read_only) return FinishOpen(s);
  punch_ = BlobFile::CanPunchHoles(gens_->values_dir());
  keep_in_place_ = options_.keep_in_place && punch_;
  rotate_on_hits_ = KeepsInPlaceByRecency(options_.eviction_policy);
  demote_first_writes_ = keep_in_place_ && options_.eviction_policy == EvictionPolicy::kLruReuse;
  // New writes never go into files from before the open: a fresh head.
  if (s = gens_->Rotate(NowMs()); !s.ok()) return FinishOpen(s);
  if (!options_.wal) {
    writer_ = std::make_unique<ValueWriter>(kValueWriterThreads, write_buffer_bytes_);
  }
  // Without periodic passes the thread still removes the keys of failed background writes.
  if (options_.maintenance_interval_ms > 0 || writer_) {
    maintenance_ = std::thread([this] {
      // Named like RocksDB's own threads ("rocksdb:low"), for top -H and /proc.
      ::pthread_setname_np(::pthread_self(), "larder:maint");
      MaintenanceLoop();
    });
    WantSpareGenerations();
  }
  return FinishOpen(Status::OK());
}

Status StoreImpl::FinishOpen(Status s) {
  if (!s.ok()) {
    Close().PermitUncheckedError();  // the open failed: its error is the one to report
    return s;
  }
  read_pool_ = std::make_unique<ReadPool>(options_.read_queue_depth - 1);
  return Status::OK();
}

// RocksDB's OpenForReadOnly takes no LOCK; a read-only store takes the one a read-write open
// takes, so the directory cannot change under it. Where the LOCK cannot be opened for writing (a
// read-only mount, another user's directory), no read-write open can hold it from this process,
// and it checks that no other process does. Without a LOCK file (never opened read-write, or
// removed), nothing holds it, and none is created.
Status StoreImpl::LockForReading() {
  const std::string path = dir_ + "/LOCK";
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return Status::OK();  // none holds it
  if (::access(path.c_str(), W_OK) == 0) {
    rocksdb::Env* env = env_ ? env_ : rocksdb::Env::Default();
    return OpenFailed(env->LockFile(path, &read_lock_), "locking " + dir_);
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("opening " + path + ": " + std::strerror(errno));
  struct flock held {};
  held.l_type = F_WRLCK;
  held.l_whence = SEEK_SET;
  const int rc = ::fcntl(fd, F_OFD_GETLK, &held);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::IOError("checking the lock of " + path + ": " + std::strerror(err));
  if (held.l_type == F_UNLCK) return Status::OK();
  return Status::Busy(path + " is locked by process " + std::to_string(held.l_pid) +
                      " (is another larder process using this directory?)");
}

Status StoreImpl::Close() {
  if (closed_.exchange(true)) return Status::OK();
  {
    std::lock_guard lock(maint_mu_);
    stop_maintenance_ = true;
  }
  maint_cv_.notify_all();
  if (maintenance_.joinable()) maintenance_.join();
  read_pool_.reset();
  if (!db_) return ReleaseReadLock(Status::OK());
  Status s;
  bool flushed = false;
  if (gens_ && default_cf_ && !options_.read_only) {
    // The writes' failures join the removals, tried once: a record left points at bytes never
    // written, which the next open drops.
    if (writer_) writer_->Drain();
    std::vector<FailedWrite> failed;
    {
      std::lock_guard lock(maint_mu_);
      failed.swap(failed_writes_);
    }
    RemoveFailedWrites(&failed);
    s = PersistDirty();
    Status f = Flush();
    flushed = f.ok();
    if (s.ok() && !options_.wal) s = f;
  }
  writer_.reset();  // every queued value written (Flush waited for them already)
  {
    std::lock_guard lock(evict_mu_);
    evicting_ = {};  // its records hold the oldest generation, whose column family closes next
  }
  if (gens_) gens_->ReleaseAll();
  if (default_cf_) db_->DestroyColumnFamilyHandle(default_cf_);
  default_cf_ = nullptr;
  rocksdb::Status cs = db_->Close();
  db_.reset();
  // With the WAL off and everything flushed, an error closing the (empty) WAL file loses
  // nothing: RocksDB reports it after any earlier failed write to that file (a full disk).
  const bool moot = !options_.wal && flushed;
  if (s.ok() && !cs.ok() && !moot) s = Status::IOError("closing: " + cs.ToString());
  return ReleaseReadLock(s);
}

Status StoreImpl::ReleaseReadLock(Status s) {
  if (!read_lock_) return s;
  rocksdb::Env* env = env_ ? env_ : rocksdb::Env::Default();
  env->UnlockFile(read_lock_).PermitUncheckedError();  // only the process's exit can fail it
  read_lock_ = nullptr;
  return s;
}

}  // namespace larder
