// StoreImpl: the engine behind larder::Store. See docs/architecture.md for the layout and the
// write/read paths; format.h for the bytes on disk.
//
// Locking, outermost first: evict_mu_ (one eviction at a time) -> key stripe (one writer per
// key at a time) -> Generations (its own short locks) -> index shard. Reads take only an index
// shard, briefly, and read files unlocked.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/sst_file_manager.h>
#include <rocksdb/write_batch.h>
#include <rocksdb/write_buffer_manager.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "demotion.h"
#include "format.h"
#include "generations.h"
#include "index_errors.h"
#include "key_index.h"
#include "larder/store.h"
#include "read_pool.h"
#include "retryable_writes.h"
#include "store_types.h"
#include "value_writer.h"

namespace larder {

namespace format::v1 {
struct MetaRecord;
}

class StoreImpl final : public Store {
 public:
  // `env`: RocksDB's Env (nullptr = the default; tests inject faults through it).
  StoreImpl(const Options& options, std::string dir, rocksdb::Env* env = nullptr);
  ~StoreImpl() override;

  int64_t NowMs() const override { return options_.clock->NowMs(); }

  Status OpenDb();

  using Store::Put;
  Status Put(std::string_view key, std::string_view value, const PutOptions& opts) override;
  Status PutOwned(std::string_view key, std::string&& value, const PutOptions& opts) override;
  Result<Value> Get(std::string_view key) override;
  std::vector<Result<Value>> MultiGet(const std::vector<std::string_view>& keys) override;
  Result<uint64_t> GetInto(std::string_view key, char* buf, size_t cap) override;
  std::vector<Result<uint64_t>> MultiGetInto(const std::vector<std::string_view>& keys,
                                             const std::vector<Buffer>& bufs) override;
  Result<std::unique_ptr<ValueReader>> OpenValue(std::string_view key) override;
  Result<FileRange> GetFileRange(std::string_view key) override;
  void Prefetch(const std::vector<std::string_view>& keys) override;
  bool InMemory(std::string_view key, uint64_t max_bytes) override;
  bool PutInMemory(std::string_view key, uint64_t value_bytes) override;
  Status CheckPut(std::string_view key, uint64_t value_bytes) const override;
  std::unique_ptr<StagedPuts> StagePuts() override;
  // StagedPuts' steps (staged_puts.cc). Stage: checks and writes one value into *p. Commit:
  // indexes them, distinct keys, in one index write, writing again those whose generation was
  // dropped since; all or none. Abandon: frees a value staged and not committed. Each leaves
  // p->gen null once the value is no longer staged. `bytes`, if not null, holds `value`
  // (StageOwned).
  Status StagePut(std::string_view key, std::string_view value,
                  std::shared_ptr<const std::string> bytes, const PutOptions& opts, StagedPut* p);
  Status CommitStaged(const std::vector<StagedPut*>& puts);
  void AbandonStagedPut(StagedPut* p);
  // Sealed memtables of the index not yet flushed, over every column family.
  uint64_t UnflushedMemtables();
  uint64_t Exists(const std::vector<std::string_view>& keys) override;
  uint64_t PrefixCount(const std::vector<std::string_view>& keys) override;
  Status Delete(std::string_view key) override;
  Status SetExpiry(std::string_view key, int64_t expire_at_ms) override;
  int64_t Ttl(std::string_view key) override;
  Result<KeyInfo> Info(std::string_view key) override;
  uint64_t Touch(const std::vector<std::string_view>& keys) override;
  ScanPage Scan(uint64_t cursor, std::string_view pattern, size_t count) override;
  Status Clear() override;
  void Maintain() override;
  Status EvictTo(uint64_t target_bytes) override;
  Stats GetStats() override;
  void ResetCounters() override;
  Status Flush() override;
  Status Compact() override;
  void UnmapFiles() override;
  Status Close() override;

  // Reads and checks every entry (larder::Verify), after an open that dropped what it found
  // damaged (each named in the report).
  VerifyReport VerifyAll(void (*progress)(uint64_t, uint64_t, void*), void* arg);

  // For ValueReader and GetFileRange: the end of a verified read. `read` is OK if the value
  // was read whole and matched its checksum, else what failed (a read error, or a Corruption
  // "checksum mismatch"), which OnBadValue reports.
  Status FinishRead(uint64_t hash, std::string_view key, const Located& at, const Status& read);

 private:
  static constexpr size_t kStripes = 256;
  using LegacyHandles = std::vector<rocksdb::ColumnFamilyHandle*>;

  // --- opening (store_open.cc, store_load.cc, convert_v1.cc) ---
  // The budget, memtable and generation sizes (Options' zeros derived from the budget).
  Status SizeFromBudget();
  // Options::read_only: takes the directory's LOCK, or checks no process holds it.
  Status LockForReading();
  // Returns `s`, after letting go of LockForReading's lock if it took one.
  Status ReleaseReadLock(Status s);
  // The end of OpenDb: the read pool if `s` is OK, else Close (and `s` returned).
  Status FinishOpen(Status s);
  rocksdb::DBOptions DbOptions();
  // Checks the MANIFEST's records before RocksDB reads them (manifest_check.h): Corruption when
  // it is damaged before its end, which RocksDB would open as an older index; a torn tail goes
  // to found_ and the log.
  Status CheckManifestRecords();
  // Opens RocksDB with every column family; format 1's go to *legacy.
  Status OpenRocks(LegacyHandles* legacy);
  // Refuses newer formats, converts format 1, marks a new directory as format 2.
  Status CheckFormat(LegacyHandles* legacy);
  // Moves a format-1 directory's values into blob files, one legacy generation at a time
  // (resumable: a crash part way continues at the next open). See docs/architecture.md.
  Status ConvertFormat1(LegacyHandles* legacy);
  // Moves one key (its format-1 value checked) and deletes its old metadata, in one batch.
  Status ConvertEntry(const std::string& key, const format::v1::MetaRecord& m,
                      rocksdb::ColumnFamilyHandle* old_gen, rocksdb::ColumnFamilyHandle* meta);
  // Table files under dir_ failing their checksums, for an error message ("" if none).
  std::string DamagedTableFiles(const rocksdb::DBOptions& db) const;
  // Checks every SST of the index and drops each generation holding a damaged one unread
  // (Debian's librocksdb aborts on a malformed block); its entries are lost, counted.
  Status DropDamagedGenerations();
  // Before RocksDB's open (whose WAL recovery may flush records naming them): fdatasync of
  // every value file an earlier process left, then of their directory, so that a crashed
  // process's unsynced bytes are durable before any index record that names them is.
  // A file that does not sync is logged (its values are still checked on every read).
  Status SyncLeftValueFiles();
  std::string ValuesDir() const { return dir_ + "/" + format::kValuesDir; }
  // Attaches the blob files to their generations; deletes files of dropped generations.
  Status LoadBlobFiles();
  // Rebuilds the in-memory index from the records, oldest generation first.
  Status LoadIndex();
  // Remembers a key the open dropped, for Verify's report.
  void NoteDroppedKey(uint64_t gen, std::string_view key, const char* why);
  void LoadRecord(Generation& g, std::string_view ik, std::string_view value, int64_t now,
                  rocksdb::WriteBatch* cleanup);
  // Puts a loaded entry in the index, in place of an older version of its key (whose record
  // goes into `cleanup` and whose range is freed after the load).
  void IndexLoaded(const Entry& e, std::string_view key, rocksdb::WriteBatch* cleanup);

  // A key a write may store: InvalidArgument for an empty one or one over max_key_bytes.
  Status CheckKey(std::string_view key) const;
  // A key a read or removal looks up: one that could not have been stored is NotFound.
  Status CheckLookupKey(std::string_view key) const;
  Status CheckOpen() const;
  // CheckOpen, and NotSupported for a store opened read-only: the first check of every write.
  Status CheckWritable() const;
  // The message of the miss a read answers for a value that failed verification.
  const char* CorruptMissText() const {
    return options_.read_only ? "corrupt value (left in place: read-only)"
                              : "corrupt value removed";
  }
  std::mutex& Stripe(uint64_t hash) { return stripes_[hash % kStripes]; }
  rocksdb::WriteOptions WriteOpts() const;
  // Every write of the index goes through here: db_->Write(wo, batch), admitted by index_errors_
  // (refused while the index waits out a disk error or is stopped until a restart: RocksDB would
  // take some, its soft error after a flush, and a WAL error among them could not be resumed),
  // with the WAL anchored first. With the WAL on, after each memtable seal (and at open) the first
  // write puts kWalAnchorKey into the default column family without the WAL, so that an active
  // memtable holds something when a WAL append or sync fails: DB::Resume then switches to a new
  // WAL file (ResumeSwitchesWal) rather than going on with the failed one.
  // Left unprotected: the first write group after a switch that no anchor preceded (the group
  // whose own write switched memtables, or writes racing a flush that switched them just after
  // their check); ResumeIndex then stops writes until a restart.
  rocksdb::Status RocksWrite(const rocksdb::WriteOptions& wo, rocksdb::WriteBatch* batch);
  uint16_t HeadGen() const;

  // --- finding a key (store_lookup.cc) ---
  // The first entry under `hash`, located, and in *count how many entries it has (more than one:
  // keys that share the hash, which only their stored records tell apart).
  std::optional<Located> LocateFirst(uint64_t hash, size_t* count);
  // The entry of `key` as the index alone says it: the only entry with its hash. With several
  // entries for the hash (two keys share it) the stored keys decide. An expired entry is
  // removed and counts as absent. Caller holds no stripe.
  std::optional<Located> LookupFast(uint64_t hash, std::string_view key);
  // The entry of `key`, confirmed by its stored index record (write paths).
  std::optional<Located> LookupExact(uint64_t hash, std::string_view key);
  // LookupFast for a read that must find the bytes where the entry says: a file value's range
  // is held (*hold, see BlobFile::HoldRange) and the entry confirmed still in the index after
  // the hold was taken, so a replacement or eviction from then on leaves its bytes in place
  // until the hold goes. An entry that left the index in between (its range may be punched
  // already) is looked up again, up to kLookupAttempts times; nullopt then, or on a miss.
  // Inline entries, and entries with no file, come back with no hold.
  std::optional<Located> LookupHeld(uint64_t hash, std::string_view key,
                                    std::shared_ptr<const void>* hold);
  static constexpr int kLookupAttempts = 3;
  // Whether the index record of (hash, key) in `at`'s generation points at `at`'s value;
  // *record (if not null) receives it, and `bytes` (if not null) the encoded record, which
  // record->inline_value points into.
  bool RecordMatches(uint64_t hash, std::string_view key, const Located& at,
                     format::IndexRecord* record = nullptr, std::string* bytes = nullptr);
  // Whether reading the index record of (hash, key) in `at`'s generation would not wait for
  // the disk: it is in the memtables or the block cache, or they tell it is absent. No disk I/O.
  bool RecordCached(uint64_t hash, std::string_view key, const Located& at);
  Located Locate(const Entry& e) const;
  // Whether the version `at` located is still in the index, in the same segment: a segment id
  // is reused once its generation is dropped, and the first value of every file sits at the
  // same offset, so an entry equal to at.entry may be a newer version in another file.
  bool StillIndexed(const Located& at) const;
  // The version `at` left the index (replaced, removed, expired or evicted): its generation
  // holds one live entry fewer, and its bytes are given back at once where the filesystem frees
  // ranges, unless they lie in a file of `dropping` (the generation being dropped whole, whose
  // own files go with it). A record of it that a crash brings back is dropped at open
  // (LoadRecord: its range is a hole).
  void LeftIndex(const Located& at, const Generation* dropping = nullptr);
  // Counts a reuse of the entry (a hit or a touch).
  void MarkReused(const Entry& e);
  // Stamps the entry used now (its last access, and the head as its access generation), and
  // counts a reuse if `reuse`. Without: a key found past a prefix's first missing key, which
  // the caller is about to make readable again by storing that one. False if it left the index.
  bool MarkUsed(const Entry& e, bool reuse = false);
  // Records that the entry was found at `index` of an ordered key list of `list_size` keys into
  // its Entry::position; nothing for a list of one key, which says nothing of order.
  void NotePosition(const Entry& e, size_t index, size_t list_size);
  // NotePosition for each key of `keys` that exists; the place of each that does not, for its
  // Put (missing_positions_).
  void NotePositions(const std::vector<std::string_view>& keys);

  // --- reading (store_read.cc) ---
  // Reads and verifies `at`'s value into buf[0..at.entry.size). Returns OK, Corruption, or
  // NotFound (the bytes belong to another key with the same hash, or were never durable).
  Status ReadVerified(uint64_t hash, std::string_view key, const Located& at, char* buf,
                      bool allow_direct);
  // ReadVerified's ways of reading a blob value (from the file's mapping when cached, else in
  // pieces through the page cache; or with O_DIRECT): set *sum to Checksum() of the bytes read.
  Status ReadCachedOrInPieces(BlobFile& f, const Entry& e, char* buf, uint64_t* sum);
  Status ReadDirectThenHash(BlobFile& f, const Entry& e, char* buf, uint64_t* sum);
  // GetInto's work after the lookup; counts hits, misses, corruptions.
  Result<uint64_t> ReadInto(uint64_t hash, std::string_view key, char* buf, size_t cap);
  // After a value failed verification: a corruption of the key's own value (counted, the key
  // removed, a warning in the LOG, the listener told once it is removed) or another key's
  // bytes (a miss).
  Status OnBadValue(uint64_t hash, std::string_view key, const Located& at, Status read_status);

  // --- writing (store_write.cc) ---
  // Puts a value where its version will live: inline in the record, or appended to a blob
  // file of the ticket's generation. Fills the entry's and the record's identity and location;
  // the caller fills expiry and times.
  // `owned`, if not empty, holds `value`'s bytes and may be kept (HandedOver); `wait_for_room`:
  // whether a value written behind waits for the writers' room (ValueWriter::Submit).
  Status StageValue(uint64_t hash, std::string_view key, std::string_view value,
                    const HandedOver& owned, bool wait_for_room, uint64_t value_hash,
                    const Generations::WriteTicket& t, Entry* e, format::IndexRecord* rec);
  // Whether a Put's blob value may be written in the background (a PendingWrite): with the
  // WAL off, a caller's string (PutOwned) or any value with direct_writes; unless a background
  // write failed since the last success (write_failed_), which AppendValue checks as it goes.
  bool MayWriteBehind(const HandedOver& owned) const {
    return writer_ && (owned || options_.direct_writes);
  }
  // Appends a blob value into the head; fills e's location.
  Status AppendValue(std::string_view key, std::string_view value, const HandedOver& owned,
                     bool wait_for_room, const Generations::WriteTicket& t, Entry* e,
                     format::IndexRecord* rec);
  // Put and PutOwned (`owned`: value's string, or empty).
  Status PutImpl(std::string_view key, std::string_view value, const HandedOver& owned,
                 const PutOptions& opts);
  // A value whose background write failed. Its bytes stay readable from the write's buffer
  // (PendingWrite::failed) until RemoveFailedWrites has removed the version.
  struct FailedWrite {
    uint64_t hash = 0;
    std::string key;
    Entry version;
    std::weak_ptr<BlobFile> file;
  };
  // On a writer thread: counts the failure and hands the removal to the maintenance thread. It
  // must not write the index here: a RocksDB write may stall until a flush, and a flush first
  // waits (SyncValues) for queued writes that only the writer threads can finish.
  void OnFailedWrite(FailedWrite f);
  // Queues a removal for the maintenance thread.
  void QueueFailedWrite(FailedWrite f);
  // Removes each version in *failed (record, index entry, its buffer), if it is still the
  // key's; those whose removal failed stay in *failed for the next pass. One whose Put has not
  // indexed it yet is left to the Put (SettlePut).
  void RemoveFailedWrites(std::vector<FailedWrite>* failed);
  // After a Put that MayWriteBehind wrote the index entry of `e`, or failed to: a background
  // write of it that failed before then is queued for removal again. Caller holds the key's
  // stripe.
  void SettlePut(uint64_t hash, std::string_view key, const Entry& e);
  // A Put's value appended (or pending) in its file but never indexed (its record's write or
  // its sync failed): no record names its range, so it is freed now, as a replaced version's.
  void AbandonStaged(const Entry& e);
  // A new version of `key`'s value written into the head (StageValue), with a fresh entry and
  // record (expiry `expire_at_ms`, times `now`): the ticket pinning the head until the version
  // is indexed, or the error, nothing of the value left.
  Result<Generations::WriteTicket> WriteVersion(uint64_t hash, std::string_view key,
                                                std::string_view value, const HandedOver& owned,
                                                bool wait_for_room, uint64_t value_hash,
                                                int64_t expire_at_ms, int64_t now, Entry* e,
                                                format::IndexRecord* rec);
  // Makes the version WriteVersion wrote (`e`, `rec`, in `gen`, written with `owned`) the key's
  // current one in place of `old`, keeping old's place among its prefix's keys; on failure its
  // bytes are freed. Caller holds the key's stripe.
  Status IndexVersion(uint64_t hash, std::string_view key, Entry* e, const format::IndexRecord& rec,
                      Generation& gen, const std::optional<Located>& old, const HandedOver& owned);
  // IndexVersion in its two steps, for a caller that writes several keys' records in one batch
  // (a StagedPuts commit): what the batch must hold (and e's place), then, once the batch was
  // written (`indexed`) or failed, the in-memory index's change or the version's bytes freed.
  // Caller holds the keys' stripes from the first step to the second.
  void AddVersion(rocksdb::WriteBatch* batch, uint64_t hash, std::string_view key, Entry* e,
                  const format::IndexRecord& rec, const Generation& gen,
                  const std::optional<Located>& old);
  void SettleVersion(bool indexed, uint64_t hash, std::string_view key, const Entry& e,
                     Generation& gen, const std::optional<Located>& old, const HandedOver& owned);
  // After a write into `gen`: a rotation if it filled the head (MaybeRotate).
  void RotateIfFull(const Generation& gen);
  // Writes a staged value's bytes into the head (after making room for it); fills p->gen and
  // its entry. `wait_for_room` as in StageValue.
  Status WriteStaged(StagedPut* p, bool wait_for_room);
  // Pins the generations of the staged values for their commit (Generations::Rejoin); while
  // one is being dropped, writes its values again into the head first, holding no pin (the
  // drop waits for the generation's writers, and the rewrite may evict).
  Result<std::vector<Generations::WriteTicket>> PinStaged(const std::vector<StagedPut*>& puts);
  // Removes one version of a key (its record, then its index entry). Caller holds its stripe.
  // An error leaves the key as it was.
  Status RemoveLocked(uint64_t hash, std::string_view key, const Located& at);
  // RemoveLocked in its two steps, as AddVersion and SettleVersion.
  void AddRemoval(rocksdb::WriteBatch* batch, uint64_t hash, std::string_view key,
                  const Located& at) const;
  void Removed(const Located& at);
  // Writes `batch` into the index (nothing if it is empty); the error names `what` failed.
  Status WriteIndex(rocksdb::WriteBatch* batch, const char* what);
  // The entry's expiry as stored (the index keeps expiries past Entry::kMaxExpiry as kFarExpiry).
  int64_t ExactExpiry(uint64_t hash, std::string_view key, const Located& at);

  // --- eviction (eviction.cc) ---
  // Disk bytes that count against the budget (blob files, index files, unflushed memtables).
  uint64_t BudgetUsage() const;
  // Evicts until `incoming` more bytes fit in the budget (or NoSpace with kNone).
  Status MakeRoom(uint64_t incoming);  // `incoming` <= budget_ (CheckPut)
  // Evicts the oldest generation by `policy`, keeping (in place or by copy) what it keeps of
  // it. In place by recency, when what it would drop holds more than `need` (bytes still to
  // free) and 1/64 of a generation, only that much of it goes (DropPart) and the generation
  // stays the oldest; the next rounds take from the same walk's list (evicting_) until what is
  // left of it is no more than a round takes, then walk again. *freed gets the blob file bytes it
  // freed, at least 1 (0 if nothing is left to evict). An error (the index refused the drop) leaves
  // every entry where it was.
  Status EvictOldest(EvictionPolicy policy, uint64_t need, uint64_t* freed);
  // Drops entries of the last walk's list (evicting_.droppable: records of the oldest
  // generation the policy does not keep, least valuable first) from where the previous round
  // stopped, until `goal` value bytes went; an entry used since the walk stays for the next one.
  // Values kept inside their records stay for the generation's drop. Their ranges are freed as
  // they leave the index, then their records are deleted (an error there leaves records the
  // next open drops: their ranges are holes). Expiry is judged at `now`, the round's time.
  // Tells the listener of the round (*report).
  Status DropPart(const GenerationPtr& victim, uint64_t goal, int64_t now,
                  GenerationEvicted* report);
  // The records of first writes never read since (not reused, not accessed after their
  // generation stopped being the head) in the generations that demotion_'s depth puts as far
  // from the head as the oldest: a value entered that deep below the newest would be as old as
  // the oldest generation's. Walks at most two generations that no earlier call walked (the
  // zone widens a little at a time), never the victim all[0] or the head; oldest generation
  // first, the deepest prefix place first within one. Caller holds evict_mu_.
  std::vector<RecordMember> DemotedFirstWrites(const std::vector<GenerationPtr>& all);
  // Drops the oldest generation whole with the entries of `drop` (expiry judged at `now`, when
  // the walk listed them), keeping the ranges of the entries its rounds kept in place.
  Status DropWhole(const GenerationPtr& victim, std::vector<RecordMember>* drop, int64_t now,
                   GenerationEvicted* report);
  // Whether eviction by `policy` keeps entries in place by recency: generations are windows of
  // accesses (hits close the head too) and the oldest one goes in parts.
  bool KeepsInPlaceByRecency(EvictionPolicy policy) const;
  // Counts the dropped entries (expired at `now`, or evicted), tells the listener of them, then
  // removes their companions.
  void ReportDropped(const std::vector<RecordMember>& dropped, int64_t now,
                     const Generation& victim, GenerationEvicted* report);
  // Splits the live records of the oldest generation, all[0], into what `policy` keeps and what
  // it drops; `all` holds every generation, oldest first, at least two.
  void SelectKept(EvictionPolicy policy, const std::vector<GenerationPtr>& all,
                  std::vector<RecordMember>* keep, std::vector<RecordMember>* drop);
  // After the victim's index is dropped and its dropped entries left the index: frees every
  // range of its own blob files but those of the entries still in the index, all kept in place
  // by some round of its eviction, this process's or one before a restart.
  void PunchAroundKept(const Generation& victim);
  // Frees every value range of the files of `segs` that no index entry names (entries of those
  // segments found by one walk of the index): a dropped generation's file kept for its
  // borrowers, at the drop and again at open (a crash may have come between them).
  void PunchAroundLive(const std::unordered_map<uint32_t, BlobFilePtr>& segs);
  // Evicts until usage + incoming <= target (or nothing is left). Caller holds evict_mu_.
  Status EvictUntil(uint64_t target, uint64_t incoming, EvictionPolicy policy);
  // Reinserts the entries of `keep` (in place: all; copied: what the reinsertion cap allows,
  // most recently used first); moves the others to `drop`, leaving the reinserted in `keep`.
  // Adds what it reinserted to *report. `all` lists the generations, the victim first.
  void ReinsertKept(std::vector<RecordMember>* keep, std::vector<RecordMember>* drop,
                    const std::vector<GenerationPtr>& all, GenerationEvicted* report);
  // Moves a kept entry of the generation being evicted: in place into `to` (its record only,
  // `to` borrowing its file), or with `to` null into the head with its value copied inside the
  // kernel. False if it was not kept.
  bool Reinsert(RecordMember& m, const GenerationPtr& to);
  // Removes the Options::evict_together companions of evicted keys (told to the listener) but
  // those that go with the victim anyway (when all of it goes); adds them to *report.
  void EvictCompanions(const std::vector<RecordMember>& evicted, const Generation& victim,
                       GenerationEvicted* report);
  void MaybeRotate();
  // Asks the maintenance thread, if there is one, to top up the column families created ahead
  // of rotations (Generations::PrepareSpares, kSpareGenerationBytes).
  void WantSpareGenerations();

  // --- generations' records (maintenance.cc) ---
  // Calls fn for every record of `g` whose entry is the current one in the index (records of
  // replaced, deleted or expired versions are skipped).
  void ForEachRecord(const Generation& g, const std::function<void(RecordMember)>& fn);
  // Flush without taking evict_mu_: the caller holds it (or is the open). With
  // `values_must_sync` false, a failed sync of the blob files (already reported, or to be by
  // the next Flush) does not stop the index's flush.
  Status FlushIndex(bool values_must_sync = true);
  // After RocksDB stopped writes on a full disk or a retryable write error (index_errors_),
  // resumes them (DB::Resume: the memtables are flushed first); an error while the disk still
  // fails, or another error during the resume, and the next call tries again. Where the resume
  // would go on with a failed WAL file it does not resume: StopUntilRestart. OK if they were not
  // stopped. Caller holds evict_mu_, so that no flush of the store's runs beside the recovery's.
  Status ResumeIndex();
  // Where ResumeIndex cannot resume (a WAL file RocksDB would go on with after its error):
  // IndexErrors::StopUntilRestart, logged once; the error says why.
  Status StopUntilRestart(const std::string& why);
  // Before a resume after a flush's soft error: whether, within `limit`, no flush or compaction
  // of RocksDB's runs and no admitted call is inside it (maintenance.cc says why).
  bool IndexQuietWithin(std::chrono::milliseconds limit);
  // Waits until no memtable is left to flush, or a background error came after
  // `errors_before`: RocksDB 7.8 keeps its "stopped" mark after a resume (cleared upstream in
  // 8.9.1, PR 11991), and its Flush then returns without waiting. Memtables sealed meanwhile
  // are waited for too (index records are small: a memtable holds many thousand writes).
  Status WaitForMemtablesFlushed(uint64_t errors_before);
  // Every column family of the index; `held` keeps their generations (and so their handles).
  std::vector<rocksdb::ColumnFamilyHandle*> IndexColumnFamilies(std::vector<GenerationPtr>* held);
  // Drops a retired generation: its index (an error leaves everything as it was), then
  // `remove_entries` takes its entries out of the index (any it leaves are removed after, so no
  // entry ever refers to a freed segment), then its files and segments go.
  Status DropGeneration(const GenerationPtr& g, const std::function<void()>& remove_entries);
  // The maintenance thread: a pass every maintenance_interval_ms (if not 0), the removal of
  // failed writes as soon as one is queued, and spare generations when a rotation used one.
  void MaintenanceLoop();
  // The writes the spare generations cover: PrepareSpareGenerations keeps this much over
  // generation_bytes_ of them, 1 to 8.
  static constexpr uint64_t kSpareGenerationBytes = 256ull << 20;
  // Tops the spare generations up (maintenance thread).
  void PrepareSpareGenerations();
  // Makes every value appended so far durable (the write-behind skipped): before an index flush.
  Status SyncValues();
  // Drops every non-head generation with no live entry left. Caller holds evict_mu_.
  void DropEmptyGenerations();
  // A maintenance pass's step under evict_mu_ (it takes it): ResumeIndex, then
  // DropEmptyGenerations.
  void ResumeIndexAndDropEmpty();
  // Removes the expired entries of index shards [first, first + n); says how many entries it
  // looked at and how many of them had expired.
  struct ExpiredFound {
    size_t looked_at = 0, expired = 0;
  };
  ExpiredFound RemoveExpiredIn(size_t first_shard, size_t shards);
  // One periodic expiry pass: removes the expired entries of the shards from `first_shard` on
  // (wrapping around), shard by shard, until it has looked at kExpiryEntriesPerPass entries
  // and at least kExpiryMinShardsPerPass shards, or at the whole index, or found
  // kExpiryRemovalsPerPass expired ones (each a RocksDB seek with a listener: a pass stays
  // well under a second). Returns the shard the next pass starts at. Every expired entry is
  // thus found within one pass in an index of up to kExpiryEntriesPerPass entries, and within
  // 16 passes in any index, unless more than kExpiryRemovalsPerPass expire together.
  size_t ExpiryPass(size_t first_shard);
  static constexpr size_t kExpiryEntriesPerPass = size_t{1} << 18;
  static constexpr size_t kExpiryMinShardsPerPass = KeyIndex::kShards / 16;
  static constexpr size_t kExpiryRemovalsPerPass = size_t{1} << 14;
  // Removes an expired entry from the index (its record is ignored at open). Caller holds no
  // stripe. False if it was gone already.
  bool RemoveExpired(const Entry& e);
  // The key whose record in its generation describes `at` (one index seek); nullopt if none
  // does (the record is gone or damaged).
  std::optional<std::string> KeyOf(const Located& at);
  // Writes the reuse fields of entries changed since their records were written.
  Status PersistDirty();
  // PersistDirty for `members` (dirty records of `g` whose keys hash to `stripe`), under it.
  Status PersistDirtyOf(const Generation& g, size_t stripe,
                        const std::vector<RecordMember>& members);
  // With the WAL off: Flush when writes came in since the last one and flush_interval_ms
  // passed (maintenance thread only).
  void FlushIfDue();

  Options options_;
  const std::string dir_;
  rocksdb::Env* const env_;
  std::unique_ptr<rocksdb::Env> index_env_;  // env_'s file system, write errors retryable
  uint64_t budget_ = 0;
  uint64_t memtable_bytes_ = 0;
  uint64_t write_buffer_bytes_ = 0;
  uint64_t generation_bytes_ = 0;
  bool punch_ = false;          // the filesystem frees ranges of files (punches holes)
  bool keep_in_place_ = false;  // Options::keep_in_place, and punch_
  // lru-reuse kept in place: first writes never read since leave early (DemotedFirstWrites).
  bool demote_first_writes_ = false;
  // The head closes after generation_bytes_ of writes and hits (a window of accesses), not of
  // writes alone: KeepsInPlaceByRecency of the store's policy. A write closes
  // it (MaybeRotate), so a read never waits on the new column family.
  bool rotate_on_hits_ = false;
  std::atomic<uint64_t> hit_bytes_{0};  // value bytes of hits since the head opened
  size_t max_generations_by_hits_ = 0;  // 4 x the budget's generations (SizeFromBudget)
  std::atomic<bool> closed_{false};

  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
  std::shared_ptr<rocksdb::SstFileManager> sfm_;
  std::shared_ptr<rocksdb::Logger> info_log_;  // the LOG in dir_ (RocksDB's and the store's own)
  rocksdb::FileLock* read_lock_ = nullptr;     // LockForReading's, until Close
  std::shared_ptr<rocksdb::WriteBufferManager> wbm_;
  std::unique_ptr<Generations> gens_;
  KeyIndex index_;
  MissingPositions missing_positions_;
  FirstWriteDemotion demotion_;
  std::unique_ptr<ReadPool> read_pool_;
  std::unique_ptr<ValueWriter> writer_;    // null with the WAL on (values are written in place)
  std::atomic<bool> write_failed_{false};  // a background write failed; write in place
  std::mutex stripes_[kStripes];
  std::mutex evict_mu_;
  // The eviction of the oldest generation, which partial drops (DropPart) spread over several
  // rounds: the ranges of its files that the entries its rounds kept in place point into, and
  // the entries the last walk of its records would drop, which the rounds take in turn until
  // what is left of them is no more than a round takes (then the next round walks again, and
  // the walk after the last partial round drops the generation whole). Guarded by evict_mu_.
  struct EvictionInProgress {
    uint64_t generation = 0;              // whose (0: none)
    std::vector<RecordMember> droppable;  // least valuable first
    size_t next = 0;                      // the first of `droppable` no round took yet
    uint64_t droppable_bytes = 0;         // value bytes in blob files from `next` on
  } evicting_;
  uint64_t demotion_walked_ = 0;  // the newest generation DemotedFirstWrites walked (evict_mu_)
  std::mutex rotate_mu_;
  Counters counters_;

  // What the open found and dropped, for Verify.
  struct OpenFindings {
    uint64_t corrupt_records = 0;  // undecodable index records
    uint64_t lost_writes = 0;      // records pointing past their file's end (never durable)
    std::vector<std::string> damaged_sst_files;
    std::vector<std::string> damaged_files;  // blob files with a bad header (deleted)
    std::set<std::pair<uint64_t, uint16_t>> damaged_partitions;  // theirs
    std::vector<std::string> dropped_keys;  // "generation G key 'k': why", the first 1000
    std::set<uint64_t> damaged_generations;
    std::string torn_manifest;  // ManifestBreak::Describe() of a torn MANIFEST tail, or ""
    // Ranges of the records the open removed (expired, or older versions): freed after it.
    std::vector<Generation::Extent> unnamed_ranges;
  } found_;

  int64_t last_flush_ms_ = 0;                // maintenance thread only
  uint64_t written_at_flush_ = 0;            // index_writes_ at that flush
  std::atomic<uint64_t> memtable_seals_{0};  // memtables sealed (see PendingWrite)
  // 1 + memtable_seals_ when RocksWrite last anchored the WAL (0: not since the open).
  std::atomic<uint64_t> wal_anchored_{0};
  std::atomic<uint64_t> index_writes_{0};  // index batches written (puts, deletes, expiries)
  IndexErrors index_errors_;               // what RocksDB's background errors stopped (ResumeIndex)
  std::atomic<bool> index_resumed_{false};  // a ResumeIndex succeeded (WaitForMemtablesFlushed)
  std::thread maintenance_;
  std::mutex maint_mu_;
  std::condition_variable maint_cv_;
  bool stop_maintenance_ = false;
  bool spares_wanted_ = false;              // WantSpareGenerations (maint_mu_)
  std::vector<FailedWrite> failed_writes_;  // for the maintenance thread (maint_mu_)
};

}  // namespace larder
