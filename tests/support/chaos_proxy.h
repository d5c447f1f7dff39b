#pragma once
// vto_test_tcp_proxy (tests/support/tcp_proxy.cpp) as a test drives it: started in front of one
// address, then told how to fail (silent, refuse, reset, slow) and to heal; each call returns once
// the proxy says the change holds.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "tests/support/subprocess.h"

namespace vto::testing {

class ChaosProxy {
 public:
  ChaosProxy(const std::string& host, const std::string& port)
      : process_({(std::filesystem::read_symlink("/proc/self/exe").parent_path() / "vto_test_tcp_proxy").string(), host,
                  port}) {
    port_ = awaitLine("listening ").substr(10);
  }
  ~ChaosProxy() { process_.stop(std::chrono::seconds(5)); }

  std::string hostPort() const { return "127.0.0.1:" + port_; }
  // Connections held open, nothing forwarded, new ones accepted and held.
  void silent() { change(SIGUSR1, "partitioned"); }
  // Connections refused (nothing listens), open ones reset.
  void refuse() { change(SIGRTMIN, "refusing"); }
  // Every connection reset, open or new.
  void reset() { change(SIGRTMIN + 1, "resetting"); }
  // A trickle: 256 bytes every 50 ms per connection.
  void slow() { change(SIGRTMIN + 2, "slow"); }
  void heal() { change(SIGUSR2, "healed"); }
  // Healed for new connections; those the silence held stay silent for good (a failover that forgot them).
  void healForgettingHeldConnections() { change(SIGRTMIN + 3, "healed"); }

 private:
  void change(int signal, const std::string& confirmation) {
    process_.signal(signal);
    awaitLine(confirmation);
  }
  std::string awaitLine(const std::string& prefix) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      auto line = process_.readLine(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
      if (!line) break;
      if (line->rfind(prefix, 0) == 0) return *line;
    }
    throw std::runtime_error("vto_test_tcp_proxy never said \"" + prefix + "\"");
  }

  Subprocess process_;
  std::string port_;
};

}  // namespace vto::testing
