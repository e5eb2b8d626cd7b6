// Redis-style argument splitting, shared by config-file lines (server/config) and inline
// requests (server/resp): one set of quoting rules, Redis's sdssplitargs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace larder::common {

// Splits `line` into arguments exactly as Redis's sdssplitargs does:
//  * blanks (space, \t, \n, \v, \f, \r) before an argument are skipped; an unquoted argument
//    ends at a space, \t, \n, \r or the end;
//  * "double quotes" take the escapes \n \r \t \b \a and \xHH (two hex digits); any other \c
//    is c;
//  * 'single quotes' take only \' as an escape;
//  * a quote inside an unquoted argument starts a quoted part of the same argument;
//  * a closing quote must be followed by a blank or the end, else the line is refused;
//  * a NUL byte ends the line (as it ends Redis's C string).
// Appends the arguments to *out and returns true, or returns false on unbalanced quotes (then
// *out holds an unspecified prefix).
bool SplitArgs(std::string_view line, std::vector<std::string>* out);

// The same, returning the arguments; nullopt on unbalanced quotes.
std::optional<std::vector<std::string>> SplitArgs(std::string_view line);

// `bytes` double-quoted as Redis's sdscatrepr writes it (MONITOR's lines, redis-cli's output):
// \\ \" \n \r \t \a \b escaped, other bytes outside printable ASCII as \xhh.
std::string Repr(std::string_view bytes);

// `arg` as SplitArgs reads it back: unchanged when that is unambiguous, else Repr(arg).
std::string QuoteArg(std::string_view arg);

}  // namespace larder::common
