// The engine part of the server configuration: how ServerConfig maps onto larder::Options.
#pragma once

#include <string>

#include "config/server_config.h"
#include "larder/options.h"

namespace larder::config {

// larder::Options for a server running with `cfg`. Every engine option the server exposes is
// set from its server option, whose default is the engine's default (config_test checks it)
// unless server_config.h says why it differs; the rest keep the engine's defaults.
larder::Options EngineOptions(const ServerConfig& cfg);

// `engine_message` (a larder::Status message, which names Options fields) with each field
// that EngineOptions sets from a server option named as that option ("max_key_bytes" becomes
// "max-key-bytes"), for replies and the log.
std::string InOptionTerms(std::string engine_message);

}  // namespace larder::config
