// BlobFile: one append-only file of values (format.h), written by one writer at a time (the
// holder of its partition lease) and read by any number of threads with pread.
//
// Every value starts at a multiple of format::kValueAlign after a 4 KiB header. The file is
// never rewritten below end(): readers may read any range a record points at while writers
// append. A range no record can reach any more may be freed in place (Punch: the blocks go, the
// range reads as zeros), which a read finds as a checksum mismatch of an entry that has left the
// index, i.e. a miss. Deleting the file (MarkDeleted) unlinks it at once; the descriptor stays
// open, so reads that already hold the file finish, and the space returns when the last holder
// lets go.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "file_mapping.h"
#include "format.h"
#include "larder/status.h"

namespace larder {

// A value acknowledged but not written yet (ValueWriter): its bytes either copied into a buffer
// aligned to kValueAlign, AlignUp(size) bytes with the tail past `size` zeroed (what an O_DIRECT
// write takes), or held in the caller's string, taken over without a copy (Store::PutOwned;
// shared with a StagedPuts batch until it is committed).
struct PendingWrite {
  std::unique_ptr<char, void (*)(void*)> aligned{nullptr, &std::free};  // CopyOf's
  std::shared_ptr<const std::string> owned;                             // Adopt's
  const char* data = nullptr;  // the value's bytes: in `aligned` or `owned`
  size_t size = 0;
  size_t capacity = 0;  // the bytes held: AlignUp(size) in `aligned`, else size
  // Runs on a writer thread if the write fails (the store then forgets the value).
  std::function<void(const Status&)> on_error;
  // Runs, under the file's pending lock, when the write is dropped unwritten and its buffer
  // freed (ReleaseBuffer): the writer stops counting the bytes then, not at the job's turn.
  std::function<void()> on_release;
  std::atomic<bool> released{false};  // ReleaseBuffer ran
  // Replaced or deleted before it was written: nobody can reach it any more, so the writer
  // skips it (its range stays a hole: garbage that occupies no disk block).
  std::atomic<bool> superseded{false};
  // Set (under the file's pending lock) when the writer takes it: from then on it is written,
  // and a punch of its range waits for it.
  mutable std::atomic<bool> started{false};
  // Set (under the file's pending lock) when its write failed. It stays registered, so reads
  // of its range are still served from the buffer, until the store has removed its key
  // (BlobFile::ForgetFailed) or a punch of its range drops it; syncs do not wait for it.
  mutable std::atomic<bool> failed{false};
  // Under the file's pending lock. `indexed`: its Put wrote (or failed to write) its index
  // entry; a failure's removal before that would find nothing to remove (BlobFile::SettlePut).
  // `removal_deferred`: a removal came too early and waits for the Put.
  bool indexed = false;
  bool removal_deferred = false;
  // StoreImpl's memtable seal count read before this value's index record was written. A
  // superseded write may be skipped only if no memtable was sealed between its record and the
  // one superseding it: otherwise a flush (and a crash, WAL off) could make the old record
  // durable alone, pointing at a hole.
  uint64_t memtable_epoch = 0;
  // Written with O_DIRECT (Options::direct_writes), else through the page cache.
  bool direct = false;

  // An aligned copy of `value`; nullptr if memory is short.
  static std::shared_ptr<PendingWrite> CopyOf(std::string_view value);
  // Holds `value`'s buffer as it is (not aligned: for buffered writes only).
  static std::shared_ptr<PendingWrite> Adopt(std::shared_ptr<const std::string> value);
  // Frees the buffer of a write dropped unwritten (no longer registered in its file, so nobody
  // reads it), though the writer's queue still holds this object until its turn; then runs
  // on_release. `size` and `capacity` stay as they were.
  void ReleaseBuffer();
};

class BlobFile {
 public:
  // Creates `path` with its header. `durable`: fsync the file and its directory, so the file
  // itself survives a power cut (needed when acknowledged writes must).
  static Result<std::shared_ptr<BlobFile>> Create(const std::string& path,
                                                  const format::BlobFileHeader& header,
                                                  bool durable);
  // Opens an existing file and checks its header. No appends are expected; `writable` false
  // opens it for reading only (a store opened read-only), where nothing may write or punch it.
  // The file is taken as durable, name and bytes: a read-write store open syncs what an
  // earlier process left first (StoreImpl::SyncLeftValueFiles).
  static Result<std::shared_ptr<BlobFile>> Open(const std::string& path, bool writable);
  // fsync of the directory `dir`: the names created or removed in it become durable.
  static Status SyncDirectory(const std::string& dir);

  ~BlobFile();
  BlobFile(const BlobFile&) = delete;
  BlobFile& operator=(const BlobFile&) = delete;

  const std::string& path() const { return path_; }
  const format::BlobFileHeader& header() const { return header_; }
  // Bytes of the file (header and values; the last value's padding excluded).
  uint64_t end() const { return end_.load(std::memory_order_acquire); }
  // Bytes the file occupies on disk, padding included.
  uint64_t disk_bytes() const { return format::AlignUp(end()); }

  // Writes `n` bytes at the next aligned offset and returns that offset in *offset. Only the
  // lease holder may call it. On failure nothing becomes visible (end() is unchanged).
  Status Append(const char* data, size_t n, uint64_t* offset);
  // Reserves the next aligned range for `w` and registers it as pending: reads of the range
  // are served from w's buffer until WritePending has written it. Only the lease holder may
  // call it.
  void AppendPending(std::shared_ptr<PendingWrite> w, uint64_t* offset);
  // Writes the pending range at `offset` (O_DIRECT where the filesystem allows it, buffered
  // otherwise), then forgets it. A failure marks it failed instead (PendingWrite::failed) and
  // goes to w.on_error, which must not wait for a sync or a punch of this file.
  void WritePending(uint64_t offset, const PendingWrite& w);
  // Forgets the failed write at `offset`, if it is still registered: its key is gone.
  void ForgetFailed(uint64_t offset);
  // The Put of the pending write at `offset` has written its index entry or given up: true if
  // the write failed and its removal was deferred (DeferRemovalUntilIndexed), which the caller
  // must now queue again.
  bool SettlePut(uint64_t offset);
  // Before a failed write's removal: true, with the removal marked deferred, if its Put has
  // not settled it yet (the index may not hold the version yet).
  bool DeferRemovalUntilIndexed(uint64_t offset);
  // Appends n bytes copied from `src` at `src_offset`, inside the kernel (copy_file_range).
  Status AppendCopy(const BlobFile& src, uint64_t src_offset, size_t n, uint64_t* offset);
  // Reads exactly n bytes at `offset` (buffered). An error or a short read is an IOError naming
  // the file; a range past the end reads as NotFound (a write that never became durable).
  Status Read(uint64_t offset, char* buf, size_t n) const;
  // Reads what of [offset, offset + n) the page cache already holds, from its start, without
  // waiting for the disk (preadv2 RWF_NOWAIT); returns the bytes read (0 on any error: the
  // caller reads the rest with Read).
  size_t ReadCached(uint64_t offset, char* buf, size_t n) const;
  // Reads the first n bytes of the value at [offset, offset + size) as Read does, taking what
  // the page cache holds first (ReadCached); if that is not all of them, the reads of the rest
  // of the value are queued (Prefetch) before the remainder is read, so the disk works ahead of
  // the reads of the pieces that follow.
  Status ReadFirstPiece(uint64_t offset, uint64_t size, char* buf, size_t n) const;
  // The same through O_DIRECT: `buf` and `n` multiples of kValueAlign and `offset` aligned.
  Status ReadDirect(uint64_t offset, char* buf, size_t n);
  // Copies [offset, offset + n) into buf through the file's mapping (FileMapping), hashing
  // the copy into `stream` as it goes (GuardedCopyAndUpdate), if the page cache holds the
  // range (its first and last pages) and no write of it is pending. False, with nothing read,
  // if not: the caller reads with Read. *s: an IOError naming the file if a page could not be
  // read (then false as well).
  bool CopyCached(uint64_t offset, char* buf, size_t n, format::ChecksumStream* stream,
                  Status* s) const;
  // XXH3 of [offset, offset + n) read in place, through the file's kept mapping or, without
  // `keep_mapping`, one made for this call, so the bytes are hashed where they lie in the page
  // cache, with no copy. A range not cached has its reads queued first (Prefetch), so the
  // disk reads ahead of the hash. The range must not be pending. IOError naming the file if it
  // cannot be mapped or a page cannot be read.
  Status HashInPlace(uint64_t offset, size_t n, bool keep_mapping, uint64_t* hash) const;
  // Whether reading [offset, offset + n) needs no disk read now: a write of it is still pending
  // (its bytes in memory), or the page cache holds every page (mincore through the kept
  // mapping, or with !keep_mapping one made for this call). Reads nothing.
  bool InMemory(uint64_t offset, size_t n, bool keep_mapping) const;
  // Lets go of the file's mapping (Store::UnmapFiles).
  void Unmap() { mapping_.Reset(); }
  // Starts reading [offset, offset + n) into the page cache and returns (a hint: the kernel may
  // drop it; errors are ignored, the read that follows reports them). One POSIX_FADV_WILLNEED:
  // the kernel queues at most the larger of the device's optimal I/O size and the readahead
  // window per call (8 MiB on the bench's disk), and its readahead follows the sequential reads
  // of the rest. Advising a longer value whole, in 2 MiB calls, made cold reads of 16 and 32 MiB
  // slower, not faster (bench/results/history.md), so it stays one call.
  void Prefetch(uint64_t offset, size_t n) const;
  // Makes everything appended so far durable: waits for its pending writes, then fdatasync,
  // and the file's directory entry with its first sync if Create did not make it durable;
  // concurrent callers share one sync. A write that failed (PendingWrite::failed) is not waited
  // for: its value is lost and its key on its way out, so the sync covers the rest. Once an
  // fdatasync failed, every later Sync fails too: Linux reports a writeback error once, and a
  // second fdatasync that succeeds does not bring back the pages it lost (SyncFailed).
  Status Sync();
  // True when bytes were appended since the last Sync.
  bool NeedsSync() const { return synced_.load(std::memory_order_acquire) < end(); }
  // Whether an fdatasync of the file failed: it takes no more appends (Generations leases it
  // no more), and syncs keep failing.
  bool SyncFailed() const { return sync_error_.load(std::memory_order_acquire) != 0; }

  int fd() const { return fd_; }
  // Whether [offset, offset + n) overlaps a write still pending (its bytes not in the file).
  bool IsPending(uint64_t offset, size_t n) const;
  // Copies [offset, offset + n) from the buffer of the pending write that covers it; false,
  // with nothing copied, if none does (written since, dropped, or never pending).
  bool ReadPending(uint64_t offset, char* buf, size_t n) const;
  // The value at `offset` was replaced or deleted by an index write that finished at
  // `memtable_epoch`: if its write is still pending and its own record went into the same
  // memtable (PendingWrite::memtable_epoch), skip it.
  void Supersede(uint64_t offset, uint64_t memtable_epoch);
  // Unlinks the file now; the descriptor closes with the last holder.
  void MarkDeleted();

  // --- Freeing dropped values in place (eviction's entries kept in place) ---
  // Whether files in `dir` can have ranges freed (fallocate's FALLOC_FL_PUNCH_HOLE), probed on
  // a scratch file.
  static bool CanPunchHoles(const std::string& dir);
  // Frees the blocks of [offset, AlignUp(offset + n)). No index entry may point into the range
  // any more; a record that a crash brings back may (the open drops it: Freed). A write pending
  // in the range and not yet started is skipped; one under way is waited for. The parts of the
  // range under a hold (HoldRange) wait for their holds to go; the rest is freed now. Returns
  // the bytes the file stops counting (accounted()): those not freed before, the held parts
  // included (the budget's slack is at most the bytes held, values being read), 0 if the
  // filesystem refused.
  uint64_t Punch(uint64_t offset, uint64_t n);
  // Whether any of [offset, offset + n) was freed (punched, or found a hole at open): a record
  // pointing there names a version given back before a crash forgot its removal.
  bool Freed(uint64_t offset, uint64_t n) const;
  // Punches every value range of the file outside `live` ((offset, size) extents, any order).
  uint64_t PunchAllBut(std::vector<std::pair<uint64_t, uint64_t>> live);
  // Keeps the blocks of [offset, offset + n) from being punched (and `f` open) until the
  // returned handle goes: what a read holds while it verifies and sends a value (GetFileRange
  // hands it out, so that the bytes it verified are the bytes sendfile sends).
  static std::shared_ptr<const void> HoldRange(std::shared_ptr<BlobFile> f, uint64_t offset,
                                               uint64_t n);
  // Bytes the file counts against the disk budget: disk_bytes() less its holes (punched here,
  // or found at open).
  uint64_t accounted() const {
    return disk_bytes() - std::min(disk_bytes(), holes_.load(std::memory_order_relaxed));
  }

 private:
  BlobFile(std::string path, int fd, const format::BlobFileHeader& header, uint64_t end);
  Status ReadAt(int fd, uint64_t offset, char* buf, size_t n) const;
  Status WriteError(const char* what, int err) const;
  // Waits until no write below `end` is pending, but for failed ones.
  void WaitPendingBelow(uint64_t end);
  // Before a punch of [begin, end): forgets the pending writes inside it that no writer took
  // yet (they are skipped, their buffers freed at once) or that failed, and waits for those
  // under way.
  void SkipOrAwaitPendingIn(uint64_t begin, uint64_t end);
  // The O_DIRECT descriptor, opened on first use; -1 where the filesystem refuses O_DIRECT.
  int DirectFd();
  // Frees [offset, offset + n) now; the caller holds punch_mu_. False if the kernel refused.
  bool PunchNowLocked(uint64_t offset, uint64_t n);
  // Records [begin, end) as freed; returns its bytes not recorded before. The caller holds
  // punch_mu_ (or is Open, before the file is shared).
  uint64_t AddHoleLocked(uint64_t begin, uint64_t end);
  // At open: records the file's holes (SEEK_HOLE); returns their bytes.
  uint64_t FindHoles();
  void ReleaseRange(std::pair<uint64_t, uint64_t> held);
  // Punches the parts of [begin, end) outside every hold and defers the others; false if the
  // filesystem refused a punch. The caller holds punch_mu_.
  bool PunchOrDeferLocked(uint64_t begin, uint64_t end);

  const std::string path_;
  const int fd_;
  mutable FileMapping mapping_{fd_};
  int direct_fd_ = -1;  // opened on first use
  bool direct_tried_ = false;
  bool writable_ = true;  // Open's `writable`: DirectFd opens for reading only if false
  std::mutex direct_mu_;
  mutable std::mutex pending_mu_;
  std::condition_variable pending_cv_;
  std::map<uint64_t, std::shared_ptr<PendingWrite>> pending_;  // by offset
  const format::BlobFileHeader header_;
  std::atomic<uint64_t> end_;
  std::atomic<uint64_t> synced_;
  std::mutex sync_mu_;
  bool name_synced_ = true;         // under sync_mu_: the directory entry is durable
  std::atomic<int> sync_error_{0};  // the errno of the fdatasync that failed; 0 if none did
  std::atomic<bool> deleted_{false};
  std::atomic<uint64_t> holes_{0};      // bytes below disk_bytes() that occupy no block
  mutable std::mutex punch_mu_;         // guards the three below; held across a punch
  std::map<uint64_t, uint64_t> freed_;  // ranges freed (begin -> end), disjoint, not touching
  // Held block ranges [begin, end), one per hold (a few: one per read of the file in flight).
  std::vector<std::pair<uint64_t, uint64_t>> holds_;
  std::vector<std::pair<uint64_t, uint64_t>> deferred_punches_;  // [begin, end), under holds
};

using BlobFilePtr = std::shared_ptr<BlobFile>;

}  // namespace larder
