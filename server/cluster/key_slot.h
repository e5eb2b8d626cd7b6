// Redis Cluster's key → slot mapping: CRC16 (XMODEM: polynomial 0x1021, initial value 0, no
// reflection) of the key, or of its hash tag, modulo 16384. The hash tag is the text between
// the first '{' and the first '}' after it, when that text is not empty ("{user}.a" and
// "{user}.b" share a slot; "{}x" hashes whole). Clients compute the same function, so it must
// match Redis bit for bit (cluster tests check it against Redis 7's CLUSTER KEYSLOT).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace larder::server::cluster {

inline constexpr int kSlotCount = 16384;

namespace detail {
constexpr std::array<uint16_t, 256> MakeCrc16Table() {
  std::array<uint16_t, 256> table{};
  for (int byte = 0; byte < 256; ++byte) {
    uint16_t crc = static_cast<uint16_t>(byte << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
    table[byte] = crc;
  }
  return table;
}
inline constexpr std::array<uint16_t, 256> kCrc16Table = MakeCrc16Table();
}  // namespace detail

// CRC16-XMODEM of `data` ("123456789" gives 0x31C3).
constexpr uint16_t Crc16(std::string_view data) {
  uint16_t crc = 0;
  for (unsigned char c : data) {
    crc = static_cast<uint16_t>((crc << 8) ^ detail::kCrc16Table[((crc >> 8) ^ c) & 0xFF]);
  }
  return crc;
}

// The part of `key` that decides its slot: its hash tag, or the whole key.
constexpr std::string_view HashedPart(std::string_view key) {
  const size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

// The slot of `key`, in [0, kSlotCount).
constexpr int KeySlot(std::string_view key) {
  return Crc16(HashedPart(key)) & (kSlotCount - 1);
}

}  // namespace larder::server::cluster
