#include "common/units.h"

#include <charconv>
#include <limits>

#include "common/text.h"

namespace larder::common {

namespace {

struct Unit {
  std::string_view suffix;  // lowercase
  uint64_t multiplier;
};

constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

constexpr Unit kUnits[] = {
    {"", 1},
    {"b", 1},
    {"k", 1000},
    {"kb", kKiB},
    {"m", 1000 * 1000},
    {"mb", kMiB},
    {"g", 1000000000ull},
    {"gb", kGiB},
};

}  // namespace

std::optional<uint64_t> ParseBytes(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (ec != std::errc() || end != text.data() + digits) return std::nullopt;  // overflow
  const std::string suffix = ToLower(text.substr(digits));
  for (const Unit& unit : kUnits) {
    if (suffix != unit.suffix) continue;
    if (value > std::numeric_limits<uint64_t>::max() / unit.multiplier) return std::nullopt;
    return value * unit.multiplier;
  }
  return std::nullopt;
}

std::string FormatBytesHuman(uint64_t bytes) {
  if (bytes != 0 && bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "gb";
  if (bytes != 0 && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + "mb";
  if (bytes != 0 && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + "kb";
  return std::to_string(bytes);
}

}  // namespace larder::common
