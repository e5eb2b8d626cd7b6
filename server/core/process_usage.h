// What the process uses of the machine, read from the kernel on each call: resident memory and
// CPU time. INFO (memory, cpu) and the metrics endpoint report the same readings.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace larder::server {

// Resident set size in bytes (/proc/self/statm), 0 if unreadable.
inline uint64_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long pages = 0, rss = 0;
  int n = std::fscanf(f, "%lu %lu", &pages, &rss);
  std::fclose(f);
  return n == 2 ? rss * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
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
