// Reproducible bytes for the RESP codec tests.
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace larder::resp::test {

// n bytes drawn from a Mersenne Twister seeded with `seed`: the same n and seed, the same bytes.
inline std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

}  // namespace larder::resp::test
