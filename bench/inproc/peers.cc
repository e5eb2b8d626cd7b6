#include "peers.h"

#include <fcntl.h>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "larder/store.h"

namespace larder::bench {
namespace {

class LarderPeer : public Peer {
 public:
  LarderPeer(std::unique_ptr<Store> s, const LarderPeerOptions& o) : s_(std::move(s)), o_(o) {}
  bool Put(const std::string& key, std::string_view value) override {
    return s_->Put(key, value).ok();
  }
  // One GetInto into this thread's reused buffer; a value larger than the buffer is sized from
  // the in-memory index (Info, no disk I/O) and read again, as the files peer fstat()s.
  bool Get(const std::string& key, uint64_t* h, size_t* len) override {
    thread_local AlignedBuffer buf;
    for (int attempt = 0; attempt < 2; ++attempt) {
      Result<uint64_t> n = s_->GetInto(key, buf.data(), buf.capacity());
      if (n.ok()) {
        if (h) *h = XXH3_64bits(buf.data(), *n);
        *len = *n;
        return true;
      }
      if (!n.status().IsInvalidArgument()) return false;
      Result<KeyInfo> info = s_->Info(key);
      if (!info.ok() || !buf.Reserve(info->value_size)) return false;
    }
    return false;
  }
  bool Sync() override { return s_->Flush().ok(); }
  bool GetBatch(std::vector<BatchItem>* items) override {
    std::vector<std::string_view> keys;
    std::vector<Store::Buffer> bufs;
    for (const BatchItem& it : *items) {
      keys.push_back(it.key);
      bufs.push_back({it.buf, it.cap});
    }
    std::vector<Result<uint64_t>> got = s_->MultiGetInto(keys, bufs);
    for (size_t i = 0; i < items->size(); ++i) {
      (*items)[i].len = got[i].ok() ? static_cast<int64_t>(*got[i]) : -1;
    }
    return true;
  }
  std::string OptionsJson() const override {
    char b[256];
    std::snprintf(b, sizeof b,
                  "\"wal\":false,\"direct_reads\":%s,\"mapped_reads\":%s,"
                  "\"read_queue_depth\":%d,\"memtable_bytes\":%llu,\"max_disk_bytes\":%llu",
                  o_.direct_reads ? "true" : "false", o_.mapped_reads ? "true" : "false",
                  o_.read_queue_depth, (unsigned long long)o_.memtable_bytes,
                  (unsigned long long)o_.max_disk_bytes);
    return b;
  }

 private:
  std::unique_ptr<Store> s_;
  LarderPeerOptions o_;
};

class RocksPeer : public Peer {
 public:
  RocksPeer(rocksdb::DB* db, bool wal) : db_(db) { wo_.disableWAL = !wal; }
  ~RocksPeer() override { delete db_; }
  bool Put(const std::string& key, std::string_view value) override {
    return db_->Put(wo_, key, rocksdb::Slice(value.data(), value.size())).ok();
  }
  bool Get(const std::string& key, uint64_t* h, size_t* len) override {
    rocksdb::PinnableSlice v;
    if (!db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), key, &v).ok()) return false;
    if (h) *h = XXH3_64bits(v.data(), v.size());
    *len = v.size();
    return true;
  }
  bool Sync() override { return db_->Flush(rocksdb::FlushOptions()).ok(); }

 private:
  rocksdb::DB* db_;
  rocksdb::WriteOptions wo_;
};

class FilesPeer : public Peer {
 public:
  explicit FilesPeer(std::string dir) : dir_(std::move(dir)) {}
  bool Put(const std::string& key, std::string_view value) override {
    int fd = open(Path(key).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return false;
    bool ok = WriteAll(fd, value);
    return close(fd) == 0 && ok;
  }
  bool Get(const std::string& key, uint64_t* h, size_t* len) override {
    thread_local AlignedBuffer buf;
    int fd = open(Path(key).c_str(), O_RDONLY);
    if (fd < 0) return false;
    struct stat st;
    if (fstat(fd, &st) != 0) {
      close(fd);
      return false;
    }
    size_t n = static_cast<size_t>(st.st_size), done = 0;
    if (!buf.Reserve(n)) {
      close(fd);
      return false;
    }
    while (done < n) {
      ssize_t r = read(fd, buf.data() + done, n - done);
      if (r <= 0) break;
      done += static_cast<size_t>(r);
    }
    close(fd);
    if (done != n) return false;
    if (h) *h = XXH3_64bits(buf.data(), n);
    *len = n;
    return true;
  }
  bool Sync() override {
    int fd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return false;
    bool ok = syncfs(fd) == 0;
    close(fd);
    return ok;
  }

 private:
  std::string Path(const std::string& key) const {
    static const char kHex[] = "0123456789abcdef";
    std::string p = dir_ + "/";
    for (unsigned char c : key) p += kHex[c >> 4], p += kHex[c & 15];
    return p;
  }
  static bool WriteAll(int fd, std::string_view v) {
    size_t done = 0;
    while (done < v.size()) {
      ssize_t w = write(fd, v.data() + done, v.size() - done);
      if (w <= 0) return false;
      done += static_cast<size_t>(w);
    }
    return true;
  }
  std::string dir_;
};

}  // namespace

AlignedBuffer::~AlignedBuffer() {
  std::free(data_);
}

AlignedBuffer::AlignedBuffer(AlignedBuffer&& o) noexcept : data_(o.data_), cap_(o.cap_) {
  o.data_ = nullptr;
  o.cap_ = 0;
}

bool AlignedBuffer::Reserve(size_t n) {
  if (n <= cap_) return true;
  void* p = nullptr;
  if (posix_memalign(&p, 4096, std::max<size_t>(n, 4096)) != 0) return false;
  std::free(data_);
  data_ = static_cast<char*>(p);
  cap_ = std::max<size_t>(n, 4096);
  return true;
}

std::unique_ptr<Peer> OpenPeer(const std::string& name, const std::string& dir,
                               const LarderPeerOptions& lo) {
  if (name == "larder") {
    Options o;
    o.max_disk_bytes = lo.max_disk_bytes;
    o.direct_reads = lo.direct_reads;
    o.mapped_reads = lo.mapped_reads;
    o.read_queue_depth = lo.read_queue_depth;
    o.memtable_bytes = lo.memtable_bytes;
    auto r = Store::Open(o, dir);
    if (!r.ok()) {
      std::fprintf(stderr, "larder open %s: %s\n", dir.c_str(), r.status().ToString().c_str());
      return nullptr;
    }
    return std::make_unique<LarderPeer>(std::move(r).value(), lo);
  }
  if (name == "rocksdb" || name == "rocksdb-nowal") {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(o, dir, &db);
    if (!s.ok()) {
      std::fprintf(stderr, "rocksdb open %s: %s\n", dir.c_str(), s.ToString().c_str());
      return nullptr;
    }
    return std::make_unique<RocksPeer>(db, name == "rocksdb");
  }
  if (name == "files") {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      std::fprintf(stderr, "mkdir %s: %s\n", dir.c_str(), ec.message().c_str());
      return nullptr;
    }
    return std::make_unique<FilesPeer>(dir);
  }
  std::fprintf(stderr, "unknown peer %s\n", name.c_str());
  return nullptr;
}

}  // namespace larder::bench
