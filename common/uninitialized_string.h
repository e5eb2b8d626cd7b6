// Resizing a std::string without writing the bytes it gains: for buffers that a read() or
// recv() fills next, where std::string::resize's zero-fill would be a second pass over memory
// the receive copies into anyway (for a 4 MiB SET, as much CPU as the receive itself).
#pragma once

#include <cstddef>
#include <string>

namespace larder::common {

// Sets s->size() to n. Bytes [0, min(old size, n)) keep their values; bytes past the old size
// are left unwritten: their values are unspecified until the caller writes them, and the caller
// must write them before anything reads them. Growing past capacity() reallocates as resize()
// does (a caller that wants an exact capacity reserves it first).
//
// Where the standard library offers C++23's resize_and_overwrite, that is what runs (this one
// file is compiled as C++23 for it); elsewhere it falls back to resize(), which zero-fills.
void ResizeUninitialized(std::string* s, size_t n);

// Whether ResizeUninitialized skips the fill with this build's standard library.
extern const bool kResizeSkipsFill;

}  // namespace larder::common
