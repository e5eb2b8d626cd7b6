// testing::SetSyncPoint / SyncPoint (sync_point.h).
#include <atomic>
#include <map>
#include <mutex>

#include "sync_point.h"

namespace larder::testing {

namespace {

std::atomic<bool> g_any{false};  // whether any point is set: the common case costs one load
std::mutex g_mu;
std::map<std::string, std::function<void(void*)>, std::less<>>& Points() {
  static auto* points = new std::map<std::string, std::function<void(void*)>, std::less<>>;
  return *points;
}

}  // namespace

void SetSyncPoint(const std::string& name, std::function<void(void*)> fn) {
  std::lock_guard lock(g_mu);
  if (fn) {
    Points()[name] = std::move(fn);
  } else {
    Points().erase(name);
  }
  g_any.store(!Points().empty(), std::memory_order_relaxed);
}

void SetSyncPoint(const std::string& name, std::function<void()> fn) {
  SetSyncPoint(name, fn ? std::function<void(void*)>([fn = std::move(fn)](void*) { fn(); })
                        : std::function<void(void*)>());
}

void SetSyncPoint(const std::string& name, std::nullptr_t) {
  SetSyncPoint(name, std::function<void(void*)>());
}

void SyncPoint(const char* name, void* arg) {
  if (!g_any.load(std::memory_order_relaxed)) return;
  std::function<void(void*)> fn;
  {
    std::lock_guard lock(g_mu);
    auto it = Points().find(std::string_view(name));
    if (it == Points().end()) return;
    fn = it->second;
  }
  fn(arg);  // unlocked: it may run engine code that reaches another point
}

}  // namespace larder::testing
