#include "guarded_read.h"

#include <algorithm>
#include <csetjmp>
#include <csignal>
#include <cstring>
#include <mutex>

#include "format.h"

namespace larder {

namespace {

thread_local sigjmp_buf* t_guard = nullptr;
struct sigaction g_previous;

void OnSigbus(int sig, siginfo_t* info, void* ctx) {
  if (sigjmp_buf* g = t_guard) {
    t_guard = nullptr;
    siglongjmp(*g, 1);
  }
  // Not ours: what was there before decides.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) return g_previous.sa_sigaction(sig, info, ctx);
  } else if (g_previous.sa_handler != SIG_IGN && g_previous.sa_handler != SIG_DFL) {
    return g_previous.sa_handler(sig);
  }
  std::signal(SIGBUS, SIG_DFL);
  std::raise(SIGBUS);
}

void InstallOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = &OnSigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
  });
}

}  // namespace

namespace {

// Runs fn() with this thread's SIGBUS turned into an IOError in *s; false if it was.
template <typename Fn>
bool Guarded(Fn&& fn, Status* s, const std::string& what) {
  InstallOnce();
  sigjmp_buf jb;
  if (sigsetjmp(jb, 1) != 0) {
    *s = Status::IOError("reading " + what + ": a page could not be read (SIGBUS)");
    return false;
  }
  t_guard = &jb;
  fn();
  t_guard = nullptr;
  return true;
}

}  // namespace

bool GuardedUpdate(format::ChecksumStream* stream, const char* p, size_t n, Status* s,
                   const std::string& what) {
  return Guarded([&] { stream->Update(p, n); }, s, what);
}

bool GuardedCopyAndUpdate(format::ChecksumStream* stream, char* dst, const char* p, size_t n,
                          Status* s, const std::string& what) {
  constexpr size_t kPiece = 16 * 1024;  // half of a small L1 data cache
  return Guarded(
      [&] {
        for (size_t done = 0; done < n; done += kPiece) {
          const size_t k = std::min(kPiece, n - done);
          std::memcpy(dst + done, p + done, k);
          stream->Update(dst + done, k);
        }
      },
      s, what);
}

}  // namespace larder
