// Uses the installed C++ API: put a value, read it back into the caller's buffer, compare.
// Exit status 0 on success.
#include <larder/store.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  larder::Options options;
  options.max_disk_bytes = 64ull << 20;
  auto store = larder::Store::Open(options, argv[1]);
  if (!store.ok()) {
    std::fprintf(stderr, "open: %s\n", store.status().ToString().c_str());
    return 1;
  }
  std::string value(1 << 20, '\0');
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(i * 13);
  if (larder::Status s = (*store)->Put("cc-key", value); !s.ok()) {
    std::fprintf(stderr, "put: %s\n", s.ToString().c_str());
    return 1;
  }
  std::string buf(value.size(), '#');
  auto n = (*store)->GetInto("cc-key", buf.data(), buf.size());
  const bool same = n.ok() && *n == value.size() && buf == value;
  if (larder::Status s = (*store)->Close(); !s.ok()) return 1;
  std::printf("c++ api: %s\n", same ? "ok" : "MISMATCH");
  return same ? 0 : 1;
}
