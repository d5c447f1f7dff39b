#include "tests/support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <stdexcept>
#include <thread>

namespace vto::testing {

CommandResult runShell(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen(("exec 2>&1; " + command).c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> chunk;
  size_t n;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0) result.output.append(chunk.data(), n);
  int status = ::pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.exitCode = WEXITSTATUS(status);
  return result;
}

Subprocess::Subprocess(std::vector<std::string> argv, const std::string& stderrPath) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  int errFd = -1;
  if (!stderrPath.empty()) {
    errFd = ::open(stderrPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (errFd < 0) throw std::runtime_error("cannot open " + stderrPath);
  }
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    ::setpgid(0, 0);
    ::dup2(fds[1], STDOUT_FILENO);
    if (errFd >= 0) ::dup2(errFd, STDERR_FILENO);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execvp(cargv[0], cargv.data());
    std::perror(("exec " + argv[0]).c_str());
    ::_exit(127);
  }
  ::setpgid(pid_, pid_);  // also from the parent, so a signal sent at once reaches the group
  ::close(fds[1]);
  if (errFd >= 0) ::close(errFd);
  stdoutFd_ = fds[0];
}

Subprocess::~Subprocess() {
  if (running()) stop(std::chrono::seconds(10));
  if (stdoutFd_ >= 0) ::close(stdoutFd_);
}

std::optional<std::string> Subprocess::readLine(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || stdoutFd_ < 0) return std::nullopt;
    pollfd p{stdoutFd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char chunk[4096];
    ssize_t n = ::read(stdoutFd_, chunk, sizeof chunk);
    if (n <= 0) {
      ::close(stdoutFd_);
      stdoutFd_ = -1;
      if (buffer_.empty()) return std::nullopt;
      std::string rest;
      rest.swap(buffer_);
      return rest;
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void Subprocess::signal(int sig) {
  if (pid_ > 0 && !exitCode_) ::kill(-pid_, sig);
}

std::optional<int> Subprocess::wait(std::chrono::milliseconds timeout) {
  if (exitCode_) return exitCode_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exitCode_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exitCode_;
    }
    if (r < 0) return exitCode_ = -1;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    // Polling a child's exit: waitpid has no timeout, and 20 ms is far below any deadline used here.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int Subprocess::stop(std::chrono::milliseconds grace) {
  signal(SIGTERM);
  if (auto code = wait(grace)) {
    signal(SIGKILL);  // anything left in the group
    return *code;
  }
  signal(SIGKILL);
  return wait(std::chrono::seconds(10)).value_or(-1);
}

bool Subprocess::running() { return pid_ > 0 && !wait(std::chrono::milliseconds(0)); }

}  // namespace vto::testing
