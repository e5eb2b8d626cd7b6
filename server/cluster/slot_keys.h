// The keys of a slot range, found by scanning the engine's in-memory index (no value is read):
// CLUSTER COUNTKEYSINSLOT / GETKEYSINSLOT, an import's clean start, and slot migration.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/topology.h"
#include "larder/store.h"

namespace larder::server::cluster {

// Calls visit(key) for each key whose slot is in `range` until it returns false, with
// Store::Scan's guarantee: a key present for the whole scan is visited at least once; one
// written or deleted meanwhile may or may not be.
template <typename Visit>
void ForEachKeyInRange(Store& store, SlotRange range, Visit visit) {
  uint64_t cursor = 0;
  do {
    ScanPage page = store.Scan(cursor, "", 1024);
    for (std::string& key : page.keys) {
      if (range.Contains(KeySlot(key)) && !visit(key)) return;
    }
    cursor = page.next_cursor;
  } while (cursor != 0);
}

// Every key of `range`, with ForEachKeyInRange's guarantee: what a caller that deletes or
// sends them walks, so that its own writes do not move the scan under it.
inline std::vector<std::string> KeysInRange(Store& store, SlotRange range) {
  std::vector<std::string> keys;
  ForEachKeyInRange(store, range, [&](const std::string& key) {
    keys.push_back(key);
    return true;
  });
  return keys;
}

// Deletes every key of `range` (an import's clean start, a range a topology gave away), and
// tells `deleted` of each (client-side caching's invalidation). Deletion errors are left to the
// engine's own reporting: a key that stays is one this node no longer serves, and eviction
// reclaims it.
inline void DeleteKeysInRange(Store& store, SlotRange range,
                              const std::function<void(std::string_view)>& deleted) {
  for (const std::string& key : KeysInRange(store, range)) {
    if (store.Delete(key).ok()) deleted(key);
  }
}

}  // namespace larder::server::cluster
