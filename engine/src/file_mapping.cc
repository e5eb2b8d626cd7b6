#include "file_mapping.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

namespace larder {

namespace {

// A function, not a namespace-scope constant: reads may run before this file's static
// initializers (a program that opens a store from its own static initializers).
uint64_t PageSize() {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}
constexpr uint64_t kMapUnit = uint64_t{2} << 20;  // kept mappings' lengths are multiples of this

}  // namespace

FileMapping::View::~View() {
  ::munmap(const_cast<char*>(base_), size_);
}

bool FileMapping::View::EndsCached(uint64_t offset, size_t n) const {
  return n > 0 && Cached(offset, 1) && Cached(offset + n - 1, 1);
}

bool FileMapping::View::Cached(uint64_t offset, size_t n) const {
  if (n == 0 || !Covers(offset, n)) return false;
  constexpr size_t kPagesPerCall = 4096;
  unsigned char in_core[kPagesPerCall];
  const uint64_t page = PageSize();
  uint64_t at = offset / page * page;
  const uint64_t end = offset + n;
  while (at < end) {
    const size_t pages =
        static_cast<size_t>(std::min<uint64_t>((end - at + page - 1) / page, kPagesPerCall));
    // Views start at a page boundary (Map), so `at` never lies below this one.
    if (::mincore(const_cast<char*>(At(at)), pages * page, in_core) != 0) return false;
    for (size_t i = 0; i < pages; ++i) {
      if (!(in_core[i] & 1)) return false;
    }
    at += pages * page;
  }
  return true;
}

std::shared_ptr<const FileMapping::View> FileMapping::Map(uint64_t first, size_t len) const {
  // Pages past the file's end may be mapped too, but are never touched: readers stay below it.
  void* m = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd_, static_cast<off_t>(first));
  if (m == MAP_FAILED) return nullptr;
  return std::make_shared<const View>(static_cast<const char*>(m), first, len);
}

std::shared_ptr<const FileMapping::View> FileMapping::Covering(uint64_t end) {
  std::lock_guard lock(mu_);
  if (view_ && view_->Covers(0, end)) return view_;
  const uint64_t want = std::max<uint64_t>(end, view_ ? 2 * uint64_t{view_->size()} : 0);
  return view_ = Map(0, static_cast<size_t>((want + kMapUnit - 1) / kMapUnit * kMapUnit));
}

std::shared_ptr<const FileMapping::View> FileMapping::Transient(uint64_t offset, size_t n) const {
  const uint64_t first = offset / PageSize() * PageSize();
  return Map(first, static_cast<size_t>(offset + n - first));
}

void FileMapping::Reset() {
  std::lock_guard lock(mu_);
  view_.reset();
}

}  // namespace larder
