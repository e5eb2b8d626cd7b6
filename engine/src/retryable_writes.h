// The index's file system: RocksDB's own, with the I/O errors of its writes (WAL appends and
// syncs, flushes, MANIFEST writes) marked retryable, so that a disk that fails writes for a
// while (an EIO from a device that recovers, a path briefly unavailable) stops the index's
// writes only until it takes them again, as a full disk does.
//
// RocksDB 7.8 takes such an error as fatal unless the file system says it is retryable
// (ErrorHandler::SetBGError): a fatal error refuses every write until the database is reopened.
// A retryable one is a hard error (a soft one for a flush with the WAL off), which DB::Resume()
// clears once a flush goes through. RocksDB's own automatic resume is off for the index
// (max_bgerror_resume_count 0): the store resumes it at each maintenance pass
// (StoreImpl::ResumeIndex), as after a full disk.
//
// A resume after a failed WAL append or sync must leave that WAL file, whose writer RocksDB
// refuses for good once it saw an error: StoreImpl::RocksWrite and ResumeIndex see to it.
//
// Not marked: a full disk (NoSpace: its own recovery), a fenced file (IOFenced: another writer
// owns the files, fatal by design), an error RocksDB already knows to be a data loss, and every
// read (a read error reaches the reader as it is).
#pragma once

#include <rocksdb/file_system.h>

#include <memory>

namespace larder {

std::shared_ptr<rocksdb::FileSystem> RetryableWriteErrors(
    std::shared_ptr<rocksdb::FileSystem> base);

// `s`, marked retryable when it is an I/O error of the kind above.
rocksdb::IOStatus MarkRetryable(rocksdb::IOStatus s);

}  // namespace larder
