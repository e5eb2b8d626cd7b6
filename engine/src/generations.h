// Generations: the windows of accesses that eviction drops whole. A generation owns one RocksDB
// column family of index records and the blob files ("partitions") its values were appended
// to; dropping it drops the column family and unlinks the files, which returns the space at
// once with no data rewritten. Writes go to the newest generation ("head").
//
// Entries kept in place: eviction may move an entry's record into a newer generation and leave
// its bytes where they are. That generation then *borrows* the file (a segment of its own naming
// that file), and a file is unlinked only when no generation holds it any more (its owner, or a
// borrower). The dropped values of a file that lives on are freed in place (BlobFile::Punch), each
// once the column family of the last record naming it is dropped, so no record that a crash could
// bring back points into a hole.
//
// Segments: every blob file, every borrowing of one, and every generation's inline values, has
// a small integer id (the in-memory index stores it in 24 bits instead of a pointer). An id is
// freed only after the entries using it left the index, so resolving an id found in the index
// always yields the file the entry's bytes are in and the generation holding its record.
#pragma once

#include <rocksdb/db.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "blob_file.h"
#include "index_errors.h"
#include "larder/status.h"

namespace larder {

struct Generation {
  Generation(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, uint64_t id, int64_t start_ms)
      : db(db), cf(cf), id(id), start_ms(start_ms) {}
  // Destroys the handle: once the column family is dropped and no reader holds it, it goes.
  ~Generation() { db->DestroyColumnFamilyHandle(cf); }
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  rocksdb::DB* const db;
  rocksdb::ColumnFamilyHandle* const cf;
  const uint64_t id;
  uint32_t inline_seg = 0;
  // When it became the head (ms). Opened from disk: the oldest write it holds.
  std::atomic<int64_t> start_ms;
  // Bytes written into it (values with their alignment padding, inline values, keys).
  std::atomic<uint64_t> bytes{0};
  std::atomic<int64_t> live{0};      // index entries whose value is in this generation
  std::atomic<int64_t> staged{0};    // values written into it, not yet indexed (StagedPuts)
  std::atomic<int> writers{0};       // writes in flight (see Generations::BeginWrite)
  std::atomic<bool> retired{false};  // being dropped: no write may begin
  std::atomic<bool> dropped{false};

  // Neither an index entry nor a staged value is in it: maintenance may drop it.
  bool HoldsNothing() const { return live.load() <= 0 && staged.load() <= 0; }

  bool HasPartition(uint16_t p) const {
    std::lock_guard lock(mu);
    return p < files.size() && files[p] != nullptr;
  }

  // A value's range in a blob file.
  struct Extent {
    BlobFilePtr file;
    uint64_t offset = 0;
    uint64_t size = 0;
  };
  // A file borrowed from an earlier generation, and the segment naming it here.
  struct Borrowed {
    BlobFilePtr file;
    uint32_t seg = 0;
  };

  // The segment of a record of this generation that names blob file (file_gen, partition):
  // its own partition's, or a borrowed file's; 0 if it has none. The Locked one's caller holds
  // mu.
  uint32_t SegFor(uint64_t file_gen, uint16_t partition) const;
  uint32_t SegForLocked(uint64_t file_gen, uint16_t partition) const;

  mutable std::mutex mu;  // guards the vectors and the map below
  std::condition_variable idle_cv;
  std::vector<BlobFilePtr> files;   // by partition
  std::vector<uint32_t> file_segs;  // by partition
  std::vector<uint16_t> idle;       // partitions no writer holds
  size_t failed_partitions = 0;     // partitions whose sync failed (never idle again)
  // Borrowed files, by (their generation, partition).
  std::map<std::pair<uint64_t, uint16_t>, Borrowed> borrowed;
};

using GenerationPtr = std::shared_ptr<Generation>;

class Generations {
 public:
  // What a segment id stands for: a generation's blob file, or (file == nullptr) its inline
  // values.
  struct Segment {
    GenerationPtr gen;
    BlobFilePtr file;
    uint16_t partition = 0;
  };

  // A write in progress into the generation it pins; writers hold one from before they append
  // a value until the index holds its record, so a drop waits for them. A staged value
  // (StagedPuts) lets go of it between its append and its commit, which pins the generation
  // again (Rejoin) or finds it dropped.
  class WriteTicket {
   public:
    explicit WriteTicket(GenerationPtr g) : gen_(std::move(g)) {}
    WriteTicket(WriteTicket&& o) noexcept = default;
    WriteTicket& operator=(WriteTicket&&) = delete;
    ~WriteTicket();
    Generation& gen() const { return *gen_; }
    const GenerationPtr& ptr() const { return gen_; }

   private:
    GenerationPtr gen_;
  };

  // One writer's exclusive use of a partition of a generation.
  class Lease {
   public:
    Lease(GenerationPtr g, uint16_t partition, BlobFilePtr file, uint32_t seg)
        : gen_(std::move(g)), partition_(partition), file_(std::move(file)), seg_(seg) {}
    Lease(Lease&& o) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    BlobFile& file() const { return *file_; }
    const BlobFilePtr& file_ptr() const { return file_; }
    uint16_t partition() const { return partition_; }
    uint32_t seg() const { return seg_; }

   private:
    GenerationPtr gen_;
    uint16_t partition_;
    BlobFilePtr file_;
    uint32_t seg_;
  };

  static constexpr uint16_t kMaxPartitions = 16;

  // `durable_files`: new blob files are fsynced with their directory (acknowledged writes
  // must survive a power cut). `spread_partitions`: each generation gets that many blob files
  // from its first writes on, and writers take them in turn, so that background writers (which
  // write each file's values in order) work on different files at once; 1 gives a writer the
  // partition it had, new ones only when all are held.
  // `errors` admits each column family's creation (IndexErrors::Admitted).
  Generations(rocksdb::DB* db, IndexErrors* errors, rocksdb::ColumnFamilyOptions cf_options,
              std::string values_dir, bool durable_files, uint16_t spread_partitions = 1);

  // At open: adopts a generation opened with the DB, then its blob files.
  GenerationPtr Adopt(uint64_t id, rocksdb::ColumnFamilyHandle* cf);
  void AttachFile(Generation& g, BlobFilePtr file);
  // At open: a blob file whose generation is gone, kept while records of later generations may
  // borrow it; DropUnheldOrphans unlinks the ones nobody borrowed.
  void AdoptOrphan(BlobFilePtr file);
  // Returns the orphans kept (borrowed): their ranges no record names are freed by the caller.
  std::vector<BlobFilePtr> DropUnheldOrphans();
  // Blob file (gen, partition): a live generation's or an orphan's; null if there is none.
  BlobFilePtr FileOf(uint64_t gen, uint16_t partition) const;
  // The segment of `g` naming `file`, borrowed now if `g` does not hold it yet.
  uint32_t Borrow(Generation& g, const BlobFilePtr& file);
  // Frees the ranges of `file` outside `live` and takes them off the budget.
  void PunchAllBut(BlobFile& file, std::vector<std::pair<uint64_t, uint64_t>> live);
  // Whether a generation other than its owner holds `file`.
  bool IsBorrowed(const BlobFile& file) const;
  // The segments through which other generations borrow the files of generation `owner`,
  // each with its file.
  std::unordered_map<uint32_t, BlobFilePtr> BorrowedSegmentsOf(const Generation& owner) const;
  // The segments naming one of `files`, with their file.
  std::unordered_map<uint32_t, BlobFilePtr> SegmentsOf(const std::vector<BlobFilePtr>& files) const;
  // Frees `e`'s range and takes it off the budget (a range freed before counts once).
  void Punch(const Generation::Extent& e);

  Segment SegmentOf(uint32_t seg) const;
  GenerationPtr Find(uint64_t id) const;
  GenerationPtr Head() const;
  // The head's id without a lock (for stamping accesses).
  uint64_t head_id() const { return head_id_.load(std::memory_order_relaxed); }
  std::vector<GenerationPtr> All() const;  // oldest first
  size_t size() const;
  const std::string& values_dir() const { return values_dir_; }

  // Pins the head for a write. IOError if the store has no head (closing).
  Result<WriteTicket> BeginWrite() const;
  // Pins `g` for a write again, unless it is retired (being dropped): a value written into it
  // earlier is about to be indexed (StagedPuts::Commit), or freed.
  std::optional<WriteTicket> Rejoin(const GenerationPtr& g) const;
  // A partition of the ticket's generation to append to: a new one while it has fewer than
  // `spread_partitions`, else the longest idle one, a new one (up to kMaxPartitions), or the next
  // to become idle.
  Result<Lease> LeasePartition(const WriteTicket& t, int64_t now_ms);

  // Creates a new head generation. Callers serialize it (StoreImpl::rotate_mu_, or the open).
  // It takes a column family PrepareSpares created, if one is ready: then no I/O, where the
  // creation syncs the MANIFEST (tens of ms on a busy disk), which a write closing the head,
  // or every write waiting behind it, would wait for. Else it creates one, holding no lock but
  // spare_mu_ (never mu_).
  Status Rotate(int64_t now_ms);
  // Creates column families for the next `n` heads ahead of Rotate, off the write path (the
  // maintenance thread). Spares left at a close are dropped (ReleaseAll); those a crash
  // leaves open as empty generations, which maintenance drops.
  Status PrepareSpares(size_t n);
  // Stops new writes into `g` and waits for the ones in flight. `g` must not be the head.
  void Retire(Generation& g);
  // Dropping a retired generation takes two steps, with the index entries removed between
  // them. DropIndex drops its column family (durably, in the MANIFEST; reads of the dropped
  // family keep working for handles still held); on error nothing is dropped and the caller
  // must not remove anything. Release then forgets the generation, lets go of its files (unlinking
  // those no other generation holds, unless `unlink_files` is false: a store open read-only)
  // and frees its segment ids: no index entry may refer to them any more.
  Status DropIndex(const GenerationPtr& g);
  void Release(const GenerationPtr& g, bool unlink_files = true);

  // Bytes of every live blob file on disk (BlobFile::accounted()).
  uint64_t FileBytes() const { return file_bytes_.load(std::memory_order_relaxed); }
  void AddFileBytes(uint64_t n) { file_bytes_.fetch_add(n, std::memory_order_relaxed); }
  // Calls fn(BlobFile&) for every file of every live generation, its own and those it
  // borrows (a file borrowed by several generations comes once per holder), until fn returns a
  // non-OK status, which is returned.
  Status ForEachFile(const std::function<Status(BlobFile&)>& fn) const;
  // fdatasync of every file with bytes not yet synced, each tried; the first error.
  Status SyncAll() const;
  // Releases every handle (before the DB closes), and drops the spare column families.
  void ReleaseAll();

 private:
  // The segments with a file that `pred` selects, each with its file (one walk, shared lock).
  std::unordered_map<uint32_t, BlobFilePtr> SegmentsWhere(
      const std::function<bool(const Segment&)>& pred) const;
  uint32_t AllocSegLocked(Segment s);
  Status CreatePartitionLocked(Generation& g, int64_t now_ms);
  // Creates the index column family of the generation after every live and spare one. Caller
  // holds spare_mu_.
  Result<std::pair<uint64_t, rocksdb::ColumnFamilyHandle*>> CreateNextLocked();
  // Takes n bytes that no longer occupy the disk off FileBytes().
  void SubFileBytes(uint64_t n);

  rocksdb::DB* db_;
  IndexErrors* errors_;
  rocksdb::ColumnFamilyOptions cf_options_;
  const std::string values_dir_;
  const bool durable_files_;
  const uint16_t spread_partitions_;
  std::atomic<uint64_t> file_bytes_{0};
  std::atomic<uint64_t> head_id_{0};

  // Column families created ahead (PrepareSpares), lowest id first; every id above every live
  // generation's. Ids are taken under spare_mu_, so generations are created in id order.
  std::mutex spare_mu_;
  std::deque<std::pair<uint64_t, rocksdb::ColumnFamilyHandle*>> spares_;

  mutable std::shared_mutex mu_;  // guards gens_, segs_, free_segs_
  std::map<uint64_t, GenerationPtr> gens_;
  std::vector<Segment> segs_;  // by id; id 0 is never used
  std::vector<uint32_t> free_segs_;
  std::map<const BlobFile*, int> holders_;  // generations holding each file (owner, borrowers)
  std::map<std::pair<uint64_t, uint16_t>, BlobFilePtr> orphans_;  // at open only
};

}  // namespace larder
