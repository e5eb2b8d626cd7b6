#include "larder/options.h"

namespace larder {

const char* EvictionPolicyName(EvictionPolicy p) {
  switch (p) {
    case EvictionPolicy::kLruReuse:
      return "lru-reuse";
    case EvictionPolicy::kLru:
      return "lru";
    case EvictionPolicy::kFifo:
      return "fifo";
    case EvictionPolicy::kNone:
      return "none";
  }
  return "unknown";
}

bool ParseEvictionPolicy(const std::string& name, EvictionPolicy* out) {
  for (auto p : {EvictionPolicy::kLruReuse, EvictionPolicy::kLru, EvictionPolicy::kFifo,
                 EvictionPolicy::kNone}) {
    if (name == EvictionPolicyName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

}  // namespace larder
