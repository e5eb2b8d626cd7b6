// Redis-style glob matching, used by Scan patterns (and by the server for CONFIG GET).
#pragma once

#include <string_view>

namespace larder {

// Matches `text` against `pattern` with Redis's rules: `*` any run, `?` one byte, `[abc]`,
// `[^a]`, `[a-z]`, and `\x` for a literal x. Binary-safe. When `nocase` is true ASCII letters
// match either case.
bool GlobMatch(std::string_view pattern, std::string_view text, bool nocase = false);

}  // namespace larder
