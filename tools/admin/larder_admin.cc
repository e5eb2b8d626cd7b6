// larder-admin: offline administration of a Larder data directory.
//
//   larder-admin [--dir DIR] stats
//   larder-admin [--dir DIR] verify            exit 0 clean, 1 corruption found (in values,
//                                              metadata, SST files, or too damaged to open),
//                                              2 error
//   larder-admin [--dir DIR] keys [PATTERN]
//   larder-admin [--dir DIR] get KEY > file
//   larder-admin [--dir DIR] put KEY [--ttl-ms N] < file
//   larder-admin [--dir DIR] del KEY [KEY ...]
//   larder-admin [--dir DIR] evict --to BYTES  (units as in larder.conf: k, kb, m, mb, g, gb)
//   larder-admin [--dir DIR] compact
//
// It opens the directory itself and refuses while another process (a running larder-server)
// holds it. stats, keys, get and verify open it read-only (Options::read_only) and change
// nothing: what they find damaged or expired stays on disk, and verify reports it again until
// a read-write open (the server, or put, del, evict, compact here) drops it. Those four open it
// as the server does, and each ends with one maintenance pass. `evict` chooses by the default
// policy (lru-reuse). Long operations show progress on a terminal and stay quiet when piped.
// Each command is a row of kCommands beside the function that runs it.
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/units.h"
#include "larder/store.h"

namespace {

constexpr int kExitOk = 0, kExitFound = 1, kExitError = 2;

using Args = std::vector<std::string>;

// The usage text, on stderr with exit 2 (a bad command line), or on stdout with exit 0 (asked
// for with --help).
int Usage(bool asked = false) {
  std::fprintf(asked ? stdout : stderr,
               "usage: larder-admin [--dir DIR] COMMAND [ARGS]\n"
               "commands: stats | verify | keys [PATTERN] | get KEY | put KEY [--ttl-ms N] |\n"
               "          del KEY... | evict --to BYTES | compact\n"
               "DIR defaults to ./data (larder.conf's default `dir`).\n"
               "exit: 0 done, 1 found (verify: corruption; get: no such key), 2 error\n");
  return asked ? kExitOk : kExitError;
}

int Fail(const std::string& msg) {
  std::fprintf(stderr, "larder-admin: %s\n", msg.c_str());
  return kExitError;
}

int FailBusy(const std::string& dir, const std::string& advice) {
  return Fail(dir + " is in use by another process (a running larder-server?); " + advice);
}

void Progress(uint64_t done, uint64_t total, void*) {
  const int width = 40;
  int filled = total ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "\rverify [%.*s%*s] %llu/%llu", filled,
               "########################################", width - filled, "",
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
  if (done == total) std::fputc('\n', stderr);
}

// How a command opens the directory.
enum class Access {
  kRead,    // read-only: nothing in the directory changes
  kWrite,   // as the server opens it
  kCreate,  // as kWrite, creating a missing directory (put only)
};

// Opens `dir` for an offline command; nullptr (with *rc set after saying why) on failure.
std::unique_ptr<larder::Store> OpenOrExplain(const std::string& dir, int* rc, Access access) {
  larder::Options o;
  o.read_only = access == Access::kRead;
  o.create_if_missing = access == Access::kCreate;
  o.maintenance_interval_ms = 0;  // offline: no periodic passes; the one pass below
  o.max_disk_bytes = ~0ull >> 2;  // no budget: the admin tool never writes past it
  // Without a budget the derived generation would be 64 GiB, and an eviction round frees
  // 1/64 of a generation past what it must: `evict --to` would overshoot by up to 1 GiB.
  o.generation_bytes = 64ull << 20;
  auto r = larder::Store::Open(o, dir);
  if (r.ok()) {
    // Each read-write open starts a new (empty) head generation; one maintenance pass drops the
    // empty ones earlier opens left (and removes expired entries, as the server's passes would).
    if (access != Access::kRead) r.value()->Maintain();
    return std::move(r).value();
  }
  *rc = r.status().IsBusy() ? FailBusy(dir, "stop it, or use redis-cli against the server instead")
                            : Fail("cannot open " + dir + ": " + r.status().ToString());
  return nullptr;
}

void PrintStats(const larder::Stats& s) {
  std::printf(
      "keys:              %llu\nlive_bytes:        %llu\ndisk_bytes:        %llu\n"
      "generations:       %llu\nexpired_keys:      %llu\ncorruptions:       %llu\n",
      (unsigned long long)s.keys, (unsigned long long)s.live_bytes,
      (unsigned long long)s.disk_bytes, (unsigned long long)s.generations,
      (unsigned long long)s.expired_keys, (unsigned long long)s.corruptions);
}

// verify: larder::Verify opens the directory itself (read-only), so it needs no store.
int Verify(const std::string& dir) {
  auto r = larder::Verify(dir, isatty(STDERR_FILENO) ? Progress : nullptr, nullptr);
  if (!r.ok() && r.status().IsCorruption()) {  // too damaged to open: a finding, not an error
    std::printf("bad: %s\n", r.status().ToString().c_str());
    std::printf("cannot open %s: the directory is damaged (a cache: it may be emptied)\n",
                dir.c_str());
    return kExitFound;
  }
  if (!r.ok() && r.status().IsBusy()) return FailBusy(dir, "stop it first");
  if (!r.ok()) return Fail("cannot verify " + dir + ": " + r.status().ToString());
  for (const auto& p : r->problems) std::printf("bad: %s\n", p.c_str());
  std::printf("verified %llu entries: %llu ok, %llu corrupt, %llu missing\n",
              (unsigned long long)r->entries, (unsigned long long)r->ok,
              (unsigned long long)r->corrupt, (unsigned long long)r->missing);
  std::printf("checked %llu SST files: %llu corrupt\n", (unsigned long long)r->sst_files,
              (unsigned long long)r->corrupt_sst_files);
  return r->clean() ? kExitOk : kExitFound;
}

int Stats(larder::Store& store, const Args&) {
  PrintStats(store.GetStats());
  return kExitOk;
}

int Keys(larder::Store& store, const Args& args) {
  uint64_t cursor = 0;
  do {
    larder::ScanPage p = store.Scan(cursor, args.empty() ? "*" : args[0], 1000);
    for (const auto& k : p.keys) std::printf("%s\n", k.c_str());
    cursor = p.next_cursor;
  } while (cursor != 0);
  return kExitOk;
}

int Get(larder::Store& store, const Args& args) {
  auto v = store.Get(args[0]);
  if (v.status().IsNotFound()) {
    Fail("no such key: " + args[0]);
    return kExitFound;
  }
  if (!v.ok()) return Fail("get failed: " + v.status().ToString());
  if (fwrite(v->data(), 1, v->size(), stdout) != v->size()) return Fail("write to stdout failed");
  return kExitOk;
}

// A whole number of milliseconds, or nullopt.
std::optional<int64_t> ParseTtlMs(const std::string& t) {
  int64_t ttl = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), ttl);
  if (t.empty() || ec != std::errc() || end != t.data() + t.size() || ttl < 0) return std::nullopt;
  return ttl;
}

// put KEY [--ttl-ms N]: the value is stdin; the arguments were checked (CheckPutArgs).
int Put(larder::Store& store, const Args& args) {
  const int64_t ttl = args.size() == 3 ? *ParseTtlMs(args[2]) : 0;
  std::string value((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  larder::Status s = store.Put(args[0], value, ttl);
  if (!s.ok()) return Fail("put failed: " + s.ToString());
  return kExitOk;
}

int Del(larder::Store& store, const Args& args) {
  int deleted = 0;
  for (const auto& k : args) {
    larder::Status s = store.Delete(k);
    if (!s.ok() && !s.IsNotFound()) return Fail("del " + k + " failed: " + s.ToString());
    deleted += s.ok();
  }
  std::printf("%d\n", deleted);
  return kExitOk;
}

// evict --to BYTES: its argument was checked before the store opened (ParseEvictTarget).
int Evict(larder::Store& store, const Args& args) {
  larder::Status s = store.EvictTo(*larder::common::ParseBytes(args[1]));
  if (!s.ok()) return Fail("evict failed: " + s.ToString());
  PrintStats(store.GetStats());
  return kExitOk;
}

int Compact(larder::Store& store, const Args&) {
  larder::Status s = store.Compact();
  if (!s.ok()) return Fail("compact failed: " + s.ToString());
  PrintStats(store.GetStats());
  return kExitOk;
}

// Checks a command's arguments before the store opens; the error, or nullopt.
using ArgsCheck = std::optional<std::string> (*)(const Args& args);

std::optional<std::string> CheckEvictArgs(const Args& args) {
  if (args[0] != "--to") return "usage: evict --to BYTES";
  if (!larder::common::ParseBytes(args[1])) {
    return "--to takes a size such as 500gb or 1000000, got '" + args[1] + "'";
  }
  return std::nullopt;
}

std::optional<std::string> CheckPutArgs(const Args& args) {
  if (args.size() == 2 || (args.size() == 3 && args[1] != "--ttl-ms")) {
    return "usage: put KEY [--ttl-ms N]";
  }
  if (args.size() == 3 && !ParseTtlMs(args[2])) {
    return "--ttl-ms takes a whole number of milliseconds, got '" + args[2] + "'";
  }
  return std::nullopt;
}

struct Command {
  std::string_view name;
  size_t min_args, max_args;  // after the command's name
  int (*run)(larder::Store& store, const Args& args);
  Access access;
  ArgsCheck check = nullptr;  // optional, before the store opens
};

constexpr size_t kAny = ~size_t{0};

const Command kCommands[] = {
    {"stats", 0, 0, Stats, Access::kRead},
    {"keys", 0, 1, Keys, Access::kRead},
    {"get", 1, 1, Get, Access::kRead},
    {"put", 1, 3, Put, Access::kCreate, CheckPutArgs},
    {"del", 1, kAny, Del, Access::kWrite},
    {"evict", 2, 2, Evict, Access::kWrite, CheckEvictArgs},
    {"compact", 0, 0, Compact, Access::kWrite},
};

// The usage, after a line naming what was wrong with the command line.
int UsageAfter(const std::string& what) {
  Fail(what);
  return Usage();
}

int RunCommand(const std::string& dir, const std::string& name, const Args& args) {
  if (name == "verify") {
    return args.empty() ? Verify(dir) : UsageAfter("verify: wrong number of arguments");
  }
  for (const Command& c : kCommands) {
    if (c.name != name) continue;
    if (args.size() < c.min_args || args.size() > c.max_args) {
      return UsageAfter(name + ": wrong number of arguments");
    }
    if (c.check) {
      if (auto err = c.check(args)) return Fail(*err);
    }
    int rc = kExitOk;
    std::unique_ptr<larder::Store> store = OpenOrExplain(dir, &rc, c.access);
    return store ? c.run(*store, args) : rc;
  }
  return UsageAfter("unknown command '" + name + "' (--dir goes before the command)");
}

}  // namespace

int main(int argc, char** argv) {
  Args args(argv + 1, argv + argc);
  std::string dir = "./data";
  if (args.size() >= 2 && args[0] == "--dir") {
    dir = args[1];
    args.erase(args.begin(), args.begin() + 2);
  } else if (!args.empty() && args[0].starts_with("--dir=")) {
    dir = args[0].substr(6);
    args.erase(args.begin());
  }
  if (!args.empty() && (args[0] == "-h" || args[0] == "--help")) return Usage(/*asked=*/true);
  if (args.empty()) return Usage();
  return RunCommand(dir, args[0], Args(args.begin() + 1, args.end()));
}
