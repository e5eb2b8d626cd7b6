// Clock: the engine's time source, injectable for tests.
#pragma once

#include <cstdint>
#include <memory>

namespace larder {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMs() const = 0;
};

// The wall clock (CLOCK_REALTIME), since expiry times are absolute Unix times (EXPIREAT).
std::shared_ptr<Clock> SystemClock();

}  // namespace larder
