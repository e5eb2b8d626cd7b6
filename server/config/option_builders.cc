// The option builders declared in option_builders.h.
#include "config/option_builders.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "common/args.h"
#include "common/text.h"
#include "common/units.h"

namespace larder::config::builder {
namespace {

using Args = std::vector<std::string>;
using common::EqualsNoCase;
using common::FormatBytesHuman;
using common::ParseBytes;
using common::ParseNumber;

// Shortest text that parses back to exactly `v`.
std::string FormatDouble(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string RangeText(int64_t min, int64_t max) {
  if (max == kNoMax) return " >= " + std::to_string(min);
  return " in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

Option Make(std::string_view name, Type type, bool mut, std::string_view doc, int min_args = 1,
            int max_args = 1) {
  Option o;
  o.name = name;
  o.type = type;
  o.runtime_mutable = mut;
  o.doc = doc;
  o.min_args = min_args;
  o.max_args = max_args;
  return o;
}

// The letters of `notify-keyspace-events`, in the order Redis prints them (notify.c's
// keyspaceEventsFlagsToString): the classes (or A for all of A's), then K, E, m, and Larder's G.
struct NotifyLetter {
  char letter;
  uint32_t bits;
};
constexpr NotifyLetter kNotifyClassLetters[] = {
    {'g', kNotifyGeneric}, {'$', kNotifyString}, {'l', kNotifyList},    {'s', kNotifySet},
    {'h', kNotifyHash},    {'z', kNotifyZset},   {'x', kNotifyExpired}, {'e', kNotifyEvicted},
    {'t', kNotifyStream},  {'d', kNotifyModule}, {'n', kNotifyNew},
};
constexpr NotifyLetter kNotifyOtherLetters[] = {
    {'K', kNotifyKeyspace},   {'E', kNotifyKeyevent}, {'m', kNotifyKeyMiss},
    {'G', kNotifyGeneration}, {'A', kNotifyAll},
};

}  // namespace

Option Bool(std::string_view name, bool ServerConfig::*field, bool mut, std::string_view doc) {
  Option o = Make(name, Type::kBool, mut, doc);
  o.parse = [field](const Args& a, ServerConfig* c) -> Error {
    if (EqualsNoCase(a[0], "yes")) {
      c->*field = true;
    } else if (EqualsNoCase(a[0], "no")) {
      c->*field = false;
    } else {
      return QuoteForMessage(a[0]) + " is not yes or no";
    }
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return {c.*field ? "yes" : "no"}; };
  return o;
}

Option Int(std::string_view name, int64_t ServerConfig::*field, bool mut, int64_t min, int64_t max,
           std::string_view doc) {
  Option o = Make(name, Type::kInteger, mut, doc);
  o.parse = [field, min, max](const Args& a, ServerConfig* c) -> Error {
    // As Redis's string2ll: no leading zeros ("06379" is refused, not read as 6379; "-0" too).
    const std::string_view digits = std::string_view(a[0]).substr(a[0].starts_with('-'));
    const bool leading_zero = digits.starts_with('0') && (digits.size() > 1 || a[0] == "-0");
    auto v = leading_zero ? std::nullopt : ParseNumber<int64_t>(a[0]);
    if (!v || *v < min || *v > max) {
      return QuoteForMessage(a[0]) + " is not an integer" + RangeText(min, max);
    }
    c->*field = *v;
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return {std::to_string(c.*field)}; };
  return o;
}

Option Bytes(std::string_view name, uint64_t ServerConfig::*field, bool mut, int64_t min,
             std::string_view doc) {
  Option o = Make(name, Type::kBytes, mut, doc);
  o.parse = [field, min](const Args& a, ServerConfig* c) -> Error {
    auto v = ParseBytes(a[0]);
    if (!v || *v < static_cast<uint64_t>(min) || *v > static_cast<uint64_t>(kNoMax)) {
      return QuoteForMessage(a[0]) + " is not a byte count" +
             (min > 0 ? RangeText(min, kNoMax) : "") +
             " (integer with optional unit k, kb, m, mb, g, gb)";
    }
    c->*field = *v;
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool human) -> Args {
    return {human ? FormatBytesHuman(c.*field) : std::to_string(c.*field)};
  };
  return o;
}

Option Double(std::string_view name, double ServerConfig::*field, bool mut, double min, double max,
              std::string_view doc) {
  Option o = Make(name, Type::kDouble, mut, doc);
  o.parse = [field, min, max](const Args& a, ServerConfig* c) -> Error {
    auto v = ParseNumber<double>(a[0]);
    if (!v || !std::isfinite(*v) || *v < min || *v > max) {
      return QuoteForMessage(a[0]) + " is not a number in [" + FormatDouble(min) + ", " +
             FormatDouble(max) + "]";
    }
    c->*field = *v + 0.0;  // -0 becomes 0
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return {FormatDouble(c.*field)}; };
  return o;
}

Option Octal(std::string_view name, int64_t ServerConfig::*field, bool mut, int64_t max,
             std::string_view doc) {
  Option o = Make(name, Type::kOctal, mut, doc);
  o.parse = [field, max](const Args& a, ServerConfig* c) -> Error {
    std::string_view s = a[0];
    auto v = s.size() <= 12 ? ParseNumber<int64_t>(s, 8) : std::nullopt;
    if (!v || *v < 0 || *v > max) {
      char buf[24];
      auto r = std::to_chars(buf, buf + sizeof(buf), max, 8);
      return QuoteForMessage(s) + " is not an octal mode in [0, " + std::string(buf, r.ptr) + "]";
    }
    c->*field = *v;
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof(buf), c.*field, 8);
    return {std::string(buf, r.ptr)};
  };
  return o;
}

Option String(std::string_view name, std::string ServerConfig::*field, bool mut,
              std::string_view doc) {
  Option o = Make(name, Type::kString, mut, doc);
  o.parse = [field](const Args& a, ServerConfig* c) -> Error {
    c->*field = a[0];
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return {c.*field}; };
  return o;
}

Option Enum(std::string_view name, std::string ServerConfig::*field, bool mut,
            std::vector<std::string_view> choices, std::string_view doc) {
  Option o = Make(name, Type::kEnum, mut, doc);
  o.parse = [field, choices](const Args& a, ServerConfig* c) -> Error {
    for (std::string_view choice : choices) {
      if (EqualsNoCase(a[0], choice)) {
        c->*field = std::string(choice);
        return std::nullopt;
      }
    }
    std::string list;
    for (std::string_view choice : choices)
      list += (list.empty() ? "" : ", ") + std::string(choice);
    return QuoteForMessage(a[0]) + " is not one of " + list;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return {c.*field}; };
  return o;
}

Option StringList(std::string_view name, std::vector<std::string> ServerConfig::*field, bool mut,
                  std::string_view doc) {
  Option o = Make(name, Type::kStringList, mut, doc, 1, -1);
  o.parse = [field](const Args& a, ServerConfig* c) -> Error {
    c->*field = a;
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args { return c.*field; };
  return o;
}

// Numbers, each within [min, max]; CONFIG SET takes them as one space-separated argument, and
// "" is none (Redis's latency-tracking-info-percentiles).
Option NumberList(std::string_view name, std::vector<double> ServerConfig::*field, bool mut,
                  double min, double max, std::string_view doc) {
  Option o = Make(name, Type::kNumberList, mut, doc, 1, -1);
  o.parse = [field, min, max](const Args& a, ServerConfig* c) -> Error {
    std::vector<double> values;
    for (const std::string& arg : a) {
      auto words = common::SplitArgs(arg);
      if (!words) return QuoteForMessage(arg) + " is not a list of numbers";
      for (const std::string& word : *words) {
        auto v = ParseNumber<double>(word);
        if (!v || !std::isfinite(*v) || *v < min || *v > max) {
          return QuoteForMessage(word) + " is not a number in [" + FormatDouble(min) + ", " +
                 FormatDouble(max) + "]";
        }
        values.push_back(*v + 0.0);
      }
    }
    c->*field = std::move(values);
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args {
    Args out;
    for (double v : c.*field) out.push_back(FormatDouble(v));
    return out.empty() ? Args{""} : out;
  };
  return o;
}

// Redis syntax: one or more `<class> <hard> <soft> <soft-seconds>` groups. Larder has no
// replicas, so groups for that class are checked and then ignored.
Option OutputBufferLimit(std::string_view name, bool mut, std::string_view doc) {
  Option o = Make(name, Type::kClientOutputBufferLimit, mut, doc, 4, -1);
  o.parse = [](const Args& a, ServerConfig* c) -> Error {
    if (a.size() % 4 != 0) {
      return std::string("expected groups of <class> <hard-bytes> <soft-bytes> <soft-seconds>");
    }
    for (size_t i = 0; i < a.size(); i += 4) {
      std::string cls = common::ToLower(a[i]);
      if (cls != "normal" && cls != "replica" && cls != "slave" && cls != "pubsub") {
        return QuoteForMessage(a[i]) + " is not a client class (normal, replica, pubsub)";
      }
      auto hard = ParseBytes(a[i + 1]);
      auto soft = ParseBytes(a[i + 2]);
      auto secs = ParseNumber<int64_t>(a[i + 3]);
      if (!hard) return QuoteForMessage(a[i + 1]) + " is not a byte count";
      if (!soft) return QuoteForMessage(a[i + 2]) + " is not a byte count";
      if (!secs || *secs < 0) return QuoteForMessage(a[i + 3]) + " is not an integer >= 0";
      if (cls == "normal") c->client_output_buffer_limit = {*hard, *soft, *secs};
      if (cls == "pubsub") c->client_output_buffer_limit_pubsub = {*hard, *soft, *secs};
    }
    return std::nullopt;
  };
  o.format = [](const ServerConfig& c, bool human) -> Args {
    auto bytes = [human](uint64_t v) { return human ? FormatBytesHuman(v) : std::to_string(v); };
    Args out;
    for (const auto& [cls, l] : {std::pair{"normal", c.client_output_buffer_limit},
                                 std::pair{"pubsub", c.client_output_buffer_limit_pubsub}}) {
      Args group = {cls, bytes(l.hard_bytes), bytes(l.soft_bytes), std::to_string(l.soft_seconds)};
      out.insert(out.end(), group.begin(), group.end());
    }
    return out;
  };
  return o;
}

// Redis's syntax: a string of class letters, "" for none; any other character is refused with
// Redis's message (G added to its list).
Option KeyspaceEvents(std::string_view name, uint32_t ServerConfig::*field, bool mut,
                      std::string_view doc) {
  Option o = Make(name, Type::kString, mut, doc);
  o.parse = [field](const Args& a, ServerConfig* c) -> Error {
    uint32_t bits = 0;
    for (char ch : a[0]) {
      uint32_t found = 0;
      for (const NotifyLetter& l : kNotifyClassLetters) found |= l.letter == ch ? l.bits : 0;
      for (const NotifyLetter& l : kNotifyOtherLetters) found |= l.letter == ch ? l.bits : 0;
      if (found == 0) {
        return std::string("Invalid event class character. Use 'Ag$lshzxeKEtmdnG'.");
      }
      bits |= found;
    }
    c->*field = bits;
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args {
    const uint32_t bits = c.*field;
    std::string out;
    if ((bits & kNotifyAll) == kNotifyAll) {
      out += 'A';  // and, as in Redis, no 'n' (which Larder never sends anyway)
    } else {
      for (const NotifyLetter& l : kNotifyClassLetters) out += (bits & l.bits) ? l.letter : '\0';
      std::erase(out, '\0');
    }
    for (const NotifyLetter& l : kNotifyOtherLetters) {
      if (l.bits != kNotifyAll && (bits & l.bits)) out += l.letter;
    }
    return {out};
  };
  return o;
}

// Pairs of key suffixes, `<first> <second> ...`; a single "" means none.
Option SuffixPairs(std::string_view name,
                   std::vector<std::pair<std::string, std::string>> ServerConfig::*field, bool mut,
                   std::string_view doc) {
  Option o = Make(name, Type::kSuffixPairs, mut, doc, 1, -1);
  o.parse = [field](const Args& a, ServerConfig* c) -> Error {
    (c->*field).clear();
    if (a.size() == 1 && a[0].empty()) return std::nullopt;
    if (a.size() % 2 != 0) return std::string("expected pairs of key suffixes, or \"\" for none");
    for (size_t i = 0; i < a.size(); i += 2) {
      if (a[i].empty() || a[i + 1].empty() || a[i] == a[i + 1]) {
        return QuoteForMessage(a[i]) + " " + QuoteForMessage(a[i + 1]) +
               " is not a pair of two different, non-empty suffixes";
      }
      (c->*field).emplace_back(a[i], a[i + 1]);
    }
    return std::nullopt;
  };
  o.format = [field](const ServerConfig& c, bool) -> Args {
    Args out;
    for (const auto& [first, second] : c.*field) {
      out.push_back(first);
      out.push_back(second);
    }
    return out.empty() ? Args{""} : out;
  };
  return o;
}

Option WithCheck(Option o, std::function<Error(const ServerConfig&)> check) {
  o.validate = std::move(check);
  return o;
}

Option Sensitive(Option o) {
  o.sensitive = true;
  return o;
}

Option RereadsFiles(Option o) {
  o.rereads_files = true;
  return o;
}

}  // namespace larder::config::builder
