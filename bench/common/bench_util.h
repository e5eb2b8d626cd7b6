// Helpers every benchmark tool shares (byte sizes: common/units.h): flag-list parsing, the kernel's
// per-process I/O counters, and dropping the page cache of a data directory for cold reads.
#ifndef LARDER_BENCH_COMMON_BENCH_UTIL_H_
#define LARDER_BENCH_COMMON_BENCH_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace larder::bench {

// "a,b,,c" -> {"a", "b", "c"} (empty items skipped).
std::vector<std::string> SplitList(const std::string& s);

// "256kb,1mb" -> the sizes in bytes (larder.conf's units, common/units.h). On a bad item prints
// a message naming `flag` and exits with status 2.
std::vector<uint64_t> SizeListOrExit(const std::string& flag, const std::string& list);

// A counter of /proc/<pid>/io, e.g. "write_bytes" or "read_bytes": bytes the process caused to
// be written to / fetched from the device (readahead included). pid 0 = this process; 0 when
// the file or the counter is missing.
uint64_t ProcIoBytes(const std::string& counter, pid_t pid = 0);

// fdatasync + posix_fadvise(DONTNEED) on every regular file below `dir`, so the next reads
// come from the device.
void DropPageCache(const std::string& dir);

}  // namespace larder::bench

#endif  // LARDER_BENCH_COMMON_BENCH_UTIL_H_
