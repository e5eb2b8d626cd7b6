// Peers for the in-process comparison: the same Put/Get/Sync surface over liblarder, plain
// RocksDB with default options, and one file per value in a directory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace larder::bench {

class Peer {
 public:
  virtual ~Peer() = default;
  // Stores `value` under `key`; false on failure.
  virtual bool Put(const std::string& key, std::string_view value) = 0;
  // Reads `key` and returns the XXH3 of the bytes read (when `xxh3` is not null) and their
  // count in *len; false if the key was not found or the read failed. Thread-safe.
  virtual bool Get(const std::string& key, uint64_t* xxh3, size_t* len) = 0;
  // Makes everything put so far durable in its final files (flush / sync); false on failure.
  virtual bool Sync() = 0;
};

// "larder": liblarder with default options (WAL off), a 64 GiB budget.
// "rocksdb": rocksdb::DB with default Options (WAL on, no blob files), create_if_missing.
// "rocksdb-nowal": the same, writes with WriteOptions::disableWAL (Larder's default).
// "files": one file per key under `dir` (the key hex-encoded), written with write(2) and no
//   fsync until Sync() (syncfs), read with read(2) into a per-thread buffer.
// nullptr (with a message on stderr) for an unknown name or a failed open.
std::unique_ptr<Peer> OpenPeer(const std::string& name, const std::string& dir);

}  // namespace larder::bench
