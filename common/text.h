// ASCII case helpers (protocol words, option names, units). Locale-independent.
#pragma once

#include <string>
#include <string_view>

namespace larder::common {

// ASCII case-insensitive equality.
bool EqualsNoCase(std::string_view a, std::string_view b);

// `s` with A-Z lowered; other bytes unchanged.
std::string ToLower(std::string_view s);

// `s` with a-z raised; other bytes unchanged.
std::string ToUpper(std::string_view s);

}  // namespace larder::common
