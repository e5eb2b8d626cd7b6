// The option table: every server option is declared once here (option_table.cc) and that one
// declaration drives config-file parsing, command-line overrides, CONFIG GET/SET and
// CONFIG REWRITE (see config.h). Adding an option = one table entry + one ServerConfig field +
// one paragraph in conf/larder.conf (config_test fails until all three agree); an engine option
// also gets one line in config/engine_options.cc (engine_defaults_test checks its default).
// The default is written once, as the ServerConfig field's initialiser: DefaultLine derives the
// config-file text from it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/server_config.h"

namespace larder::config {

// How an option's arguments are written and parsed.
enum class Type {
  kBool,                     // yes | no (case-insensitive)
  kInteger,                  // decimal integer within [min, max]
  kBytes,                    // integer with an optional unit (common/units.h) within [min, 2^63-1]
  kDouble,                   // decimal number within [min, max]
  kOctal,                    // octal integer (file modes), printed without a leading 0
  kString,                   // one argument, any bytes
  kEnum,                     // one of a fixed set of lowercase words (case-insensitive on input)
  kStringList,               // one or more arguments
  kNumberList,               // zero or more decimal numbers within [min, max]
  kClientOutputBufferLimit,  // groups of <class> <hard-bytes> <soft-bytes> <soft-seconds>
  kSuffixPairs,              // <suffix> <suffix> pairs, or "" for none
};

// Reason a value was refused (no option name, no prefix: callers add the context), or nullopt.
using Error = std::optional<std::string>;

struct Option {
  std::string_view name;  // lowercase, as written in the config file
  Type type = Type::kString;
  bool runtime_mutable = false;  // CONFIG SET may change it
  std::string_view doc;          // one line

  // Accepted argument count: [min_args, max_args]; max_args < 0 = unbounded.
  int min_args = 1;
  int max_args = 1;

  // Parses `args` (already split, arity already checked) into `*cfg`. On error `*cfg` may be
  // partially modified: callers parse into a scratch copy.
  std::function<Error(const std::vector<std::string>& args, ServerConfig* cfg)> parse;

  // The option's value in `cfg` as arguments. `human` writes byte counts with the largest
  // binary unit that divides them (`1gb`) for the config file; otherwise plain integers, which
  // is what CONFIG GET prints. Parsing the result yields the same value either way.
  std::function<std::vector<std::string>(const ServerConfig& cfg, bool human)> format;

  // Optional extra check run on the whole candidate config after `parse` succeeded.
  std::function<Error(const ServerConfig& cfg)> validate;

  // A secret (a password): SLOWLOG shows the value a CONFIG SET gives it as "(redacted)", as
  // Redis does for its sensitive options (MONITOR never shows CONFIG, an admin command).
  bool sensitive = false;

  // Names files that are read when it is applied (a certificate, a key): CONFIG SET applies it
  // even to the value it has, so a file replaced in place is read again, as Redis's
  // VOLATILE_CONFIG options.
  bool rereads_files = false;
};

// All options in declaration (= config file section) order.
const std::vector<Option>& OptionTable();

// Case-insensitive lookup; nullptr if unknown.
const Option* FindOption(std::string_view name);

// Position of `opt` in OptionTable() (opt must come from it).
size_t OptionIndex(const Option& opt);

// `s` in single quotes for an error message: bytes outside printable ASCII as \xHH (messages
// may become RESP error lines, which must not hold CR/LF), cut after 64 bytes.
std::string QuoteForMessage(std::string_view s);

// `name arg...`: the config-file line setting the option to its value in `cfg` (byte counts with
// units, arguments quoted as SplitArgs reads them back).
std::string ConfigLine(const Option& opt, const ServerConfig& cfg);
// The line at the option's default (ServerConfig{}'s value), as conf/larder.conf has it.
std::string DefaultLine(const Option& opt);

// The option's value as CONFIG GET prints it: arguments joined by single spaces.
std::string FormatValue(const Option& opt, const ServerConfig& cfg);

}  // namespace larder::config
