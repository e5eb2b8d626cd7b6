#include "bench_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gflags/gflags.h>

#include "common/text.h"
#include "common/units.h"

namespace larder::bench {

void ParseFlags(int* argc, char*** argv, const char* usage) {
  gflags::SetUsageMessage(usage);
  for (int i = 1; i < *argc; ++i) {
    const std::string_view arg = (*argv)[i];
    if (arg == "--") break;
    if (arg != "--help" && arg != "-help") continue;
    std::printf("%s: %s\n\n", std::filesystem::path((*argv)[0]).filename().c_str(), usage);
    std::vector<gflags::CommandLineFlagInfo> flags;
    gflags::GetAllFlags(&flags);  // sorted by file, then name
    for (const gflags::CommandLineFlagInfo& f : flags) {
      if (f.filename.find("/bench/") != std::string::npos) {
        std::printf("%s", gflags::DescribeOneFlag(f).c_str());
      }
    }
    std::exit(0);
  }
  gflags::ParseCommandLineFlags(argc, argv, true);
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * v.size()));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> items = common::Split(s, ',');
  std::erase(items, std::string());
  return items;
}

std::vector<uint64_t> SizeListOrExit(const std::string& flag, const std::string& list) {
  std::vector<uint64_t> sizes;
  for (const std::string& item : SplitList(list)) {
    std::optional<uint64_t> bytes = common::ParseBytes(item);
    if (!bytes || *bytes == 0) {
      std::fprintf(stderr, "--%s: '%s' is not a size (e.g. 256kb, 4mb, 1gb, 4096)\n", flag.c_str(),
                   item.c_str());
      std::exit(2);
    }
    sizes.push_back(*bytes);
  }
  return sizes;
}

WorkDir::WorkDir(const std::string& dir, const std::string& tool) : path_(dir) {
  if (!path_.empty()) return;
  std::string tmpl =
      (std::filesystem::temp_directory_path() / ("larder-" + tool + "-XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    std::exit(2);
  }
  path_ = tmpl;
  own_ = true;
}

WorkDir::~WorkDir() {
  std::error_code ec;
  if (own_) std::filesystem::remove_all(path_, ec);
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
