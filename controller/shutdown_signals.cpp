#include "controller/shutdown_signals.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <thread>

namespace vto::controller {

ShutdownSignals::ShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Detached: it lives as long as the process, waiting for a signal that may never come.
  std::thread([signals, stop = stop_] () mutable {
    int received = 0;
    sigwait(&signals, &received);
    spdlog::info("received signal {}: stopping gracefully (send it again to exit at once)", received);
    stop.request_stop();
    sigwait(&signals, &received);
    std::_Exit(1);
  }).detach();
}

}  // namespace vto::controller
