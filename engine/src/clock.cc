#include "larder/clock.h"

#include <chrono>

namespace larder {
namespace {

class WallClock final : public Clock {
 public:
  int64_t NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

}  // namespace

std::shared_ptr<Clock> SystemClock() {
  static const std::shared_ptr<Clock> clock = std::make_shared<WallClock>();
  return clock;
}

}  // namespace larder
