// The keys of a slot range, found by scanning the engine's in-memory index (no value is read):
// CLUSTER COUNTKEYSINSLOT / GETKEYSINSLOT, an import's clean start, and slot migration.
#pragma once

#include <string>

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

}  // namespace larder::server::cluster
