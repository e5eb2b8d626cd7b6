// Helpers every benchmark tool shares (byte sizes: common/units.h): command-line flags,
// percentiles, flag-list parsing, the kernel's per-process I/O counters, and dropping the page
// cache of a data directory for cold reads.
#ifndef LARDER_BENCH_COMMON_BENCH_UTIL_H_
#define LARDER_BENCH_COMMON_BENCH_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace larder::bench {

// gflags' ParseCommandLineFlags for a tool described by `usage`, except that --help (or -help)
// lists only the tool's own flags (those defined under bench/) and exits with status 0: the
// full list starts with gflags' own and, for tools that link RocksDB, its tools' dozens.
void ParseFlags(int* argc, char*** argv, const char* usage);

// The q-quantile of v by nearest rank (v[floor(q * n)] of v sorted, the last for q = 1); 0 if v
// is empty. Latency percentiles of every tool.
double Percentile(std::vector<double> v, double q);

// "a,b,,c" -> {"a", "b", "c"} (empty items skipped).
std::vector<std::string> SplitList(const std::string& s);

// "256kb,1mb" -> the sizes in bytes (larder.conf's units, common/units.h). On a bad item prints
// a message naming `flag` and exits with status 2.
std::vector<uint64_t> SizeListOrExit(const std::string& flag, const std::string& list);

// A counter of /proc/<pid>/io, e.g. "write_bytes" or "read_bytes": bytes the process caused to
// be written to / fetched from the device (readahead included). pid 0 = this process; 0 when
// the file or the counter is missing.
uint64_t ProcIoBytes(const std::string& counter, pid_t pid = 0);

// Where a tool keeps its stores: `dir` when given (kept afterwards), else a fresh
// <tmp>/larder-<tool>-XXXXXX removed when the WorkDir goes. If no directory can be made, prints
// why and exits with status 2.
class WorkDir {
 public:
  WorkDir(const std::string& dir, const std::string& tool);
  ~WorkDir();
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool own_ = false;
};

// fdatasync + posix_fadvise(DONTNEED) on every regular file below `dir`, so the next reads
// come from the device.
void DropPageCache(const std::string& dir);

}  // namespace larder::bench

#endif  // LARDER_BENCH_COMMON_BENCH_UTIL_H_
