// BlobFile: one append-only file of values (format.h), written by one writer at a time (the
// holder of its partition lease) and read by any number of threads with pread.
//
// Every value starts at a multiple of format::kValueAlign after a 4 KiB header. The file is
// never rewritten below end(): readers may read any range a record points at while writers
// append. Deleting the file (MarkDeleted) unlinks it at once; the descriptor stays open, so
// reads that already hold the file finish, and the space returns when the last holder lets go.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "format.h"
#include "larder/status.h"

namespace larder {

class BlobFile {
 public:
  // Creates `path` with its header. `durable`: fsync the file and its directory, so the file
  // itself survives a power cut (needed when acknowledged writes must).
  static Result<std::shared_ptr<BlobFile>> Create(const std::string& path,
                                                  const format::BlobFileHeader& header,
                                                  bool durable);
  // Opens an existing file read-only-in-spirit (no appends are expected, but allowed) and
  // checks its header.
  static Result<std::shared_ptr<BlobFile>> Open(const std::string& path);

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
  // Appends n bytes copied from `src` at `src_offset`, inside the kernel (copy_file_range).
  Status AppendCopy(const BlobFile& src, uint64_t src_offset, size_t n, uint64_t* offset);
  // Reads exactly n bytes at `offset` (buffered). An error or a short read is an IOError naming
  // the file; a range past the end reads as NotFound (a write that never became durable).
  Status Read(uint64_t offset, char* buf, size_t n) const;
  // The same through O_DIRECT: `buf` and `n` multiples of kValueAlign and `offset` aligned.
  Status ReadDirect(uint64_t offset, char* buf, size_t n);
  // Makes everything appended so far durable (fdatasync); concurrent callers share one sync.
  Status Sync();
  // True when bytes were appended since the last Sync.
  bool NeedsSync() const { return synced_.load(std::memory_order_acquire) < end(); }

  int fd() const { return fd_; }
  // Unlinks the file now; the descriptor closes with the last holder.
  void MarkDeleted();

 private:
  BlobFile(std::string path, int fd, const format::BlobFileHeader& header, uint64_t end);
  Status ReadAt(int fd, uint64_t offset, char* buf, size_t n) const;
  Status WriteError(const char* what, int err) const;

  const std::string path_;
  const int fd_;
  int direct_fd_ = -1;  // opened on first ReadDirect
  std::mutex direct_mu_;
  const format::BlobFileHeader header_;
  std::atomic<uint64_t> end_;
  std::atomic<uint64_t> synced_;
  std::mutex sync_mu_;
  std::atomic<bool> deleted_{false};
};

using BlobFilePtr = std::shared_ptr<BlobFile>;

}  // namespace larder
