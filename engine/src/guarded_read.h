// Reading mapped file pages without risking the process: a page that cannot be read (an I/O
// error after the page left the page cache) raises SIGBUS on access. These functions read
// mapped bytes with a SIGBUS handler armed for this thread only, which turns the fault into an
// error status instead of a crash. Other threads' SIGBUS keep their previous disposition.
#pragma once

#include <cstddef>
#include <string>

#include "format.h"
#include "larder/status.h"

namespace larder {

// Adds mapped bytes p[0..n) to `stream` (stream->Update(p, n)). False (and *s an IOError
// naming `what`) on a SIGBUS, after which the stream's digest is meaningless.
bool GuardedUpdate(format::ChecksumStream* stream, const char* p, size_t n, Status* s,
                   const std::string& what);
// Copies mapped bytes p[0..n) into dst and adds the copy to `stream`, a piece at a time, each
// piece hashed while it is still in the CPU's cache. The copy is what is hashed, so what the
// caller gets is what the checksum covers even if the mapped bytes change meanwhile. False
// (and *s an IOError) on a SIGBUS, after which dst and the stream's digest are meaningless.
bool GuardedCopyAndUpdate(format::ChecksumStream* stream, char* dst, const char* p, size_t n,
                          Status* s, const std::string& what);

}  // namespace larder
