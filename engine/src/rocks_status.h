// RocksDB's statuses as the engine's, in one place.
#pragma once

#include <rocksdb/status.h>

#include <string>

#include "larder/status.h"

namespace larder {

// `s` as a Status whose message is "<what>: <RocksDB's text>": NoSpace for a full disk,
// Corruption for damage, IOError for anything else (OK stays OK).
inline Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  std::string msg = what + ": " + s.ToString();
  if (s.IsNoSpace()) return Status::NoSpace(std::move(msg));
  if (s.IsCorruption()) return Status::Corruption(std::move(msg));
  return Status::IOError(std::move(msg));
}

}  // namespace larder
