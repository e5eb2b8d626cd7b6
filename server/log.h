// Minimal server log: one line per event, Redis style ("pid:M 22 Nov 2026 06:32:57.123 * msg"),
// to stderr or the configured logfile. Thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace larder::server {

enum class LogLevel { kDebug = 0, kVerbose = 1, kNotice = 2, kWarning = 3 };

// Parses a `loglevel` value ("debug" | "verbose" | "notice" | "warning"); unknown = notice.
LogLevel ParseLogLevel(std::string_view name);
void SetLogLevel(LogLevel level);
// Appends to `path` from now on ("" = stderr). Returns false (and keeps stderr) on failure.
bool SetLogFile(const std::string& path);
// Writes one line if `level` is at or above the current level.
void Log(LogLevel level, std::string_view message);

}  // namespace larder::server
