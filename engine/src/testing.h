// Seams for the engine's own tests (tests/engine), not part of the public API.
#pragma once

#include <rocksdb/env.h>

#include <functional>
#include <memory>
#include <string>

#include "larder/store.h"

namespace larder::testing {

// Store::Open whose RocksDB runs on `env` (fault injection). `env` must outlive the store.
Result<std::unique_ptr<Store>> OpenWithEnv(const Options& options, const std::string& dir,
                                           rocksdb::Env* env);

// Named points in the engine where a test runs its own code, to put an event between two
// steps deterministically: SetSyncPoint(name, fn) makes SyncPoint(name) call fn; an empty fn
// removes it. Set them while no engine thread can reach a point (not thread-safe against it).
// The points:
//   "LookupHeld:BeforeHold"      a read's lookup is done, its range not held yet
//   "BlobFile::Sync:AfterWait"   a sync waited for the pending writes below its target
void SetSyncPoint(const std::string& name, std::function<void()> fn);
// Runs the function set for `name`, if any (one relaxed load when none is set).
void SyncPoint(const char* name);

}  // namespace larder::testing
