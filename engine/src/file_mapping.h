// FileMapping: one read-only shared mapping of a file, kept for reuse, so that reading bytes the
// page cache holds needs no system call and no copy by the kernel: the reader copies them out
// itself and hashes each piece of the copy while it is still in the CPU's cache (one pass over
// memory where read() and a hash make two). Page-table entries made by one read serve the next
// reads of the same pages; the kernel drops them with the pages (reclaim, a punched hole), so
// they never outnumber the page cache. See docs/architecture.md, "Read paths".
//
// The file may grow: a mapping covers what the file had when it was made (rounded up), and a
// read past it makes a longer one, which replaces it for later readers; a reader holding the
// older one keeps it until it lets go.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace larder {

class FileMapping {
 public:
  // One mapping of the file's bytes [first, first + size).
  class View {
   public:
    View(const char* base, uint64_t first, size_t size) : base_(base), first_(first), size_(size) {}
    ~View();
    View(const View&) = delete;
    View& operator=(const View&) = delete;
    // Whether the view covers [offset, offset + n).
    bool Covers(uint64_t offset, size_t n) const {
      return offset >= first_ && offset + n <= first_ + size_;
    }
    size_t size() const { return size_; }
    // Where the file's byte `offset` is mapped; Covers(offset, 1) must hold.
    const char* At(uint64_t offset) const { return base_ + (offset - first_); }
    // Whether the page cache holds the pages of [offset, offset + n)'s first and last bytes
    // (mincore; a cold range is read better by pread, which queues its reads ahead).
    bool EndsCached(uint64_t offset, size_t n) const;
    // Whether the page cache holds every page of [offset, offset + n) (mincore, no I/O).
    bool Cached(uint64_t offset, size_t n) const;

   private:
    const char* const base_;
    const uint64_t first_;
    const size_t size_;
  };

  explicit FileMapping(int fd) : fd_(fd) {}

  // A mapping covering [0, end), kept: the current one if it does, else a new one of at least
  // twice its length (so a growing file is remapped a logarithmic number of times). nullptr if
  // the kernel refuses (address space or map count exhausted): the caller reads with pread.
  std::shared_ptr<const View> Covering(uint64_t end);
  // A mapping of [offset, offset + n) for the caller alone, unmapped when it lets go; nullptr
  // if the kernel refuses.
  std::shared_ptr<const View> Transient(uint64_t offset, size_t n) const;
  // Lets go of the kept mapping (it is unmapped when its last reader lets go too); the next
  // Covering maps the file again.
  void Reset();

 private:
  // Maps [first, first + len) (first a multiple of the page size); nullptr if refused.
  std::shared_ptr<const View> Map(uint64_t first, size_t len) const;

  const int fd_;
  std::mutex mu_;
  std::shared_ptr<const View> view_;
};

}  // namespace larder
