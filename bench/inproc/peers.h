// Peers for the in-process comparison: the same Put/Get/Sync surface over liblarder, plain
// RocksDB with default options, and one file per value in a directory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace larder::bench {

// A buffer aligned to 4 KiB (O_DIRECT's alignment), grown on demand and reused: the per-thread
// read buffer of the files and larder peers, and MultiGetInto's caller buffers.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& o) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&&) = delete;

  // Makes room for n bytes (contents not kept); false if the allocation failed.
  bool Reserve(size_t n);
  char* data() const { return data_; }
  size_t capacity() const { return cap_; }

 private:
  char* data_ = nullptr;
  size_t cap_ = 0;
};

// One key of a batched read: the value goes into buf[0..cap); `len` gets its size, or -1 if
// the key was not found or the read failed.
struct BatchItem {
  std::string_view key;
  char* buf = nullptr;
  size_t cap = 0;
  int64_t len = -1;
};

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
  // Reads every item in one batched call (larder: Store::MultiGetInto). False if the peer has
  // no batched read (nothing is read then). Thread-safe.
  virtual bool GetBatch(std::vector<BatchItem>* /*items*/) { return false; }
  // The engine options this peer runs with, as the members of a JSON object ("" if none).
  virtual std::string OptionsJson() const { return ""; }
};

// Engine options of the larder peer (bench flags; defaults are the engine's).
struct LarderPeerOptions {
  bool direct_reads = false;    // Options::direct_reads
  bool mapped_reads = true;     // Options::mapped_reads
  int read_queue_depth = 8;     // Options::read_queue_depth
  uint64_t memtable_bytes = 0;  // Options::memtable_bytes (0 = derived from the budget)
  uint64_t max_disk_bytes = 64ull << 30;
};

// "larder": liblarder (WAL off, the options in `lo`); reads with GetInto into a per-thread
//   4 KiB-aligned buffer, batched reads with MultiGetInto.
// "rocksdb": rocksdb::DB with default Options (WAL on, no blob files), create_if_missing.
// "rocksdb-nowal": the same, writes with WriteOptions::disableWAL (Larder's default).
// "files": one file per key under `dir` (the key hex-encoded), written with write(2) and no
//   fsync until Sync() (syncfs), read with read(2) into a per-thread buffer (the same kind of
//   4 KiB-aligned buffer as the larder peer's).
// nullptr (with a message on stderr) for an unknown name or a failed open.
std::unique_ptr<Peer> OpenPeer(const std::string& name, const std::string& dir,
                               const LarderPeerOptions& lo = {});

}  // namespace larder::bench
