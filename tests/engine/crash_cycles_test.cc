// Crash cycles in-process, checked against a journal of acknowledged operations.
//
// Each cycle re-executes this test binary as a writer child (a fresh process: a forked copy of a
// process that already ran RocksDB would have no background threads) that opens the store, puts,
// gets and deletes, and reports every operation through a pipe (intent before, ack after). The
// parent SIGKILLs it at a random moment, reopens the store and classifies every key against the
// journal. The data directory carries over between cycles.
//
// Asserted: zero wrong values, zero failed opens, zero corruptions counted; with the WAL on, no
// acknowledged operation lost. Lost acknowledged keys per mode are printed.
// CI: 20 cycles per mode; LARDER_LONG=1: 200. LARDER_CRASH_SEED fixes the seed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "larder/store.h"
#include "test_util.h"

namespace larder {
namespace {

constexpr int kKeys = 64;
constexpr const char* kChildEnv = "LARDER_CRASH_CHILD";

enum Op : uint32_t { kSetIntent = 1, kSetAck, kDelIntent, kDelAck };
struct Record {
  uint32_t key;
  uint32_t op;
  uint64_t seq;
};
static_assert(sizeof(Record) == 16);  // < PIPE_BUF: each write() is atomic

std::string KeyName(uint32_t i) {
  return "key-" + std::to_string(i);
}

Options CrashOptions(bool wal) {
  Options o;
  o.wal = wal;
  o.maintenance_interval_ms = 100;
  o.max_disk_bytes = 4ull << 30;  // nothing is evicted: a missing key is a lost write
  o.generation_bytes = 32 << 20;
  o.memtable_bytes = 16 << 20;
  return o;
}

// The value for (key, seq): the seq in its first 8 bytes, then MakeValue's bytes.
std::string SeqValue(const std::string& key, uint64_t seq, size_t size) {
  std::string v = test::MakeValue(key, size, seq);
  std::memcpy(v.data(), &seq, sizeof(seq));
  return v;
}

// The seq of `v` if it is exactly SeqValue(key, seq, v.size()), else nullopt.
std::optional<uint64_t> ParseSeq(const std::string& key, std::string_view v) {
  if (v.size() < 8) return std::nullopt;
  uint64_t seq;
  std::memcpy(&seq, v.data(), sizeof(seq));
  if (v != SeqValue(key, seq, v.size())) return std::nullopt;
  return seq;
}

// Writer child: runs until killed. Exit codes: 3 open failed, 4 write failed, 5 read mismatch.
[[noreturn]] void RunChild(const std::string& dir, bool wal, int fd, uint64_t seed,
                           uint64_t seq_base) {
  auto r = Store::Open(CrashOptions(wal), dir);
  if (!r.ok()) {
    std::fprintf(stderr, "child open: %s\n", r.status().ToString().c_str());
    _exit(3);
  }
  auto& s = *r;
  std::vector<uint64_t> state(kKeys, 0);  // seq now stored under each key (0 = none)
  for (uint32_t k = 0; k < kKeys; ++k) {
    if (auto v = s->Get(KeyName(k)); v.ok()) state[k] = ParseSeq(KeyName(k), v->view()).value_or(0);
  }
  auto send = [fd](uint32_t key, Op op, uint64_t seq) {
    Record rec{key, op, seq};
    if (write(fd, &rec, sizeof(rec)) != sizeof(rec)) _exit(6);
  };
  std::mt19937_64 rng(seed);
  for (uint64_t seq = seq_base + 1;; ++seq) {
    uint32_t k = rng() % kKeys;
    std::string key = KeyName(k);
    unsigned p = rng() % 10;
    if (p < 6) {
      size_t size = rng() % 4 == 0 ? 100 + rng() % 4000 : (64 << 10) + rng() % (512 << 10);
      send(k, kSetIntent, seq);
      if (!s->Put(key, SeqValue(key, seq, size)).ok()) _exit(4);
      send(k, kSetAck, seq);
      state[k] = seq;
    } else if (p < 9) {
      auto v = s->Get(key);
      uint64_t got = v.ok() ? ParseSeq(key, v->view()).value_or(~0ull) : 0;
      if (got != state[k]) _exit(5);
    } else {
      send(k, kDelIntent, seq);
      Status st = s->Delete(key);
      if (!st.ok() && !st.IsNotFound()) _exit(4);
      send(k, kDelAck, seq);
      state[k] = 0;
    }
  }
}

// Child mode is entered before main() when the parent re-executes this binary.
[[maybe_unused]] const bool kIsChild = [] {
  const char* spec = std::getenv(kChildEnv);
  if (spec == nullptr) return false;
  char dir[4096];
  int wal = 0, fd = -1;
  unsigned long long seed = 0, base = 0;
  if (std::sscanf(spec, "%d %d %llu %llu %4095[^\n]", &wal, &fd, &seed, &base, dir) != 5) _exit(2);
  RunChild(dir, wal != 0, fd, seed, base);
}();

struct KeyState {
  uint64_t acked = 0;             // seq of the last acknowledged put; 0 = absent
  std::optional<Record> pending;  // an intent without its ack
  std::set<uint64_t> sent;        // every seq ever put
};

struct Totals {
  int ok = 0, lost = 0, stale = 0, resurrected = 0, wrong = 0, failed_opens = 0;
  uint64_t acked_ops = 0;
  int lost_acked() const { return lost + stale + resurrected; }
};

class CrashCycles {
 public:
  CrashCycles(bool wal, uint64_t seed) : wal_(wal), rng_(seed), keys_(kKeys) {}

  // One cycle: run the child for a random while, SIGKILL it, reopen, verify, rebase.
  void Cycle() {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    char spec[4300];
    std::snprintf(spec, sizeof(spec), "%d %d %llu %llu %s", wal_ ? 1 : 0, fds[1],
                  static_cast<unsigned long long>(rng_()), static_cast<unsigned long long>(seq_),
                  dir_.path().c_str());
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);  // the child keeps only the write end
    pid_t pid = test::ReexecSelf(kChildEnv, spec);
    ASSERT_GE(pid, 0);
    close(fds[1]);
    std::string buf;
    auto drain = [&](int timeout_ms) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, timeout_ms) <= 0) return true;
      char chunk[4096];
      ssize_t n = read(fds[0], chunk, sizeof(chunk));
      if (n <= 0) return false;  // EOF: the child is gone
      buf.append(chunk, static_cast<size_t>(n));
      return true;
    };
    // One cycle in 8 kills the child wherever it is (often still opening the store); the others
    // first wait for its load to start, so slow (sanitized) builds still kill mid-load.
    if (rng_() % 8 != 0) {
      auto started = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (buf.empty() && std::chrono::steady_clock::now() < started && drain(10)) {
      }
    }
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(100 + rng_() % 700);
    while (std::chrono::steady_clock::now() < deadline && drain(10)) {
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    while (drain(1000)) {
    }
    close(fds[0]);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with code " << WEXITSTATUS(status);
    ASSERT_EQ(WTERMSIG(status), SIGKILL) << "child died of signal " << WTERMSIG(status);
    Apply(buf);
    Verify();
  }

  const Totals& totals() const { return totals_; }

 private:
  void Apply(const std::string& buf) {
    ASSERT_EQ(buf.size() % sizeof(Record), 0u);
    for (size_t i = 0; i < buf.size(); i += sizeof(Record)) {
      Record r;
      std::memcpy(&r, buf.data() + i, sizeof(r));
      ASSERT_LT(r.key, static_cast<uint32_t>(kKeys));
      KeyState& k = keys_[r.key];
      seq_ = std::max(seq_, r.seq);
      switch (r.op) {
        case kSetIntent:
          k.sent.insert(r.seq);
          k.pending = r;
          break;
        case kDelIntent:
          k.pending = r;
          break;
        case kSetAck:
          k.acked = r.seq;
          k.pending.reset();
          totals_.acked_ops++;
          break;
        case kDelAck:
          k.acked = 0;
          k.pending.reset();
          totals_.acked_ops++;
          break;
        default:
          FAIL() << "bad journal record op " << r.op;
      }
    }
  }

  void Verify() {
    auto r = Store::Open(CrashOptions(wal_), dir_.path());
    if (!r.ok()) {
      totals_.failed_opens++;
      ADD_FAILURE() << "reopen after SIGKILL failed: " << r.status().ToString();
      return;
    }
    auto& s = *r;
    for (uint32_t i = 0; i < kKeys; ++i) {
      KeyState& k = keys_[i];
      std::string key = KeyName(i);
      auto v = s->Get(key);
      uint64_t got = 0;
      if (v.ok()) {
        auto seq = ParseSeq(key, v->view());
        if (!seq || !k.sent.count(*seq)) {
          totals_.wrong++;
          ADD_FAILURE() << "wrong bytes for " << key << " (" << v->size() << " bytes)";
          continue;
        }
        got = *seq;
      }
      bool pending_set = k.pending && k.pending->op == kSetIntent && k.pending->seq == got;
      bool pending_del = k.pending && k.pending->op == kDelIntent && got == 0;
      if (got == k.acked || pending_set || pending_del) {
        totals_.ok++;
      } else if (got == 0) {
        totals_.lost++;
      } else if (k.acked == 0) {
        totals_.resurrected++;
      } else if (got < k.acked) {
        totals_.stale++;
      } else {
        totals_.wrong++;
        ADD_FAILURE() << key << " holds seq " << got << ", never acknowledged nor in flight";
      }
      k.acked = got;
      k.pending.reset();
    }
    EXPECT_EQ(s->GetStats().corruptions, 0u);
    EXPECT_TRUE(s->Close().ok());
  }

  bool wal_;
  std::mt19937_64 rng_;
  test::TempDir dir_;
  std::vector<KeyState> keys_;
  uint64_t seq_ = 0;
  Totals totals_;
};

void RunMode(bool wal) {
  const bool long_mode =
      std::getenv("LARDER_LONG") && std::string(std::getenv("LARDER_LONG")) == "1";
  const int cycles = long_mode ? 200 : 20;
  const char* seed_env = std::getenv("LARDER_CRASH_SEED");
  uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10) : std::random_device()();
  CrashCycles run(wal, seed);
  for (int c = 0; c < cycles && !::testing::Test::HasFatalFailure(); ++c) run.Cycle();
  const Totals& t = run.totals();
  std::printf(
      "crash cycles in-process, wal=%s, seed %llu: %d cycles, %llu acked ops, %d keys "
      "checked, lost acked keys %d (missing %d, stale %d, undeleted %d), wrong %d, "
      "failed opens %d\n",
      wal ? "on" : "off", static_cast<unsigned long long>(seed), cycles,
      static_cast<unsigned long long>(t.acked_ops), t.ok + t.lost_acked() + t.wrong, t.lost_acked(),
      t.lost, t.stale, t.resurrected, t.wrong, t.failed_opens);
  EXPECT_EQ(t.wrong, 0);
  EXPECT_EQ(t.failed_opens, 0);
  EXPECT_GT(t.acked_ops, static_cast<uint64_t>(cycles));
  if (wal) {
    EXPECT_EQ(t.lost_acked(), 0) << "acknowledged operations lost with the WAL on";
  }
}

TEST(CrashCycles, WalOff) {
  RunMode(false);
}

TEST(CrashCycles, WalOn) {
  RunMode(true);
}

}  // namespace
}  // namespace larder
