// What the process uses of the machine, read from the kernel on each call: resident memory and
// CPU time, and the machine's memory. INFO (memory, cpu) and the metrics endpoint report the same
// readings.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace larder::server {

// Resident memory in bytes (/proc/self/statm; zeros if unreadable).
struct ResidentMemory {
  uint64_t total = 0;  // the resident set size
  // Of it, pages backed by files or shared memory: mostly the value files' pages that reads
  // mapped (they are the page cache's, shared with every reader of the file), not the
  // server's own memory.
  uint64_t file_backed = 0;
  uint64_t own() const { return total - file_backed; }
};

inline ResidentMemory ReadResidentMemory() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return {};
  unsigned long pages = 0, rss = 0, shared = 0;
  int n = std::fscanf(f, "%lu %lu %lu", &pages, &rss, &shared);
  std::fclose(f);
  if (n != 3 || shared > rss) return {};
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return {rss * page, shared * page};
}

// The machine's physical memory in bytes (INFO's total_system_memory, as Redis reads it).
inline uint64_t TotalSystemMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

struct CpuTime {
  timeval user{}, system{};
  static double Seconds(const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  }
};

// CPU time of this process (RUSAGE_SELF) or of its waited-for children (RUSAGE_CHILDREN).
inline CpuTime CpuTimeOf(int who) {
  struct rusage usage {};
  getrusage(who, &usage);
  return {usage.ru_utime, usage.ru_stime};
}

}  // namespace larder::server
