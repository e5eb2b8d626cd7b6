// What COMMAND GETKEYSANDFLAGS needs to know of a BITFIELD call (bit_cmds.cc).
#pragma once

#include <span>
#include <string>

namespace larder::server {

// Whether BITFIELD `call` (the name at 0, the key at 1) writes its key: a SET or an INCRBY
// among its operations, or arguments Redis's bitfieldGetKeys cannot read (it then assumes a
// write). GETKEYSANDFLAGS gives its key "RW access update" then, else "RO access".
bool BitFieldWrites(std::span<const std::string> call);

}  // namespace larder::server
