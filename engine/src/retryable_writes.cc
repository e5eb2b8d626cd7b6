#include "retryable_writes.h"

#include <string>
#include <utility>

namespace larder {

rocksdb::IOStatus MarkRetryable(rocksdb::IOStatus s) {
  if (s.IsIOError() && !s.IsNoSpace() && !s.IsIOFenced() && !s.GetDataLoss()) {
    s.SetRetryable(true);
  }
  return s;
}

namespace {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

class RetryableFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  explicit RetryableFile(std::unique_ptr<rocksdb::FSWritableFile> file)
      : FSWritableFileOwnerWrapper(std::move(file)) {}
  using Base = FSWritableFileOwnerWrapper;

  IOStatus Append(const Slice& d, const IOOptions& o, IODebugContext* dbg) override {
    return MarkRetryable(Base::Append(d, o, dbg));
  }
  IOStatus Append(const Slice& d, const IOOptions& o, const rocksdb::DataVerificationInfo& v,
                  IODebugContext* dbg) override {
    return MarkRetryable(Base::Append(d, o, v, dbg));
  }
  IOStatus PositionedAppend(const Slice& d, uint64_t at, const IOOptions& o,
                            IODebugContext* dbg) override {
    return MarkRetryable(Base::PositionedAppend(d, at, o, dbg));
  }
  IOStatus PositionedAppend(const Slice& d, uint64_t at, const IOOptions& o,
                            const rocksdb::DataVerificationInfo& v, IODebugContext* dbg) override {
    return MarkRetryable(Base::PositionedAppend(d, at, o, v, dbg));
  }
  IOStatus Truncate(uint64_t size, const IOOptions& o, IODebugContext* dbg) override {
    return MarkRetryable(Base::Truncate(size, o, dbg));
  }
  IOStatus Close(const IOOptions& o, IODebugContext* dbg) override {
    return MarkRetryable(Base::Close(o, dbg));
  }
  IOStatus Flush(const IOOptions& o, IODebugContext* dbg) override {
    return MarkRetryable(Base::Flush(o, dbg));
  }
  IOStatus Sync(const IOOptions& o, IODebugContext* dbg) override {
    return MarkRetryable(Base::Sync(o, dbg));
  }
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    return MarkRetryable(Base::Fsync(o, dbg));
  }
  IOStatus RangeSync(uint64_t at, uint64_t n, const IOOptions& o, IODebugContext* dbg) override {
    return MarkRetryable(Base::RangeSync(at, n, o, dbg));
  }
  IOStatus Allocate(uint64_t at, uint64_t n, const IOOptions& o, IODebugContext* dbg) override {
    return MarkRetryable(Base::Allocate(at, n, o, dbg));
  }
};

class RetryableDirectory : public rocksdb::FSDirectoryWrapper {
 public:
  explicit RetryableDirectory(std::unique_ptr<rocksdb::FSDirectory> dir)
      : FSDirectoryWrapper(std::move(dir)) {}
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    return MarkRetryable(FSDirectoryWrapper::Fsync(o, dbg));
  }
  IOStatus FsyncWithDirOptions(const IOOptions& o, IODebugContext* dbg,
                               const rocksdb::DirFsyncOptions& d) override {
    return MarkRetryable(FSDirectoryWrapper::FsyncWithDirOptions(o, dbg, d));
  }
  IOStatus Close(const IOOptions& o, IODebugContext* dbg) override {
    return MarkRetryable(FSDirectoryWrapper::Close(o, dbg));
  }
};

class RetryableWritesFs : public rocksdb::FileSystemWrapper {
 public:
  explicit RetryableWritesFs(std::shared_ptr<rocksdb::FileSystem> base)
      : FileSystemWrapper(std::move(base)) {}
  const char* Name() const override { return "LarderRetryableWrites"; }

  IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                           std::unique_ptr<rocksdb::FSWritableFile>* r,
                           IODebugContext* dbg) override {
    return Wrapped(target()->NewWritableFile(f, o, r, dbg), r);
  }
  IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                              std::unique_ptr<rocksdb::FSWritableFile>* r,
                              IODebugContext* dbg) override {
    return Wrapped(target()->ReopenWritableFile(f, o, r, dbg), r);
  }
  IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                             const rocksdb::FileOptions& o,
                             std::unique_ptr<rocksdb::FSWritableFile>* r,
                             IODebugContext* dbg) override {
    return Wrapped(target()->ReuseWritableFile(f, old, o, r, dbg), r);
  }
  IOStatus NewDirectory(const std::string& name, const IOOptions& o,
                        std::unique_ptr<rocksdb::FSDirectory>* r, IODebugContext* dbg) override {
    IOStatus s = target()->NewDirectory(name, o, r, dbg);
    if (s.ok()) *r = std::make_unique<RetryableDirectory>(std::move(*r));
    return MarkRetryable(std::move(s));
  }
  IOStatus RenameFile(const std::string& from, const std::string& to, const IOOptions& o,
                      IODebugContext* dbg) override {
    return MarkRetryable(target()->RenameFile(from, to, o, dbg));
  }
  IOStatus DeleteFile(const std::string& f, const IOOptions& o, IODebugContext* dbg) override {
    return MarkRetryable(target()->DeleteFile(f, o, dbg));
  }

 private:
  static IOStatus Wrapped(IOStatus s, std::unique_ptr<rocksdb::FSWritableFile>* r) {
    if (s.ok()) *r = std::make_unique<RetryableFile>(std::move(*r));
    return MarkRetryable(std::move(s));
  }
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> RetryableWriteErrors(
    std::shared_ptr<rocksdb::FileSystem> base) {
  return std::make_shared<RetryableWritesFs>(std::move(base));
}

}  // namespace larder
