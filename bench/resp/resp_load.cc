// resp-load: a RESP load generator that checks every value it reads back.
//
// Phases (--phases, in this order when listed): `set` writes --keys values of --size bytes,
// `get` reads each key once in a shuffled order, `cold` sends SAVE (--save_before_cold) and
// MEMORY PURGE, drops the page cache of every file under --cold_dir and reads each key again,
// `exists` times single-key EXISTS on one connection. Each phase prints one JSON object on a line:
// GB/s (1e9 value bytes per second), per-request latency p50/p99 in ms, the server's device
// bytes written and read per value byte (/proc/<--server_pid>/io) and the count of wrong
// replies.
//
// A GET reply counts as right only if its XXH3 equals that of the value SET for the key (each
// value is distinct: the key index is stamped into it). Exit status 1 if any reply was wrong.
#include <fcntl.h>
#include <gflags/gflags.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "load_conn.h"

DEFINE_string(host, "127.0.0.1", "server address");
DEFINE_int32(port, 6379, "server port");
DEFINE_string(phases, "set,get,exists", "comma-separated: set, get, cold, exists");
DEFINE_uint64(size, 4 << 20, "value bytes");
DEFINE_uint64(keys, 64, "distinct keys (each SET once and read once per read phase)");
DEFINE_int32(conns, 1, "connections, one thread each");
DEFINE_int32(pipeline, 1, "requests in flight per connection");
DEFINE_string(prefix, "load:", "key prefix");
DEFINE_string(cold_dir, "", "data directory whose page cache the `cold` phase drops");
DEFINE_bool(save_before_cold, true, "send SAVE before dropping the page cache");
DEFINE_bool(save_after_set, false,
            "send SAVE after the timed `set` phase and count what it writes in device_bytes "
            "(Larder: flushes memtables to blob files)");
DEFINE_int32(server_pid, 0, "server pid, for its device bytes written");
DEFINE_uint64(exists_ops, 2000, "EXISTS requests in the `exists` phase");
DEFINE_string(label, "", "copied into every JSON line");

namespace {

using larder::bench::DropPageCache;
using larder::bench::Percentile;
using larder::bench::SplitList;

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

std::string Key(uint64_t i) {
  return FLAGS_prefix + std::to_string(i);
}

// The value of key i: `base` with i stamped every 1 MiB and in the last 8 bytes.
void Stamp(std::string* v, uint64_t i) {
  if (v->size() < 8) return;
  for (size_t p = 0; p + 8 <= v->size(); p += 1 << 20) std::memcpy(&(*v)[p], &i, 8);
  std::memcpy(v->data() + v->size() - 8, &i, 8);
}

// The server's /proc/<pid>/io `counter` ("write_bytes" / "read_bytes"): bytes it caused to be
// written to / fetched from the device (readahead included); 0 without --server_pid.
uint64_t ServerIo(const char* counter) {
  return FLAGS_server_pid > 0 ? larder::bench::ProcIoBytes(counter, FLAGS_server_pid) : 0;
}

// Sends `command` on a connection of its own; true if the reply is +OK (else says what it was).
bool CommandOk(const std::vector<std::string_view>& command) {
  auto c = larder::bench::Conn::Dial(FLAGS_host, FLAGS_port);
  if (!c) return false;
  c->SendCommand(command);
  std::string reply = c->ReadSimple();
  if (reply != "+OK") {
    std::fprintf(stderr, "resp-load: %.*s: %s\n", static_cast<int>(command[0].size()),
                 command[0].data(), reply.c_str());
  }
  return reply == "+OK";
}

bool Save() {
  return CommandOk({"SAVE"});
}

struct PhaseResult {
  std::string phase;
  uint64_t ops = 0, bytes = 0, bad = 0;
  double seconds = 0;
  double save_seconds = 0;  // the SAVE after `set` (--save_after_set), not in `seconds`
  std::vector<double> lat_ms;
  uint64_t device_bytes = 0;
  uint64_t device_read_bytes = 0;
};

void Print(PhaseResult& r) {
  double p50 = Percentile(r.lat_ms, 0.50), p99 = Percentile(r.lat_ms, 0.99);
  std::printf(
      "{\"label\":\"%s\",\"phase\":\"%s\",\"size\":%llu,\"conns\":%d,\"pipeline\":%d,"
      "\"ops\":%llu,\"seconds\":%.6f,\"gbs\":%.4f,\"ops_per_s\":%.1f,\"p50_ms\":%.4f,"
      "\"p99_ms\":%.4f,\"device_bytes\":%llu,\"device_per_value_byte\":%.4f,"
      "\"read_per_value_byte\":%.4f,\"save_seconds\":%.6f,\"bad\":%llu}\n",
      FLAGS_label.c_str(), r.phase.c_str(), (unsigned long long)FLAGS_size, FLAGS_conns,
      FLAGS_pipeline, (unsigned long long)r.ops, r.seconds,
      r.seconds > 0 ? r.bytes / r.seconds / 1e9 : 0, r.seconds > 0 ? r.ops / r.seconds : 0, p50,
      p99, (unsigned long long)r.device_bytes,
      r.bytes ? static_cast<double>(r.device_bytes) / r.bytes : 0,
      r.bytes ? static_cast<double>(r.device_read_bytes) / r.bytes : 0, r.save_seconds,
      (unsigned long long)r.bad);
  std::fflush(stdout);
}

// Runs `conns` connections over the key indices `order`, each sending up to --pipeline
// requests before reading their replies. `send(c, conn, key)` sends one request on
// connection number c; `recv(c, conn, key)` reads its reply and returns whether it was right.
template <typename Send, typename Recv>
PhaseResult RunKeys(const std::string& phase, const std::vector<uint64_t>& order, int conns,
                    Send send, Recv recv) {
  PhaseResult r;
  r.phase = phase;
  std::vector<std::unique_ptr<larder::bench::Conn>> cs;
  for (int c = 0; c < conns; ++c) {
    cs.push_back(larder::bench::Conn::Dial(FLAGS_host, FLAGS_port));
    if (!cs.back()) std::exit(2);
  }
  std::vector<std::vector<double>> lat(conns);
  std::atomic<uint64_t> bad{0};
  uint64_t w0 = ServerIo("write_bytes"), r0 = ServerIo("read_bytes");
  auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int c = 0; c < conns; ++c) {
    ts.emplace_back([&, c] {
      std::vector<uint64_t> mine;
      for (size_t j = c; j < order.size(); j += conns) mine.push_back(order[j]);
      for (size_t j = 0; j < mine.size(); j += FLAGS_pipeline) {
        size_t end = std::min(mine.size(), j + FLAGS_pipeline);
        auto b0 = Clock::now();
        for (size_t k = j; k < end; ++k) send(c, *cs[c], mine[k]);
        for (size_t k = j; k < end; ++k) {
          if (!recv(c, *cs[c], mine[k])) bad++;
          lat[c].push_back(std::chrono::duration<double, std::milli>(Clock::now() - b0).count());
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.device_bytes = ServerIo("write_bytes") - w0;
  r.device_read_bytes = ServerIo("read_bytes") - r0;
  for (auto& l : lat) r.lat_ms.insert(r.lat_ms.end(), l.begin(), l.end());
  r.ops = order.size();
  r.bad = bad;
  return r;
}

// The keys and values every phase works on: one random base value, stamped per key; the
// expected XXH3 of every key's value; the keys in order and shuffled; a send and a receive
// buffer per connection. Phases return false to stop the run (exit status 2).
struct Workload {
  uint64_t n = 0, size = 0;
  std::string base;
  std::vector<uint64_t> want, in_order, shuffled;
  std::vector<std::string> out_bufs, in_bufs;
  uint64_t bad_total = 0;

  Workload(uint64_t keys, uint64_t value_size, int conns) : n(keys), size(value_size) {
    base.assign(size, '\0');
    std::mt19937_64 rng(42);
    for (size_t p = 0; p + 8 <= size; p += 8) {
      uint64_t x = rng();
      std::memcpy(&base[p], &x, 8);
    }
    std::string v = base;
    for (uint64_t i = 0; i < n; ++i) {
      Stamp(&v, i);
      want.push_back(XXH3_64bits(v.data(), v.size()));
    }
    in_order.resize(n);
    std::iota(in_order.begin(), in_order.end(), 0);
    shuffled = in_order;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(7));
    out_bufs.assign(conns, base);
    in_bufs.assign(conns, std::string(size, '\0'));
  }

  void Report(PhaseResult& r) {
    bad_total += r.bad;
    Print(r);
  }
};

// SET every key once, in order (SendCommand returns once the bytes are in the socket, so one
// buffer per connection suffices); with --save_after_set, the SAVE's device writes count.
bool SetPhase(Workload& w) {
  auto send = [&](int ci, larder::bench::Conn& c, uint64_t i) {
    std::string& v = w.out_bufs[ci];
    Stamp(&v, i);
    c.SendCommand({"SET", Key(i), v});
  };
  auto recv = [&](int, larder::bench::Conn& c, uint64_t) { return c.ReadSimple() == "+OK"; };
  uint64_t w0 = ServerIo("write_bytes");
  PhaseResult r = RunKeys("set", w.in_order, FLAGS_conns, send, recv);
  r.bytes = w.n * w.size;
  auto s0 = Clock::now();
  if (FLAGS_save_after_set && !Save()) return false;
  r.save_seconds = std::chrono::duration<double>(Clock::now() - s0).count();
  r.device_bytes = ServerIo("write_bytes") - w0;
  w.Report(r);
  return true;
}

// GET every key once, shuffled, checking each value's XXH3.
void GetKeys(Workload& w, const std::string& name) {
  auto send = [&](int, larder::bench::Conn& c, uint64_t i) { c.SendCommand({"GET", Key(i)}); };
  auto recv = [&](int ci, larder::bench::Conn& c, uint64_t i) {
    std::string& buf = w.in_bufs[ci];
    uint64_t h = 0;
    int64_t got = c.ReadBulkInto(buf.data(), buf.size(), &h);
    return got == static_cast<int64_t>(w.size) && h == w.want[i];
  };
  PhaseResult r = RunKeys(name, w.shuffled, FLAGS_conns, send, recv);
  r.bytes = w.n * w.size;
  w.Report(r);
}

bool GetPhase(Workload& w) {
  GetKeys(w, "get");
  return true;
}

// GET after SAVE and dropping the data directory's page cache: reads from the device.
bool ColdPhase(Workload& w) {
  if (FLAGS_save_before_cold && !Save()) return false;
  if (!FLAGS_cold_dir.empty()) {
    CommandOk({"MEMORY", "PURGE"});  // larder-server unmaps its files: mapped pages stay cached
    DropPageCache(FLAGS_cold_dir);
  }
  GetKeys(w, "cold");
  return true;
}

// --exists_ops EXISTS of present keys on one connection, one at a time.
bool ExistsPhase(Workload& w) {
  std::vector<uint64_t> order(FLAGS_exists_ops);
  for (uint64_t j = 0; j < order.size(); ++j) order[j] = w.shuffled[j % w.n];
  auto send = [&](int, larder::bench::Conn& c, uint64_t i) { c.SendCommand({"EXISTS", Key(i)}); };
  auto recv = [&](int, larder::bench::Conn& c, uint64_t) { return c.ReadSimple() == ":1"; };
  int saved = FLAGS_pipeline;
  FLAGS_pipeline = 1;
  PhaseResult r = RunKeys("exists", order, 1, send, recv);
  FLAGS_pipeline = saved;
  w.Report(r);
  return true;
}

struct Phase {
  std::string_view name;
  bool (*run)(Workload& w);
};
constexpr Phase kPhases[] = {
    {"set", SetPhase}, {"get", GetPhase}, {"cold", ColdPhase}, {"exists", ExistsPhase}};

}  // namespace

int main(int argc, char** argv) {
  larder::bench::ParseFlags(&argc, &argv,
                            "RESP load generator with checked values; see bench/README.md");
  if (FLAGS_pipeline < 1 || FLAGS_conns < 1 || FLAGS_keys == 0) {
    std::fprintf(stderr, "need --conns >= 1, --pipeline >= 1, --keys >= 1\n");
    return 2;
  }
  Workload w(FLAGS_keys, FLAGS_size, FLAGS_conns);
  for (const auto& name : SplitList(FLAGS_phases)) {
    const Phase* phase = nullptr;
    for (const Phase& p : kPhases) {
      if (p.name == name) phase = &p;
    }
    if (phase == nullptr) {
      std::fprintf(stderr, "unknown phase %s\n", name.c_str());
      return 2;
    }
    if (!phase->run(w)) return 2;
  }
  if (w.bad_total) {
    std::fprintf(stderr, "ERROR: %llu wrong replies\n", (unsigned long long)w.bad_total);
  }
  return w.bad_total ? 1 : 0;
}
