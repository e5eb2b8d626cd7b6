// Shared helpers for engine tests: temp dirs, a manual clock, deterministic values.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "format.h"
#include "larder/clock.h"
#include "larder/options.h"
#include "larder/store.h"

namespace larder::test {

// Options of a small test store: a 1 GiB budget, no periodic passes (the test runs what it
// needs), and with `synced_wal` the WAL on with every write synced.
inline Options QuietOptions(bool synced_wal = false) {
  Options o;
  o.max_disk_bytes = 1ull << 30;
  o.maintenance_interval_ms = 0;
  o.wal = o.sync_writes = synced_wal;
  return o;
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "larder-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start = 1'700'000'000'000) : now_(start) {}
  int64_t NowMs() const override { return now_; }
  void Advance(int64_t ms) { now_ += ms; }

 private:
  std::atomic<int64_t> now_;
};

// Deterministic bytes for (key, version): any stored value can be re-derived and checked.
inline std::string MakeValue(const std::string& key, size_t size, uint64_t version = 0) {
  std::string v(size, '\0');
  uint64_t x = std::hash<std::string>()(key) ^ (version * 0x9e3779b97f4a7c15ull) ^ size;
  for (size_t i = 0; i < size; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(&v[i], &x, std::min<size_t>(8, size - i));
  }
  return v;
}

// XORs the byte at `off` of the file at `path` with `mask` (damage a test then looks for).
inline void FlipByte(const std::filesystem::path& path, uint64_t off, char mask = 0x5a) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  char c;
  f.seekg(static_cast<std::streamoff>(off));
  f.read(&c, 1);
  c ^= mask;
  f.seekp(static_cast<std::streamoff>(off));
  f.write(&c, 1);
}

// Flips one byte 100 bytes before the end of every blob file of the store in `dir` (inside the
// last value written to each), with the mask 0x40.
inline void DamageBlobFileTails(const std::string& dir) {
  for (auto& e : std::filesystem::directory_iterator(std::filesystem::path(dir) / "values")) {
    FlipByte(e.path(), std::filesystem::file_size(e.path()) - 100, 0x40);
  }
}

// Lines of the info log (LOG) of the store in `dir` that contain `text`.
inline int LogLinesWith(const std::string& dir, std::string_view text) {
  std::ifstream in(dir + "/LOG");
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(text) != std::string::npos;
  return n;
}

// Disk blocks of all regular files under `dir` (what the store really uses on disk, as du
// counts it: the holes of values freed in place take none).
inline uint64_t DirBytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    struct stat st {};
    // A file may be deleted while we walk: skip it.
    if (::stat(e.path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      n += static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  return n;
}

// Starts this test binary again as a child process with env_name=value set, for a child that
// must crash (or be killed) with the store open: a static initializer of the test file reads
// the variable and runs the child's work before main(). A re-executed child, not a bare fork,
// because the parent has threads (RocksDB's pools outlive its stores), and a forked child of a
// threaded process may find their locks held for ever (and ThreadSanitizer refuses it).
// Returns the child's pid, or -1 if fork failed.
inline pid_t ReexecSelf(const char* env_name, const std::string& value) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv(env_name, value.c_str(), 1);
    execl("/proc/self/exe", "engine_test", "--gtest_list_tests", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// ReexecSelf, then waits for the child; a fatal test failure unless it exited with 0. Call
// through ASSERT_NO_FATAL_FAILURE.
inline void RunReexecChild(const char* env_name, const std::string& value) {
  const pid_t pid = ReexecSelf(env_name, value);
  ASSERT_GE(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed: " << status;
}

// While it lives, every key starting with "c-" hashes to the same value (the engine's test seam,
// format::SetKeyHashForTesting), so such keys share one slot of the index. Declare it before
// the store it serves, which must close first.
class CollidingKeyHashes {
 public:
  CollidingKeyHashes() { format::SetKeyHashForTesting(&Hash); }
  ~CollidingKeyHashes() { format::SetKeyHashForTesting(nullptr); }
  CollidingKeyHashes(const CollidingKeyHashes&) = delete;
  CollidingKeyHashes& operator=(const CollidingKeyHashes&) = delete;

 private:
  static uint64_t Hash(std::string_view key) {
    return key.starts_with("c-") ? 0x0123456789abcdefull : format::Checksum(key);
  }
};

// A store in a fresh directory, opened by SetUp and again by Reopen with opts_ (maintenance
// passes off: a test runs them itself). A fixture sets opts_ in its initializer.
class ReopenedStoreTest : public ::testing::Test {
 protected:
  explicit ReopenedStoreTest(Options opts) : opts_(std::move(opts)) {}
  void SetUp() override { Reopen(); }
  void Reopen() {
    store_.reset();
    opts_.maintenance_interval_ms = 0;
    auto r = Store::Open(opts_, dir_.path());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store_ = std::move(r).value();
  }

  TempDir dir_;
  Options opts_;
  std::unique_ptr<Store> store_;
};

}  // namespace larder::test
