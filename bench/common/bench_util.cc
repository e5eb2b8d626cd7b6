#include "bench_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace larder::bench {

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b < s.size()) {
    size_t e = s.find(',', b);
    if (e == std::string::npos) e = s.size();
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

uint64_t ParseSize(const std::string& s) {
  uint64_t n = std::stoull(s);
  switch (s.back()) {
    case 'k':
    case 'K':
      return n << 10;
    case 'm':
    case 'M':
      return n << 20;
    case 'g':
    case 'G':
      return n << 30;
    default:
      return n;
  }
}

uint64_t ProcIoBytes(const std::string& counter, pid_t pid) {
  std::ifstream f(pid ? "/proc/" + std::to_string(pid) + "/io" : "/proc/self/io");
  const std::string want = counter + ":";
  std::string name;
  uint64_t v;
  while (f >> name >> v) {
    if (name == want) return v;
  }
  return 0;
}

void DropPageCache(const std::string& dir) {
  std::error_code ec;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file()) continue;
    int fd = open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
  }
}

}  // namespace larder::bench
