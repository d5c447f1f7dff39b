#pragma once
// SIGTERM/SIGINT as a stop token, as controller-runtime's SetupSignalHandler: the first signal asks
// for a graceful stop (drain reconciles, release the lease); a second one exits at once.
#include <stop_token>

namespace vto::controller {

class ShutdownSignals {
 public:
  // Construct first thing in main(), before any other thread starts: it blocks the signals in the
  // calling thread, and threads started later inherit that, so only the watcher receives them.
  ShutdownSignals();
  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  std::stop_token token() const { return stop_.get_token(); }

 private:
  std::stop_source stop_;
};

}  // namespace vto::controller
