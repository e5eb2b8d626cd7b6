// Little-endian fixed-width encoding helpers for the on-disk formats. The engine targets
// little-endian hosts (x86-64, arm64), so these are plain copies.
#pragma once

#include <cstring>

namespace larder::format {

template <typename T>
void PutLE(char*& p, T v) {
  std::memcpy(p, &v, sizeof(T));
  p += sizeof(T);
}

template <typename T>
T TakeLE(const char*& p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  p += sizeof(T);
  return v;
}

}  // namespace larder::format
