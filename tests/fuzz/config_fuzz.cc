// libFuzzer target: config parsing (file syntax, every option's value parser, CONFIG SET)
// must never crash, and every error must name where it came from.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  static const std::string path = "/tmp/larder-config-fuzz-" + std::to_string(getpid()) + ".conf";
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  larder::config::Config cfg;
  auto err = cfg.LoadFile(path);
  std::remove(path.c_str());  // libFuzzer may end with _Exit: leave no file behind
  if (err && err->find(path) != 0) __builtin_trap();
  // The same text as a CONFIG SET name/value pair.
  size_t sp = text.find(' ');
  if (sp != std::string::npos) {
    larder::config::Config c2;
    (void)c2.Set(text.substr(0, sp), text.substr(sp + 1));
  }
  (void)cfg.Get(text);
  return 0;
}
