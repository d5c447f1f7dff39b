#pragma once
// Raw HTTP over loopback sockets for tests that must misbehave as an attacker would: idle
// connections, oversized headers, a huge body streamed until the server answers. Plus the
// process's resident memory, to show that a server did not buffer what it was sent.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <string>

namespace vto::testing {

// A connected TCP socket to 127.0.0.1:port (closed on destruction), or fd -1.
class LoopbackConnection {
 public:
  explicit LoopbackConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~LoopbackConnection() {
    if (fd_ >= 0) ::close(fd_);
  }
  LoopbackConnection(const LoopbackConnection&) = delete;
  LoopbackConnection& operator=(const LoopbackConnection&) = delete;
  int fd() const { return fd_; }

  bool send(const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      auto n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }

  bool readable(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
  }

  // Everything the server sends until it closes or `timeout` passes.
  std::string readResponse(std::chrono::milliseconds timeout) {
    std::string out;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !readable(left)) return out;
      char chunk[4096];
      auto n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n <= 0) return out;
      out.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
};

// "HTTP/1.1 413 ..." -> 413; 0 when there is no status line.
inline int statusCodeOf(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  try {
    return std::stoi(response.substr(9, 3));
  } catch (const std::exception&) {
    return 0;
  }
}

// One request on a fresh connection; the status code, or 0 when none came within `timeout`.
inline int requestStatus(int port, const std::string& request, std::chrono::milliseconds timeout) {
  LoopbackConnection connection(port);
  if (connection.fd() < 0 || !connection.send(request)) return 0;
  return statusCodeOf(connection.readResponse(timeout));
}

struct FloodResult {
  int status = 0;         // what the server answered (0: nothing)
  size_t bodyBytesSent = 0;
};

// Sends `method path` announcing a `bodyBytes` body and streams it in 1 MiB chunks, stopping as
// soon as the server answers (or refuses more data); then reads the answer.
inline FloodResult floodBody(int port, const std::string& method, const std::string& path, size_t bodyBytes,
                             std::chrono::milliseconds timeout) {
  FloodResult result;
  LoopbackConnection connection(port);
  if (connection.fd() < 0) return result;
  connection.send(method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\n"
                  "Content-Length: " + std::to_string(bodyBytes) + "\r\n\r\n");
  const std::string chunk(1024 * 1024, 'x');
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (result.bodyBytesSent < bodyBytes && std::chrono::steady_clock::now() < deadline) {
    if (connection.readable(std::chrono::milliseconds(0))) break;
    if (!connection.send(chunk)) break;
    result.bodyBytesSent += chunk.size();
  }
  result.status = statusCodeOf(connection.readResponse(std::chrono::seconds(5)));
  return result;
}

// The resident set size of this process (VmRSS), in bytes.
inline size_t residentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
  }
  return 0;
}

}  // namespace vto::testing
