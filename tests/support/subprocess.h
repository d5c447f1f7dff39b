#pragma once
// Child processes for tests: start, read output with a deadline, signal, reap. Each child leads its
// own process group so that stopping it also stops whatever it started.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace vto::testing {

struct CommandResult {
  int exitCode = -1;   // -1 when the command could not run or was killed by a signal
  std::string output;  // stdout and stderr, interleaved
};

// Runs a shell command to completion and captures its combined output.
CommandResult runShell(const std::string& command);

class Subprocess {
 public:
  // argv[0] is looked up on PATH. stdout is a pipe readable with readLine(); stderr goes to
  // stderrPath (appended), or is inherited when it is empty.
  Subprocess(std::vector<std::string> argv, const std::string& stderrPath = "");
  ~Subprocess();  // stops the child if it still runs
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // The next line of stdout, or nullopt at end of output or when the deadline passes.
  std::optional<std::string> readLine(std::chrono::milliseconds timeout);
  void signal(int sig);  // to the whole process group
  // Waits for exit; returns the exit code (128+signal for a signalled child), or nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout);
  // SIGTERM, then SIGKILL after the grace period; returns the exit code.
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(30));
  bool running();

 private:
  pid_t pid_ = -1;
  int stdoutFd_ = -1;
  std::string buffer_;
  std::optional<int> exitCode_;
};

}  // namespace vto::testing
