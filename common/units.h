// Byte sizes as Larder reads and writes them everywhere (larder.conf, CONFIG SET, larder-admin,
// the benchmark tools; tools/sizing/larder_sizing.py implements the same dialect and
// tests/common/byte_sizes.tsv holds the cases both must agree on).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace larder::common {

// Redis's memory units, case-insensitive: a decimal integer, then nothing or `b` (bytes),
// `k` (1000), `kb` (1024), `m` (1000^2), `mb` (1024^2), `g` (1000^3) or `gb` (1024^3).
// nullopt on anything else: an empty number, a sign, blanks, a fraction, another unit, or a
// result above 2^64-1.
std::optional<uint64_t> ParseBytes(std::string_view text);

// `bytes` with the largest of gb/mb/kb that divides it exactly, else the plain integer; what
// ParseBytes reads back as `bytes`.
std::string FormatBytesHuman(uint64_t bytes);

}  // namespace larder::common
