// Named points in the engine where its own tests (tests/engine) run code, to put an event
// between two steps deterministically; not part of the public API.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

namespace larder::testing {

// SetSyncPoint(name, fn) makes SyncPoint(name, arg) call fn(arg); an empty fn removes it. Set
// them while no engine thread can reach a point (not thread-safe against it). The points, and
// what their argument points at:
//   "LookupHeld:BeforeHold"          a read's lookup is done, its range not held yet
//   "BlobFile::Sync:AfterWait"       a sync waited for the pending writes below its target
//   "BlobFile::WritePending:Write"   a background write is about to start; int* errno to fail
//                                    it with instead (0: write)
//   "BlobFile::Create:Sync"          a new blob file is about to be synced (durable); int* errno
//                                    to fail the sync with instead (0: sync)
//   "BlobFile::Sync:Result"          a blob file is about to be synced (BlobFile::Sync); int*
//                                    errno to fail the fdatasync with instead (0: sync)
//   "BlobFile::Open"                 an existing blob file is about to be opened; int* errno to
//                                    fail the open() with instead (0: open)
//   "StoreImpl::Reinsert"            eviction is about to keep an entry (move its record), its
//                                    stripe not taken; const std::string* its key
//   "StoreImpl::RemoveFailedWrites"  the maintenance thread is about to remove the keys whose
//                                    background writes failed
//   "StoreImpl::RemoveFailedWrites:Remove"  ... one of them, under its stripe: Status* to fail
//                                    the removal with instead (OK: remove)
//   "StoreImpl::RemoveFailedWrites:Done"  ... and has removed what it could
//   "StoreImpl::PutImpl:BeforeCommit"     a Put's value is staged, its index entry not written
//   "StoreImpl::RocksWrite"          an index write is about to be refused, or written after
//                                    anchoring the WAL, or written: RocksWriteSteps* (below)
//   "StoreImpl::PersistDirty:Walked"  a generation's dirty records were found, none rewritten
//   "StoreImpl::PunchAroundKept"     a whole drop of a generation is durable; the ranges of its
//                                    files around the entries kept in place are not freed yet
//   "StoreImpl::MaintenanceLoop:ExpiryPass"  a periodic pass removed the expired entries it
//                                    looked at (ExpiryPass)
//   "StoreImpl::PrepareSpareGenerations:Done"  the maintenance thread topped the spare
//                                    generations up (or failed to)
//   "Generations::CreateNextLocked"  a generation's column family is about to be created
void SetSyncPoint(const std::string& name, std::function<void(void*)> fn);
// The same for a function that takes no argument.
void SetSyncPoint(const std::string& name, std::function<void()> fn);
// Removes the point.
void SetSyncPoint(const std::string& name, std::nullptr_t);
// Runs the function set for `name`, if any (one relaxed load when none is set).
void SyncPoint(const char* name, void* arg = nullptr);

// What StoreImpl::RocksWrite is about to do, which its sync point may change.
struct RocksWriteSteps {
  bool refuse = false;  // refuse the write: the index waits out a disk error
  bool anchor = false;  // anchor the WAL first
};

// Sets a point (either kind of function) for the object's life, a test's scope: the point is
// removed however the scope ends.
class ScopedSyncPoint {
 public:
  template <typename Fn>
  ScopedSyncPoint(std::string name, Fn fn) : name_(std::move(name)) {
    SetSyncPoint(name_, std::move(fn));
  }
  ~ScopedSyncPoint() { SetSyncPoint(name_, nullptr); }
  ScopedSyncPoint(const ScopedSyncPoint&) = delete;
  ScopedSyncPoint& operator=(const ScopedSyncPoint&) = delete;

 private:
  const std::string name_;
};

}  // namespace larder::testing
