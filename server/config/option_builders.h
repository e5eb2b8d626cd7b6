// Builders of the option table's rows (option_table.cc): each ties an option's parse and format
// to one typed ServerConfig member, with Redis's syntax and messages for its type. Internal to
// larder_config.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/option_table.h"

namespace larder::config::builder {

// Integer options: no upper bound.
inline constexpr int64_t kNoMax = INT64_MAX;

Option Bool(std::string_view name, bool ServerConfig::*field, bool mut, std::string_view doc);
// An integer in [min, max].
Option Int(std::string_view name, int64_t ServerConfig::*field, bool mut, int64_t min, int64_t max,
           std::string_view doc);
// A size with Redis's units (1gb, 64mb, ...), at least `min`; written back human-readable.
Option Bytes(std::string_view name, uint64_t ServerConfig::*field, bool mut, int64_t min,
             std::string_view doc);
Option Double(std::string_view name, double ServerConfig::*field, bool mut, double min, double max,
              std::string_view doc);
// An octal number in [0, max] (unixsocketperm).
Option Octal(std::string_view name, int64_t ServerConfig::*field, bool mut, int64_t max,
             std::string_view doc);
Option String(std::string_view name, std::string ServerConfig::*field, bool mut,
              std::string_view doc);
// One of `choices`, matched without case.
Option Enum(std::string_view name, std::string ServerConfig::*field, bool mut,
            std::vector<std::string_view> choices, std::string_view doc);
// One or more words (bind).
Option StringList(std::string_view name, std::vector<std::string> ServerConfig::*field, bool mut,
                  std::string_view doc);
// Numbers, each within [min, max]; CONFIG SET takes them as one space-separated argument, and
// "" is none (Redis's latency-tracking-info-percentiles).
Option NumberList(std::string_view name, std::vector<double> ServerConfig::*field, bool mut,
                  double min, double max, std::string_view doc);
// client-output-buffer-limit's `<class> <hard> <soft> <soft-seconds>` groups.
Option OutputBufferLimit(std::string_view name, bool mut, std::string_view doc);
// notify-keyspace-events' class letters.
Option KeyspaceEvents(std::string_view name, uint32_t ServerConfig::*field, bool mut,
                      std::string_view doc);
// Pairs of key suffixes, `<first> <second> ...`; a single "" means none.
Option SuffixPairs(std::string_view name,
                   std::vector<std::pair<std::string, std::string>> ServerConfig::*field, bool mut,
                   std::string_view doc);

// Modifiers of a built row.
Option WithCheck(Option o, std::function<Error(const ServerConfig&)> check);
Option Sensitive(Option o);     // a secret: SLOWLOG shows a CONFIG SET of it redacted
Option RereadsFiles(Option o);  // names files: CONFIG SET of the value it has reads them again

}  // namespace larder::config::builder
