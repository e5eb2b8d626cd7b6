#include "blob_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "guarded_read.h"
#include "sync_point.h"

namespace larder {

namespace {

std::string ErrnoText(int err) {
  return std::strerror(err);
}

std::string DirectoryOf(const std::string& path) {
  return std::filesystem::path(path).parent_path().string();
}

// Writes all of buf at offset; returns 0 or the errno.
int WriteFully(int fd, const char* buf, size_t n, uint64_t offset) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, buf, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return EIO;
    buf += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
  return 0;
}

}  // namespace

std::shared_ptr<PendingWrite> PendingWrite::CopyOf(std::string_view value) {
  auto w = std::make_shared<PendingWrite>();
  w->size = value.size();
  w->capacity = format::AlignUp(value.size());
  void* mem = nullptr;
  if (posix_memalign(&mem, format::kValueAlign, std::max<size_t>(w->capacity, 1)) != 0) {
    return nullptr;
  }
  w->aligned.reset(static_cast<char*>(mem));
  std::memcpy(w->aligned.get(), value.data(), value.size());
  std::memset(w->aligned.get() + value.size(), 0, w->capacity - value.size());
  w->data = w->aligned.get();
  return w;
}

std::shared_ptr<PendingWrite> PendingWrite::Adopt(std::shared_ptr<const std::string> value) {
  auto w = std::make_shared<PendingWrite>();
  w->owned = std::move(value);
  w->data = w->owned->data();
  w->size = w->capacity = w->owned->size();
  return w;
}

void PendingWrite::ReleaseBuffer() {
  aligned.reset();
  owned.reset();
  data = nullptr;
  released = true;
  if (on_release) on_release();
}

BlobFile::BlobFile(std::string path, int fd, const format::BlobFileHeader& header, uint64_t end)
    : path_(std::move(path)), fd_(fd), header_(header), end_(end), synced_(end) {}

BlobFile::~BlobFile() {
  ::close(fd_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
}

Status BlobFile::SyncDirectory(const std::string& dir) {
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return Status::IOError("opening " + dir + ": " + ErrnoText(errno));
  int rc = ::fsync(dfd);
  int err = errno;
  ::close(dfd);
  if (rc != 0) return Status::IOError("syncing " + dir + ": " + ErrnoText(err));
  return Status::OK();
}

Result<std::shared_ptr<BlobFile>> BlobFile::Create(const std::string& path,
                                                   const format::BlobFileHeader& header,
                                                   bool durable) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = errno;
    if (err == ENOSPC || err == EDQUOT) return Status::NoSpace("disk full creating " + path);
    return Status::IOError("creating " + path + ": " + ErrnoText(err));
  }
  std::shared_ptr<BlobFile> f(new BlobFile(path, fd, header, 0));
  const std::string h = header.Encode();
  if (int err = WriteFully(fd, h.data(), h.size(), 0); err != 0) {
    f->MarkDeleted();
    return f->WriteError("writing the header of", err);
  }
  f->end_ = h.size();
  if (durable) {
    // A file left behind would keep its name taken: the next Create of it fails (O_EXCL).
    int err = 0;
    testing::SyncPoint("BlobFile::Create:Sync", &err);
    if (err != 0 || ::fdatasync(fd) != 0) {
      err = err != 0 ? err : errno;
      f->MarkDeleted();
      return f->WriteError("syncing", err);
    }
    if (Status s = SyncDirectory(DirectoryOf(path)); !s.ok()) {
      f->MarkDeleted();
      return s;
    }
  }
  f->synced_ = durable ? h.size() : 0;
  f->name_synced_ = durable;
  return f;
}

Result<std::shared_ptr<BlobFile>> BlobFile::Open(const std::string& path, bool writable) {
  int injected = 0;
  testing::SyncPoint("BlobFile::Open", &injected);
  int fd = injected != 0 ? (errno = injected, -1)
                         : ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return Status::IOError("opening " + path + ": " + ErrnoText(errno));
  struct stat st {};
  char buf[format::kValueAlign];
  ssize_t n = ::fstat(fd, &st) == 0 ? ::pread(fd, buf, sizeof(buf), 0) : -1;
  if (n < 0) {
    // Not evidence about the file (EIO, ENOMEM...): the caller must not take it for damage.
    const int err = errno;
    ::close(fd);
    return Status::IOError("reading the header of " + path + ": " + ErrnoText(err));
  }
  std::optional<format::BlobFileHeader> h =
      format::BlobFileHeader::Decode(std::string_view(buf, static_cast<size_t>(n)));
  if (!h) {
    ::close(fd);
    return Status::Corruption(path + " has no valid blob file header");
  }
  auto f = std::shared_ptr<BlobFile>(new BlobFile(path, fd, *h, static_cast<uint64_t>(st.st_size)));
  f->writable_ = writable;
  // Holes (values skipped or freed in place before the open) take no disk space. Where the
  // filesystem reports none (no SEEK_HOLE), the allocated blocks tell their total.
  const uint64_t blocks = static_cast<uint64_t>(st.st_blocks) * 512;
  const uint64_t found = f->FindHoles();
  f->holes_ = found > 0 ? found : f->disk_bytes() - std::min(f->disk_bytes(), blocks);
  return f;
}

Status BlobFile::WriteError(const char* what, int err) const {
  if (err == ENOSPC || err == EDQUOT) return Status::NoSpace("disk full writing " + path_);
  return Status::IOError(std::string(what) + " " + path_ + ": " + ErrnoText(err));
}

Status BlobFile::Append(const char* data, size_t n, uint64_t* offset) {
  const uint64_t at = format::AlignUp(end());
  if (int err = WriteFully(fd_, data, n, at); err != 0) return WriteError("writing", err);
  *offset = at;
  end_.store(at + n, std::memory_order_release);
  return Status::OK();
}

void BlobFile::AppendPending(std::shared_ptr<PendingWrite> w, uint64_t* offset) {
  const uint64_t at = format::AlignUp(end());
  const size_t n = w->size;
  {
    std::lock_guard lock(pending_mu_);
    pending_[at] = std::move(w);
  }
  *offset = at;
  end_.store(at + n, std::memory_order_release);
}

int BlobFile::DirectFd() {
  std::lock_guard lock(direct_mu_);
  if (!direct_tried_) {
    direct_tried_ = true;
    direct_fd_ = ::open(path_.c_str(), (writable_ ? O_RDWR : O_RDONLY) | O_DIRECT | O_CLOEXEC);
  }
  return direct_fd_;
}

void BlobFile::Supersede(uint64_t offset, uint64_t memtable_epoch) {
  std::lock_guard lock(pending_mu_);
  auto it = pending_.find(offset);
  if (it != pending_.end() && it->second->memtable_epoch == memtable_epoch) {
    it->second->superseded = true;
  }
}

void BlobFile::WritePending(uint64_t offset, const PendingWrite& w) {
  {
    std::lock_guard lock(pending_mu_);
    auto it = pending_.find(offset);
    const bool registered = it != pending_.end() && it->second.get() == &w;  // not punched
    if (!registered || w.superseded) {
      if (registered) pending_.erase(it);
      pending_cv_.notify_all();
      return;
    }
    w.started = true;
  }
  int err = 0;
  testing::SyncPoint("BlobFile::WritePending:Write", &err);
  if (err == 0) {
    const int dfd = w.direct && w.aligned ? DirectFd() : -1;
    // O_DIRECT takes the whole aligned buffer (the zeroed tail lands in the padding); without
    // it, the value's bytes alone go through the page cache.
    err = dfd >= 0 ? WriteFully(dfd, w.data, w.capacity, offset)
                   : WriteFully(fd_, w.data, w.size, offset);
    if (err == EINVAL && dfd >= 0) err = WriteFully(fd_, w.data, w.size, offset);
  }
  {
    std::lock_guard lock(pending_mu_);
    // A failed write stays readable from its buffer until its key is removed: the range in the
    // file holds no value, and a read of it would count a corruption.
    if (err != 0) {
      w.failed = true;
    } else {
      pending_.erase(offset);
    }
  }
  pending_cv_.notify_all();
  if (err != 0 && w.on_error) w.on_error(WriteError("writing", err));
}

void BlobFile::ForgetFailed(uint64_t offset) {
  {
    std::lock_guard lock(pending_mu_);
    auto it = pending_.find(offset);
    if (it == pending_.end() || !it->second->failed) return;
    pending_.erase(it);
  }
  pending_cv_.notify_all();
}

bool BlobFile::SettlePut(uint64_t offset) {
  std::lock_guard lock(pending_mu_);
  auto it = pending_.find(offset);
  if (it == pending_.end()) return false;
  it->second->indexed = true;
  return it->second->failed && it->second->removal_deferred;
}

bool BlobFile::DeferRemovalUntilIndexed(uint64_t offset) {
  std::lock_guard lock(pending_mu_);
  auto it = pending_.find(offset);
  if (it == pending_.end() || it->second->indexed) return false;
  it->second->removal_deferred = true;
  return true;
}

bool BlobFile::ReadPending(uint64_t offset, char* buf, size_t n) const {
  std::lock_guard lock(pending_mu_);
  if (pending_.empty()) return false;
  auto it = pending_.upper_bound(offset);
  if (it == pending_.begin()) return false;
  --it;
  const PendingWrite& w = *it->second;
  if (offset < it->first || offset + n > it->first + w.size) return false;
  std::memcpy(buf, w.data + (offset - it->first), n);
  return true;
}

bool BlobFile::CopyCached(uint64_t offset, char* buf, size_t n, format::ChecksumStream* stream,
                          Status* s) const {
  if (offset + n > end() || IsPending(offset, n)) return false;
  std::shared_ptr<const FileMapping::View> view = mapping_.Covering(offset + n);
  if (!view || !view->EndsCached(offset, n)) return false;
  return GuardedCopyAndUpdate(stream, buf, view->At(offset), n, s, path_);
}

Status BlobFile::HashInPlace(uint64_t offset, size_t n, bool keep_mapping, uint64_t* hash) const {
  if (n == 0) {
    *hash = format::Checksum(nullptr, 0);
    return Status::OK();
  }
  std::shared_ptr<const FileMapping::View> view =
      keep_mapping ? mapping_.Covering(offset + n) : mapping_.Transient(offset, n);
  if (!view) return Status::IOError("mapping " + path_ + ": " + ErrnoText(errno));
  // A value not wholly cached has its reads queued first (Prefetch), so the disk works ahead
  // while the pages already read are hashed.
  if (!view->EndsCached(offset, n)) Prefetch(offset, n);
  format::ChecksumStream stream;
  Status s;
  if (!GuardedUpdate(&stream, view->At(offset), n, &s, path_)) return s;
  *hash = stream.Digest();
  return Status::OK();
}

bool BlobFile::InMemory(uint64_t offset, size_t n, bool keep_mapping) const {
  if (IsPending(offset, n)) return true;
  if (n == 0 || offset + n > end()) return false;
  std::shared_ptr<const FileMapping::View> view =
      keep_mapping ? mapping_.Covering(offset + n) : mapping_.Transient(offset, n);
  return view && view->Cached(offset, n);
}

void BlobFile::Prefetch(uint64_t offset, size_t n) const {
  ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(n), POSIX_FADV_WILLNEED);
}

bool BlobFile::IsPending(uint64_t offset, size_t n) const {
  std::lock_guard lock(pending_mu_);
  // The last write starting before the range's end (one starting at its end does not touch it).
  auto it = pending_.lower_bound(offset + n);
  return it != pending_.begin() && std::prev(it)->first + std::prev(it)->second->size > offset;
}

Status BlobFile::AppendCopy(const BlobFile& src, uint64_t src_offset, size_t n, uint64_t* offset) {
  if (src.IsPending(src_offset, n)) {
    // Not on disk yet: copy it from its buffer.
    std::vector<char> buf(n);
    if (Status s = src.Read(src_offset, buf.data(), n); !s.ok()) return s;
    return Append(buf.data(), n, offset);
  }
  const uint64_t at = format::AlignUp(end());
  loff_t in = static_cast<loff_t>(src_offset), out = static_cast<loff_t>(at);
  size_t left = n;
  while (left > 0) {
    ssize_t c = ::copy_file_range(src.fd_, &in, fd_, &out, left, 0);
    if (c < 0 && errno == EINTR) continue;
    if (c < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP || errno == EINVAL)) {
      // No in-kernel copy here: copy through a buffer.
      std::vector<char> buf(std::min<size_t>(left, 1 << 20));
      while (left > 0) {
        size_t k = std::min(left, buf.size());
        if (Status s = src.Read(static_cast<uint64_t>(in), buf.data(), k); !s.ok()) return s;
        if (int err = WriteFully(fd_, buf.data(), k, static_cast<uint64_t>(out)); err != 0) {
          return WriteError("writing", err);
        }
        in += static_cast<loff_t>(k);
        out += static_cast<loff_t>(k);
        left -= k;
      }
      break;
    }
    if (c < 0) return WriteError("copying into", errno);
    if (c == 0) return Status::IOError("copying from " + src.path_ + ": range past its end");
    left -= static_cast<size_t>(c);
  }
  *offset = at;
  end_.store(at + n, std::memory_order_release);
  return Status::OK();
}

Status BlobFile::ReadAt(int fd, uint64_t offset, char* buf, size_t n) const {
  while (n > 0) {
    ssize_t r = ::pread(fd, buf, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::IOError("reading " + path_ + ": " + ErrnoText(errno));
    if (r == 0) return Status::NotFound("range past the end of " + path_);
    buf += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return Status::OK();
}

Status BlobFile::Read(uint64_t offset, char* buf, size_t n) const {
  if (ReadPending(offset, buf, n)) return Status::OK();
  return ReadAt(fd_, offset, buf, n);
}

size_t BlobFile::ReadCached(uint64_t offset, char* buf, size_t n) const {
  if (ReadPending(offset, buf, n)) return n;
  struct iovec iov = {buf, n};
  ssize_t r = ::preadv2(fd_, &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT);
  return r > 0 ? static_cast<size_t>(r) : 0;
}

Status BlobFile::ReadFirstPiece(uint64_t offset, uint64_t size, char* buf, size_t n) const {
  const size_t cached = ReadCached(offset, buf, n);
  if (cached == n) return Status::OK();
  Prefetch(offset + cached, size - cached);
  return Read(offset + cached, buf + cached, n - cached);
}

Status BlobFile::ReadDirect(uint64_t offset, char* buf, size_t n) {
  if (ReadPending(offset, buf, n)) return Status::OK();
  const int dfd = DirectFd();
  if (dfd < 0) return Read(offset, buf, n);  // no O_DIRECT on this filesystem
  return ReadAt(dfd, offset, buf, n);
}

void BlobFile::WaitPendingBelow(uint64_t end) {
  std::unique_lock lock(pending_mu_);
  pending_cv_.wait(lock, [&] {
    for (auto it = pending_.begin(); it != pending_.end() && it->first < end; ++it) {
      if (!it->second->failed) return false;
    }
    return true;
  });
}

void BlobFile::SkipOrAwaitPendingIn(uint64_t begin, uint64_t end) {
  std::unique_lock lock(pending_mu_);
  auto overlapping = [&] {  // the first pending write overlapping the range, or end()
    auto it = pending_.lower_bound(begin);
    if (it != pending_.begin() && std::prev(it)->first + std::prev(it)->second->capacity > begin)
      --it;
    return it != pending_.end() && it->first < end ? it : pending_.end();
  };
  // Drops what no writer is writing; true if one still is.
  auto drop_unwritten = [&] {
    bool writing = false;
    for (auto it = overlapping(); it != pending_.end() && it->first < end;) {
      PendingWrite& w = *it->second;
      if (w.started && !w.failed) {
        writing = true;
        ++it;
        continue;
      }
      // Not started: its writer finds it gone and skips it. Failed: its bytes left the writer's
      // count when its job ended, so only the registration goes.
      if (!w.started) w.ReleaseBuffer();
      it = pending_.erase(it);
    }
    return writing;
  };
  while (drop_unwritten()) pending_cv_.wait(lock);
  pending_cv_.notify_all();  // syncs wait for the dropped writes to leave
}

bool BlobFile::Freed(uint64_t offset, uint64_t n) const {
  std::lock_guard lock(punch_mu_);
  auto it = freed_.upper_bound(offset);
  if (it != freed_.begin() && std::prev(it)->second > offset) return true;
  return it != freed_.end() && it->first < offset + n;
}

Status BlobFile::Sync() {
  // Everything below `target` is in the file once its pending writes are done (Append writes
  // before it moves end_; AppendPending registers before). What was appended after `target`
  // may still be pending, so the sync covers `target` only, never the end it finds later.
  const uint64_t target = end();
  if (synced_.load(std::memory_order_acquire) >= target) return Status::OK();
  WaitPendingBelow(target);
  testing::SyncPoint("BlobFile::Sync:AfterWait");
  std::lock_guard lock(sync_mu_);
  if (synced_.load(std::memory_order_acquire) >= target) return Status::OK();  // a peer did it
  if (const int failed = sync_error_.load(std::memory_order_acquire); failed != 0) {
    return WriteError("syncing (an earlier sync failed; its unsynced bytes may be lost)", failed);
  }
  int err = 0;
  testing::SyncPoint("BlobFile::Sync:Result", &err);
  if (err != 0 || ::fdatasync(fd_) != 0) {
    err = err != 0 ? err : errno;
    sync_error_.store(err, std::memory_order_release);
    return WriteError("syncing", err);
  }
  if (!name_synced_) {
    // The bytes are no use without the name: a power cut could drop a new file whole.
    if (Status s = SyncDirectory(DirectoryOf(path_)); !s.ok()) return s;
    name_synced_ = true;
  }
  synced_.store(target, std::memory_order_release);
  return Status::OK();
}

void BlobFile::MarkDeleted() {
  if (!deleted_.exchange(true)) ::unlink(path_.c_str());
}

bool BlobFile::CanPunchHoles(const std::string& dir) {
  const std::string path = dir + "/.punch-probe";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::unlink(path.c_str());
  std::vector<char> block(2 * format::kValueAlign, 'x');
  bool ok = WriteFully(fd, block.data(), block.size(), 0) == 0 &&
            ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                        static_cast<off_t>(format::kValueAlign)) == 0;
  ::close(fd);
  return ok;
}

bool BlobFile::PunchNowLocked(uint64_t offset, uint64_t n) {
  return ::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                     static_cast<off_t>(n)) == 0;
}

uint64_t BlobFile::Punch(uint64_t offset, uint64_t n) {
  const uint64_t begin = std::max<uint64_t>(offset, format::kValueAlign);  // never the header
  const uint64_t end = std::min(format::AlignUp(offset + n), disk_bytes());
  if (end <= begin) return 0;
  SkipOrAwaitPendingIn(begin, end);  // a write landing after the punch would fill the hole
  std::lock_guard lock(punch_mu_);
  if (!PunchOrDeferLocked(begin, end)) return 0;
  const uint64_t added = AddHoleLocked(begin, end);  // a range freed twice counts once
  holes_ += added;
  return added;
}

uint64_t BlobFile::AddHoleLocked(uint64_t begin, uint64_t end) {
  uint64_t added = end - begin;
  auto it = freed_.upper_bound(begin);
  if (it != freed_.begin() && std::prev(it)->second >= begin) --it;
  uint64_t merged_begin = begin;
  uint64_t merged_end = end;
  while (it != freed_.end() && it->first <= end) {
    const uint64_t lo = std::max(it->first, begin);
    const uint64_t hi = std::min(it->second, end);
    if (hi > lo) added -= hi - lo;
    merged_begin = std::min(merged_begin, it->first);
    merged_end = std::max(merged_end, it->second);
    it = freed_.erase(it);
  }
  freed_.emplace(merged_begin, merged_end);
  return added;
}

uint64_t BlobFile::FindHoles() {
  uint64_t total = 0;
  const auto size = static_cast<off_t>(disk_bytes());
  off_t hole = ::lseek(fd_, static_cast<off_t>(format::kValueAlign), SEEK_HOLE);
  while (hole >= 0 && hole < size) {
    off_t data = ::lseek(fd_, hole, SEEK_DATA);
    if (data < 0 || data > size) data = size;  // ENXIO: a hole up to the end
    total += AddHoleLocked(static_cast<uint64_t>(hole), static_cast<uint64_t>(data));
    if (data >= size) break;
    hole = ::lseek(fd_, data, SEEK_HOLE);
  }
  return total;
}

uint64_t BlobFile::PunchAllBut(std::vector<std::pair<uint64_t, uint64_t>> live) {
  std::sort(live.begin(), live.end());
  uint64_t freed = 0;
  uint64_t cursor = format::kValueAlign;  // the first value's place, after the header
  for (const auto& [offset, size] : live) {
    if (offset > cursor) freed += Punch(cursor, offset - cursor);
    cursor = std::max(cursor, format::AlignUp(offset + size));
  }
  if (disk_bytes() > cursor) freed += Punch(cursor, disk_bytes() - cursor);
  return freed;
}

bool BlobFile::PunchOrDeferLocked(uint64_t begin, uint64_t end) {
  std::vector<std::pair<uint64_t, uint64_t>> held;  // the holds' parts inside [begin, end)
  for (const auto& [b, e] : holds_) {
    if (b < end && e > begin) held.emplace_back(std::max(b, begin), std::min(e, end));
  }
  std::sort(held.begin(), held.end());
  bool ok = true;
  uint64_t cursor = begin;
  for (const auto& [b, e] : held) {
    if (b > cursor) ok = PunchNowLocked(cursor, b - cursor) && ok;
    if (e > std::max(cursor, b)) deferred_punches_.emplace_back(std::max(cursor, b), e);
    cursor = std::max(cursor, e);
  }
  if (end > cursor) ok = PunchNowLocked(cursor, end - cursor) && ok;
  return ok;
}

std::shared_ptr<const void> BlobFile::HoldRange(std::shared_ptr<BlobFile> f, uint64_t offset,
                                                uint64_t n) {
  // Whole blocks: a punch frees whole blocks, the held value's first and last included.
  const std::pair<uint64_t, uint64_t> held{offset / format::kValueAlign * format::kValueAlign,
                                           format::AlignUp(offset + n)};
  {
    std::lock_guard lock(f->punch_mu_);
    f->holds_.push_back(held);
  }
  BlobFile* raw = f.get();
  return std::shared_ptr<const void>(
      raw, [f = std::move(f), held](const void*) { f->ReleaseRange(held); });
}

void BlobFile::ReleaseRange(std::pair<uint64_t, uint64_t> held) {
  std::lock_guard lock(punch_mu_);
  auto it = std::find(holds_.begin(), holds_.end(), held);
  if (it != holds_.end()) {
    *it = holds_.back();
    holds_.pop_back();
  }
  if (deferred_punches_.empty()) return;
  // Under the lock: a hold taken after this sees the range already freed (a miss), never
  // freed under it. What another hold still covers waits again.
  std::vector<std::pair<uint64_t, uint64_t>> waiting = std::exchange(deferred_punches_, {});
  for (const auto& [b, e] : waiting) (void)PunchOrDeferLocked(b, e);
}

}  // namespace larder
