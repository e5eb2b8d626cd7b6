#include "commands/command_table.h"

#include <algorithm>
#include <unordered_map>

#include "commands/families.h"
#include "common/text.h"

namespace larder::server {

namespace {

constexpr CommandFamily (*kFamilies[])() = {
    ConnectionCommands, ClientCommands,   StringCommands,        KeyCommands,
    ServerCommands,     InfoCommands,     IntrospectionCommands, TransactionCommands,
    LarderCommands,     PubSubCommands,   DiagnosticsCommands,   MigrationCommands,
    ClusterCommands,    ClusterXCommands, BitCommands,
};

// Keys have flags of known words, each key (the first one's and the others'), and no keys none.
std::optional<std::string> CheckKeyFlags(const KeySpec& k) {
  if ((k.first != 0) == k.flags.empty()) return "keys without key flags, or flags without keys";
  if (k.first == 0) return std::nullopt;
  for (bool first : {true, false}) {
    const std::vector<std::string_view> words = KeyFlagWords(k, first);
    if (words.empty()) return "a key without key flags";
    for (std::string_view w : words) {
      if (std::find(std::begin(kKeyFlagWords), std::end(kKeyFlagWords), w) ==
          std::end(kKeyFlagWords)) {
        return "unknown key flag '" + std::string(w) + "'";
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> CheckRow(const CommandRow& row) {
  if (row.name.empty() || common::ToLower(row.name) != row.name) return "name not lowercase";
  if (row.handler == nullptr) return "no handler";
  if (row.arity == 0) return "arity 0";
  const KeySpec& k = row.keys;
  if (k.first == 0 && (k.last != 0 || k.step != 0)) return "keys without a first key";
  if (k.first != 0 && (k.step <= 0 || (k.last >= 0 && k.last < k.first))) {
    return "bad key positions";
  }
  return CheckKeyFlags(k);
}

struct BuiltTable {
  std::vector<CommandSpec> specs;
  std::optional<std::string> error;
  std::unordered_map<std::string, const CommandSpec*> by_name;
};

const BuiltTable& Built() {
  static const BuiltTable table = [] {
    BuiltTable t;
    std::vector<CommandFamily> families;
    for (auto family : kFamilies) families.push_back(family());
    t.error = BuildCommandTable(families, &t.specs);
    if (t.error) t.specs.clear();
    for (const CommandSpec& spec : t.specs) t.by_name.emplace(std::string(spec.name), &spec);
    return t;
  }();
  return table;
}

}  // namespace

std::optional<std::string> ParseFlagWords(std::string_view words, uint32_t* flags) {
  *flags = 0;
  while (!words.empty()) {
    size_t end = words.find(' ');
    std::string_view word = words.substr(0, end);
    words = end == std::string_view::npos ? std::string_view() : words.substr(end + 1);
    if (word.empty()) continue;
    bool known = false;
    for (const FlagWord& f : kFlagWords) {
      if (f.word == word) {
        *flags |= f.flag;
        known = true;
      }
    }
    if (!known) return "unknown flag '" + std::string(word) + "'";
  }
  return std::nullopt;
}

std::optional<std::string> BuildCommandTable(std::span<const CommandFamily> families,
                                             std::vector<CommandSpec>* out) {
  out->clear();
  std::unordered_map<std::string_view, bool> seen;
  for (const CommandFamily& family : families) {
    for (const CommandRow& row : family) {
      auto fail = [&](const std::string& why) {
        return "command '" + std::string(row.name) + "': " + why;
      };
      uint32_t flags = 0;
      if (auto err = ParseFlagWords(row.flags, &flags)) return fail(*err);
      if (auto err = CheckRow(row)) return fail(*err);
      if ((flags & kFast) && (flags & kExclusive)) return fail("both fast and exclusive");
      if (row.before_lock && !(flags & kExclusive)) return fail("before_lock without exclusive");
      if (!seen.emplace(row.name, true).second) return fail("declared twice");
      out->push_back({static_cast<uint32_t>(out->size()), row.name, row.arity, flags, row.keys,
                      row.handler, row.subcommands, row.before_lock});
    }
  }
  return std::nullopt;
}

std::optional<std::string> CommandTableError() {
  return Built().error;
}

const std::vector<CommandSpec>& CommandTable() {
  return Built().specs;
}

const CommandSpec* FindCommand(std::string_view name) {
  constexpr size_t kLongestName = 32;
  if (name.empty() || name.size() > kLongestName) return nullptr;
  const auto& by_name = Built().by_name;
  auto it = by_name.find(common::ToLower(name));
  return it == by_name.end() ? nullptr : it->second;
}

}  // namespace larder::server
