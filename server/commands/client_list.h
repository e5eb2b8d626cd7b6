// CLIENT LIST / CLIENT INFO line of one client, in Redis's format.
#pragma once

#include <string>

#include "commands/context.h"

namespace larder::server {

// "id=3 addr=... laddr=... fd=8 name=... age=0 idle=0 flags=N db=0 ... resp=2 lib-name=...\n"
std::string ClientInfoLine(const ClientState& c, int64_t now_ms);

}  // namespace larder::server
