// Looking ahead in a pipeline without consuming it: the keys that the GET and MGET commands at
// its head will read, so that the server can start all of their disk reads at once
// (Store::Prefetch) and still execute and reply to the commands one by one, in order.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace larder::resp {

// Appends to *keys the keys of the complete GET/MGET requests (RESP multibulk, command name in
// any case) at the start of data[0..len), stopping at the first request of another kind, an
// incomplete or malformed one (the real parser reports those), or once *keys holds `max_keys`.
// The views point into `data`. Returns the number of bytes of the requests whose keys it took.
size_t PeekReadKeys(const char* data, size_t len, size_t max_keys,
                    std::vector<std::string_view>* keys);

}  // namespace larder::resp
