// Text helpers (protocol words, option names, units, numbers): ASCII case, splitting, whole-
// string numbers. Locale-independent.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace larder::common {

// ASCII case-insensitive equality.
bool EqualsNoCase(std::string_view a, std::string_view b);

// `s` with A-Z lowered; other bytes unchanged.
std::string ToLower(std::string_view s);

// The pieces of `s` between `sep`s, empty ones included, except that a final `sep` ends the
// last piece rather than starting an empty one: "a,,b," -> {"a", "", "b"}; "" -> {}.
std::vector<std::string> Split(std::string_view s, char sep);

// The pieces of `s` between runs of `sep`, empty ones dropped, as views into `s` (words of a
// space-separated list, lines of a text): " a  b " -> {"a", "b"}; "" -> {}.
std::vector<std::string_view> SplitNonEmpty(std::string_view s, char sep);

// `s` with a-z raised; other bytes unchanged.
std::string ToUpper(std::string_view s);

// The whole of `s` as a T, or nullopt (empty, trailing bytes, out of range); `extra` is
// std::from_chars's base (integers) or format (floating point).
template <typename T, typename... Extra>
std::optional<T> ParseNumber(std::string_view s, Extra... extra) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, extra...);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace larder::common
