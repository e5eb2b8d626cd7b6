// Seams for the engine's own tests (tests/engine), not part of the public API.
#pragma once

#include <rocksdb/env.h>

#include <memory>
#include <string>

#include "larder/store.h"

namespace larder::testing {

// Store::Open whose RocksDB runs on `env` (fault injection). `env` must outlive the store.
Result<std::unique_ptr<Store>> OpenWithEnv(const Options& options, const std::string& dir,
                                           rocksdb::Env* env);
// Sealed memtables of the store's index not yet flushed.
uint64_t UnflushedMemtables(Store& store);

}  // namespace larder::testing
