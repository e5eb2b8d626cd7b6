#!/usr/bin/env bash
# The hand-off experiment behind bench/ANALYSIS.md §2: what waking another thread costs on this
# machine. Two threads pass a turn back and forth through a mutex and a condition variable (as a
# connection's io thread hands a cold GET to an engine thread, and the reply wakes the client),
# with a pause every 100 round trips so the CPUs go idle as they do between requests; prints the
# round trip's percentiles (two wake-ups each), first free to run on any CPU, then both threads
# pinned to CPU 0. On a VM whose idle vCPUs halt, a wake-up on another CPU waits for the host to
# run that vCPU again. Needs g++ (scripts/deps); takes a few seconds.
#   bench/analysis/wake_latency.sh
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/wake.cc" <<'CC'
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

int main() {
  std::mutex mu;
  std::condition_variable cv;
  int turn = 0;
  constexpr int kTrips = 20000;
  std::thread other([&] {
    for (int i = 0; i < kTrips; i++) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return turn == 1; });
      turn = 0;
      cv.notify_all();
    }
  });
  std::vector<double> us;
  us.reserve(kTrips);
  for (int i = 0; i < kTrips; i++) {
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::unique_lock lock(mu);
      turn = 1;
      cv.notify_all();
      cv.wait(lock, [&] { return turn == 0; });
    }
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                     .count());
    if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  other.join();
  std::sort(us.begin(), us.end());
  std::printf("p10 %.1f  p50 %.1f  p90 %.1f  p99 %.1f\n", us[kTrips / 10], us[kTrips / 2],
              us[kTrips * 9 / 10], us[kTrips * 99 / 100]);
}
CC
g++ -std=c++20 -O2 -pthread -o "$work/wake" "$work/wake.cc"
echo "round trip, two wake-ups, microseconds"
echo -n "  any CPU:   "; "$work/wake"
echo -n "  one CPU:   "; taskset -c 0 "$work/wake"
