// Named points in the engine where its own tests (tests/engine) run code, to put an event
// between two steps deterministically; not part of the public API.
#pragma once

#include <functional>
#include <string>

namespace larder::testing {

// SetSyncPoint(name, fn) makes SyncPoint(name) call fn; an empty fn removes it. Set them while
// no engine thread can reach a point (not thread-safe against it). The points:
//   "LookupHeld:BeforeHold"      a read's lookup is done, its range not held yet
//   "BlobFile::Sync:AfterWait"   a sync waited for the pending writes below its target
void SetSyncPoint(const std::string& name, std::function<void()> fn);
// Runs the function set for `name`, if any (one relaxed load when none is set).
void SyncPoint(const char* name);

}  // namespace larder::testing
