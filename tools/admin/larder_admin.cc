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
// holds it. Long operations show progress on a terminal and stay quiet when piped.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "common/units.h"
#include "larder/store.h"

namespace {

constexpr int kExitOk = 0, kExitFound = 1, kExitError = 2;

int Usage() {
  std::fprintf(stderr,
               "usage: larder-admin [--dir DIR] COMMAND [ARGS]\n"
               "commands: stats | verify | keys [PATTERN] | get KEY | put KEY [--ttl-ms N] |\n"
               "          del KEY... | evict --to BYTES | compact\n"
               "DIR defaults to ./data (larder.conf's default `dir`).\n");
  return kExitError;
}

int Fail(const std::string& msg) {
  std::fprintf(stderr, "larder-admin: %s\n", msg.c_str());
  return kExitError;
}

void Progress(uint64_t done, uint64_t total, void*) {
  const int width = 40;
  int filled = total ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "\rverify [%.*s%*s] %llu/%llu", filled,
               "########################################", width - filled, "",
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
  if (done == total) std::fputc('\n', stderr);
}

// Only `put` may create a new directory; every other command needs an existing one.
std::unique_ptr<larder::Store> OpenOrExplain(const std::string& dir, int* rc, bool create = false) {
  larder::Options o;
  o.create_if_missing = create;
  o.maintenance_interval_ms = 0;  // offline: change nothing the command did not ask for
  o.max_disk_bytes = ~0ull >> 2;  // no budget: the admin tool never writes past it
  auto r = larder::Store::Open(o, dir);
  if (r.ok()) return std::move(r).value();
  const larder::Status& s = r.status();
  if (s.IsBusy()) {
    *rc = Fail(dir +
               " is in use by another process (a running larder-server?); stop it, or use "
               "redis-cli against the server instead");
  } else {
    *rc = Fail("cannot open " + dir + ": " + s.ToString());
  }
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

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string dir = "./data";
  if (args.size() >= 2 && args[0] == "--dir") {
    dir = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.empty() || args[0] == "-h" || args[0] == "--help") return Usage();
  const std::string cmd = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());

  if (cmd == "verify") {
    if (!rest.empty()) return Usage();
    const bool tty = isatty(STDERR_FILENO);
    auto r = larder::Verify(dir, tty ? Progress : nullptr, nullptr);
    if (!r.ok() && r.status().IsCorruption()) {  // too damaged to open: a finding, not an error
      std::printf("bad: %s\n", r.status().ToString().c_str());
      std::printf("cannot open %s: the directory is damaged (a cache: it may be emptied)\n",
                  dir.c_str());
      return kExitFound;
    }
    if (!r.ok()) {
      return r.status().IsBusy() ? Fail(dir +
                                        " is in use by another process (a running "
                                        "larder-server?); stop it first")
                                 : Fail("cannot verify " + dir + ": " + r.status().ToString());
    }
    for (const auto& p : r->problems) std::printf("bad: %s\n", p.c_str());
    std::printf("verified %llu entries: %llu ok, %llu corrupt, %llu missing\n",
                (unsigned long long)r->entries, (unsigned long long)r->ok,
                (unsigned long long)r->corrupt, (unsigned long long)r->missing);
    std::printf("checked %llu SST files: %llu corrupt\n", (unsigned long long)r->sst_files,
                (unsigned long long)r->corrupt_sst_files);
    return r->clean() ? kExitOk : kExitFound;
  }

  int rc = kExitOk;
  if (cmd == "stats" && rest.empty()) {
    auto store = OpenOrExplain(dir, &rc);
    if (store) PrintStats(store->GetStats());
    return rc;
  }
  if (cmd == "keys" && rest.size() <= 1) {
    auto store = OpenOrExplain(dir, &rc);
    if (!store) return rc;
    uint64_t cursor = 0;
    do {
      larder::ScanPage p = store->Scan(cursor, rest.empty() ? "*" : rest[0], 1000);
      for (const auto& k : p.keys) std::printf("%s\n", k.c_str());
      cursor = p.next_cursor;
    } while (cursor != 0);
    return kExitOk;
  }
  if (cmd == "get" && rest.size() == 1) {
    auto store = OpenOrExplain(dir, &rc);
    if (!store) return rc;
    auto v = store->Get(rest[0]);
    if (!v.ok()) {
      Fail("no such key: " + rest[0]);
      return kExitFound;
    }
    if (fwrite(v->data(), 1, v->size(), stdout) != v->size()) return Fail("write to stdout failed");
    return kExitOk;
  }
  if (cmd == "put" && (rest.size() == 1 || (rest.size() == 3 && rest[1] == "--ttl-ms"))) {
    int64_t ttl = 0;
    if (rest.size() == 3) {
      auto t = larder::common::ParseBytes(rest[2]);  // a plain integer
      if (!t || rest[2].find_first_not_of("0123456789") != std::string::npos) {
        return Fail("--ttl-ms takes a whole number of milliseconds, got '" + rest[2] + "'");
      }
      ttl = static_cast<int64_t>(*t);
    }
    std::string value((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    auto store = OpenOrExplain(dir, &rc, /*create=*/true);
    if (!store) return rc;
    larder::Status s = store->Put(rest[0], value, ttl);
    if (!s.ok()) return Fail("put failed: " + s.ToString());
    return kExitOk;
  }
  if (cmd == "del" && !rest.empty()) {
    auto store = OpenOrExplain(dir, &rc);
    if (!store) return rc;
    int deleted = 0;
    for (const auto& k : rest) deleted += store->Delete(k).ok();
    std::printf("%d\n", deleted);
    return kExitOk;
  }
  if (cmd == "evict" && rest.size() == 2 && rest[0] == "--to") {
    auto to = larder::common::ParseBytes(rest[1]);
    if (!to) return Fail("--to takes a size such as 500gb or 1000000, got '" + rest[1] + "'");
    auto store = OpenOrExplain(dir, &rc);
    if (!store) return rc;
    larder::Status s = store->EvictTo(*to);
    if (!s.ok()) return Fail("evict failed: " + s.ToString());
    PrintStats(store->GetStats());
    return kExitOk;
  }
  if (cmd == "compact" && rest.empty()) {
    auto store = OpenOrExplain(dir, &rc);
    if (!store) return rc;
    larder::Status s = store->Compact();
    if (!s.ok()) return Fail("compact failed: " + s.ToString());
    PrintStats(store->GetStats());
    return kExitOk;
  }
  return Usage();
}
