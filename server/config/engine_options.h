// The engine part of the server configuration: how ServerConfig maps onto larder::Options.
#pragma once

#include "config/server_config.h"
#include "larder/options.h"

namespace larder::config {

// larder::Options for a server running with `cfg`. Every engine option the server exposes is
// set from its server option, whose default is the engine's default (config_test checks it)
// unless server_config.h says why it differs; the rest keep the engine's defaults.
larder::Options EngineOptions(const ServerConfig& cfg);

}  // namespace larder::config
