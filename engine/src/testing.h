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

// Runs `fn` in every read that holds a value's range (OpenValue, GetFileRange) between its
// lookup and the hold, so a test can replace the value right there; an empty fn removes it.
// Not thread-safe against reads in flight: set it while no read runs.
void SetBetweenLookupAndHold(std::function<void()> fn);

}  // namespace larder::testing
