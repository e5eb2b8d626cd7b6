// The command table: every family's rows (families.h), built once into CommandSpecs. Dispatch
// uses it for lookup, arity, auth and routing; COMMAND reports it.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "commands/command_spec.h"

namespace larder::server {

using CommandFamily = std::span<const CommandRow>;

// Parses space-separated flag words (kFlagWords) into *flags; the error names the first
// unknown word.
std::optional<std::string> ParseFlagWords(std::string_view words, uint32_t* flags);

// Builds specs from the rows of `families`, in order, checking every row: known flag words,
// a unique lowercase name, a handler, a non-zero arity, consistent key positions, not both
// `fast` and `exclusive`. The error names the command.
std::optional<std::string> BuildCommandTable(std::span<const CommandFamily> families,
                                             std::vector<CommandSpec>* out);

// Why the server's own table does not build, or nullopt. main.cc refuses to start on an
// error, so the functions below only ever see a good table.
std::optional<std::string> CommandTableError();

// Every command, in family order (empty if CommandTableError()).
const std::vector<CommandSpec>& CommandTable();

// Case-insensitive lookup; nullptr if unknown.
const CommandSpec* FindCommand(std::string_view name);

}  // namespace larder::server
