// ClientRegistry: the connected clients as the commands see them (CLIENT LIST/KILL, INFO
// clients). Implemented by the network layer (net/server.h).
#pragma once

#include <cstddef>
#include <functional>

#include "core/client_state.h"

namespace larder::server {

class ClientRegistry {
 public:
  virtual ~ClientRegistry() = default;
  virtual size_t Count() const = 0;
  // Calls fn for every connected client (registry locked meanwhile; fn must not block).
  virtual void ForEach(const std::function<void(const ClientState&)>& fn) const = 0;
  // Closes the clients for which match returns true (after their current command); returns
  // how many.
  virtual size_t Kill(const std::function<bool(const ClientState&)>& match) = 0;
};

}  // namespace larder::server
