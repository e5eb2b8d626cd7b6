#include "ram_per_key.h"

#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "larder/store.h"

namespace larder::bench {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM"); 0 if missing.
uint64_t StatusBytes(const std::string& field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, field.size() + 1, field + ":") == 0) {
      return std::strtoull(line.c_str() + field.size() + 1, nullptr, 10) * 1024;
    }
  }
  return 0;
}

// The number after "name": in a flat JSON object; -1 if absent.
double JsonNumber(const std::string& json, const std::string& name) {
  size_t p = json.find("\"" + name + "\":");
  return p == std::string::npos ? -1 : std::strtod(json.c_str() + p + name.size() + 3, nullptr);
}

Options StoreOptions(uint64_t max_disk_bytes) {
  Options o;
  o.max_disk_bytes = max_disk_bytes;
  return o;
}

// Writes the keys; false (with a message) on any failed write or if a key is missing after.
bool WriteKeys(const std::string& dir, const RamPerKeyConfig& c, std::string* fields) {
  auto r = Store::Open(StoreOptions(c.max_disk_bytes), dir);
  if (!r.ok()) {
    std::fprintf(stderr, "ram: open %s: %s\n", dir.c_str(), r.status().ToString().c_str());
    return false;
  }
  std::unique_ptr<Store> store = std::move(r).value();
  std::string v(c.value_bytes, '\0');
  std::mt19937_64 rng(16);
  for (size_t p = 0; p + 8 <= v.size(); p += 8) {
    uint64_t x = rng();
    std::memcpy(&v[p], &x, 8);
  }
  auto t0 = Clock::now();
  uint64_t failed = 0;
  for (uint64_t i = 0; i < c.keys; ++i) {
    std::memcpy(v.data(), &i, 8);
    if (!store->Put(LmcacheKey(i), v).ok()) failed++;
  }
  const Status flushed = store->Flush();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  const Stats st = store->GetStats();
  const Status closed = store->Close();
  if (failed || !flushed.ok() || !closed.ok() || st.keys != c.keys) {
    std::fprintf(stderr,
                 "ram: %" PRIu64 " failed puts, flush: %s, close: %s, %" PRIu64 " keys of %" PRIu64
                 " (evicted %" PRIu64 ")\n",
                 failed, flushed.ToString().c_str(), closed.ToString().c_str(), st.keys, c.keys,
                 st.evicted_keys);
    return false;
  }
  char b[512];
  std::snprintf(b, sizeof b,
                "\"keys_written\":%" PRIu64 ",\"value_bytes\":%" PRIu64
                ",\"key_bytes\":%zu,"
                "\"write_seconds\":%.3f,\"max_disk_bytes\":%" PRIu64 ",\"disk_bytes\":%" PRIu64
                ",\"value_file_bytes\":%" PRIu64 ",\"index_file_bytes\":%" PRIu64
                ",\"index_memory_bytes_before_restart\":%" PRIu64,
                c.keys, c.value_bytes, LmcacheKey(0).size(), seconds, c.max_disk_bytes,
                st.disk_bytes, st.value_file_bytes, st.index_file_bytes, st.index_memory_bytes);
  *fields = b;
  return true;
}

// Runs /proc/self/exe with `args` and returns its stdout; false if it could not run or exited
// non-zero.
bool RunSelf(const std::vector<std::string>& args, std::string* out) {
  std::vector<char*> argv;  // built before fork: the child only calls async-signal-safe code
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int fds[2];
  if (pipe(fds) != 0) return false;
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out->append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

bool EnoughSpace(const std::string& dir, const RamPerKeyConfig& c) {
  const uint64_t need = c.keys * ((c.value_bytes + 4095) / 4096 * 4096) + (256ull << 20);
  struct statvfs fs;
  if (statvfs(dir.c_str(), &fs) != 0) return false;
  const uint64_t avail = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (need > c.max_disk_bytes || need > avail) {
    std::fprintf(stderr,
                 "ram: %" PRIu64 " keys of %" PRIu64 " bytes need %" PRIu64
                 " bytes: more than the budget (%" PRIu64 ") or the free space (%" PRIu64 ")\n",
                 c.keys, c.value_bytes, need, c.max_disk_bytes, avail);
    return false;
  }
  return true;
}

}  // namespace

std::string LmcacheKey(uint64_t i) {
  const uint64_t chunk = i / 8;
  char b[160];
  std::snprintf(b, sizeof b,
                "meta-llama/Llama-3.1-8B-Instruct@%08x@0@%016" PRIx64 "%016" PRIx64 "%016" PRIx64
                "%016" PRIx64,
                static_cast<unsigned>(i % 8), SplitMix(chunk), SplitMix(chunk ^ (1ull << 62)),
                SplitMix(chunk ^ (2ull << 62)), SplitMix(chunk ^ (3ull << 62)));
  return b;
}

int RamPerKey(const std::string& dir, const RamPerKeyConfig& c, std::string* json) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "ram: mkdir %s: %s\n", dir.c_str(), ec.message().c_str());
    return 2;
  }
  if (!EnoughSpace(dir, c)) return 2;
  std::string written, measured;
  if (!WriteKeys(dir, c, &written)) return 1;
  if (!RunSelf({"larder-bench", "--ram_measure_dir=" + dir,
                "--ram_max_disk_bytes=" + std::to_string(c.max_disk_bytes)},
               &measured)) {
    std::fprintf(stderr, "ram: the measuring process failed\n");
    return 1;
  }
  while (!measured.empty() && (measured.back() == '\n' || measured.back() == '}')) {
    measured.pop_back();
  }
  if (measured.empty() || measured[0] != '{') {
    std::fprintf(stderr, "ram: no figures from the measuring process\n");
    return 1;
  }
  *json = "{\"part\":\"ram\"," + written + "," + measured.substr(1) + "}";
  if (JsonNumber(*json, "keys") != static_cast<double>(c.keys)) {
    std::fprintf(stderr, "ram: the store reopened with other than the %" PRIu64 " keys written\n",
                 c.keys);
    return 1;
  }
  return 0;
}

int RamMeasureChild(const std::string& dir, uint64_t max_disk_bytes) {
  // Opening any store first touches RocksDB's code and its one-time state (threads, statics),
  // which is not per key: an empty store opened and closed first leaves the measured open
  // with the marginal cost of the keys.
  const std::string empty = dir + ".empty";
  {
    auto warm = Store::Open(StoreOptions(max_disk_bytes), empty);
    if (!warm.ok() || !(*warm)->Close().ok()) {
      std::fprintf(stderr, "ram: opening an empty store in %s failed\n", empty.c_str());
      return 1;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(empty, ec);
  const uint64_t before = StatusBytes("VmRSS"), anon_before = StatusBytes("RssAnon");
  auto t0 = Clock::now();
  auto r = Store::Open(StoreOptions(max_disk_bytes), dir);
  const double open_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const uint64_t after = StatusBytes("VmRSS"), anon_after = StatusBytes("RssAnon"),
                 hwm = StatusBytes("VmHWM");
  if (!r.ok()) {
    std::fprintf(stderr, "ram: reopen %s: %s\n", dir.c_str(), r.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<Store> store = std::move(r).value();
  const Stats st = store->GetStats();
  const double keys = st.keys ? static_cast<double>(st.keys) : 1;
  std::printf("{\"keys\":%" PRIu64 ",\"rss_before_open_bytes\":%" PRIu64
              ",\"rss_after_open_bytes\":%" PRIu64 ",\"vm_hwm_bytes\":%" PRIu64
              ",\"open_seconds\":%.3f,\"index_memory_bytes\":%" PRIu64
              ",\"rss_per_key\":%.2f,\"rss_anon_per_key\":%.2f,\"index_memory_per_key\":%.2f}\n",
              st.keys, before, after, hwm, open_s, st.index_memory_bytes,
              (static_cast<double>(after) - static_cast<double>(before)) / keys,
              (static_cast<double>(anon_after) - static_cast<double>(anon_before)) / keys,
              st.index_memory_bytes / keys);
  std::fflush(stdout);
  if (Status s = store->Close(); !s.ok()) {
    std::fprintf(stderr, "ram: close: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace larder::bench
