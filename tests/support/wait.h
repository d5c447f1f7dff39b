#pragma once
// Waiting on a condition with a deadline: the only way tests here synchronise with real processes.
#include <chrono>
#include <functional>
#include <thread>

namespace vto::testing {

// Polls `condition` until it holds or `timeout` passes; returns whether it held.
inline bool waitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                    std::chrono::milliseconds interval = std::chrono::milliseconds(100)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace vto::testing
