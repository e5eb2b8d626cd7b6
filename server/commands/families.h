// Every command family's rows, each declared beside its handlers in the named file. A new
// command is one row in its family's array; a new family is one function here and one entry
// in command_table.cc's kFamilies.
#pragma once

#include <span>

#include "commands/command_spec.h"

namespace larder::server {

std::span<const CommandRow> ConnectionCommands();     // connection_cmds.cc
std::span<const CommandRow> ClientCommands();         // client_cmds.cc
std::span<const CommandRow> StringCommands();         // string_cmds.cc
std::span<const CommandRow> BitCommands();            // bit_cmds.cc
std::span<const CommandRow> KeyCommands();            // key_cmds.cc
std::span<const CommandRow> ServerCommands();         // server_cmds.cc
std::span<const CommandRow> InfoCommands();           // info_cmds.cc
std::span<const CommandRow> IntrospectionCommands();  // command_cmds.cc
std::span<const CommandRow> TransactionCommands();    // transaction_cmds.cc
std::span<const CommandRow> LarderCommands();         // larder_cmds.cc
std::span<const CommandRow> PubSubCommands();         // pubsub_cmds.cc
std::span<const CommandRow> DiagnosticsCommands();    // diagnostics_cmds.cc
std::span<const CommandRow> MigrationCommands();      // migration_cmds.cc
std::span<const CommandRow> ClusterCommands();        // cluster_cmds.cc
std::span<const CommandRow> ClusterXCommands();       // clusterx_cmds.cc

}  // namespace larder::server
