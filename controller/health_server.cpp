#include "controller/health_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <thread>

namespace vto::controller {

struct HealthServer::Impl {
  HealthServerLimits limits;
  int listenFd = -1;
  int wakeRead = -1, wakeWrite = -1;  // a pipe that ends the accept loop
  int port = 0;
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<int> pending;
  bool stopping = false;
  std::thread acceptor;
  std::vector<std::thread> workers;
};

namespace {

using Clock = std::chrono::steady_clock;

// ":8081" listens everywhere, "127.0.0.1:8081" on loopback only, "[::1]:8081" on IPv6 loopback.
std::pair<std::string, std::string> splitHostPort(const std::string& bindAddress) {
  auto colon = bindAddress.rfind(':');
  if (colon == std::string::npos) {
    throw std::invalid_argument("health probe address '" + bindAddress + "' must be host:port, e.g. 127.0.0.1:8081");
  }
  std::string host = bindAddress.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, bindAddress.substr(colon + 1)};
}

int listenOn(const std::string& bindAddress, int& boundPort) {
  auto [host, port] = splitHostPort(bindAddress);
  addrinfo hints{};
  hints.ai_family = host.empty() ? AF_INET : AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    throw std::runtime_error(std::string("cannot resolve: ") + ::gai_strerror(rc));
  }
  int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, 0);
  int on = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  bool ok = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, 64) == 0;
  ::freeaddrinfo(found);
  if (!ok) {
    std::string error = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(error);
  }
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  boundPort = ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                                                  : reinterpret_cast<sockaddr_in*>(&address)->sin_port);
  return fd;
}

void sendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    auto n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the client went away: nothing to tell it
    sent += static_cast<size_t>(n);
  }
}

void reply(int fd, int code, const char* reason, const std::string& body, bool head = false,
           const std::string& extraHeaders = "") {
  std::string response = "HTTP/1.1 " + std::to_string(code) + " " + reason +
                         "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\nConnection: close\r\n" + extraHeaders + "\r\n";
  if (!head) response += body;
  sendAll(fd, response);
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

struct Request {
  std::string method;
  std::string path;
  bool hasBody = false;
};

enum class ReadResult { Ok, TooLarge, Timeout, Malformed, Closed };

// Reads the request line and headers (never a body) within the deadline and the size cap.
ReadResult readRequest(int fd, const HealthServerLimits& limits, Request& request) {
  std::string buffer;
  auto deadline = Clock::now() + limits.readTimeout;
  size_t end = std::string::npos;
  while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
    if (buffer.size() > limits.maxHeaderBytes) return ReadResult::TooLarge;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return ReadResult::Timeout;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return ReadResult::Timeout;
    char chunk[2048];
    auto n = ::recv(fd, chunk, std::min(sizeof chunk, limits.maxHeaderBytes + 4 - buffer.size()), 0);
    if (n <= 0) return ReadResult::Closed;
    buffer.append(chunk, static_cast<size_t>(n));
  }
  if (end > limits.maxHeaderBytes) return ReadResult::TooLarge;
  auto lineEnd = buffer.find("\r\n");
  std::string line = buffer.substr(0, lineEnd);
  auto space1 = line.find(' ');
  auto space2 = line.find(' ', space1 == std::string::npos ? line.size() : space1 + 1);
  if (space1 == std::string::npos || space2 == std::string::npos) return ReadResult::Malformed;
  request.method = line.substr(0, space1);
  request.path = line.substr(space1 + 1, space2 - space1 - 1);
  if (auto query = request.path.find('?'); query != std::string::npos) request.path.resize(query);
  size_t at = lineEnd + 2;
  while (at < end) {
    auto next = buffer.find("\r\n", at);
    std::string header = lowercase(buffer.substr(at, next - at));
    at = next + 2;
    if (header.rfind("transfer-encoding:", 0) == 0) request.hasBody = true;
    if (header.rfind("content-length:", 0) == 0) {
      auto value = header.substr(15);
      value.erase(0, value.find_first_not_of(" \t"));
      if (!value.empty() && value != "0") request.hasBody = true;
    }
  }
  return ReadResult::Ok;
}

// Closing a socket with unread input resets the connection, which can destroy the response before
// the client reads it (a client still sending a body it was told not to send): stop writing, then
// discard what arrives for a short, bounded while.
void closeGracefully(int fd) {
  ::shutdown(fd, SHUT_WR);
  auto deadline = Clock::now() + std::chrono::milliseconds(500);
  char sink[4096];
  for (size_t drained = 0; drained < 8 * 1024 * 1024;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    auto n = ::recv(fd, sink, sizeof sink, 0);
    if (n <= 0) break;
    drained += static_cast<size_t>(n);
  }
  ::close(fd);
}

}  // namespace

HealthServer::HealthServer(const std::string& bindAddress, HealthServerLimits limits)
    : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  try {
    impl_->listenFd = listenOn(bindAddress, impl_->port);
  } catch (const std::exception& error) {
    throw std::runtime_error("cannot serve health probes on " + bindAddress + ": " + error.what() +
                             "; pass a free host:port to --health-probe-bind-address");
  }
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) {
    ::close(impl_->listenFd);
    throw std::runtime_error(std::string("health server: pipe: ") + std::strerror(errno));
  }
  impl_->wakeRead = wake[0];
  impl_->wakeWrite = wake[1];
  for (int i = 0; i < std::max(1, limits.threads); ++i) {
    impl_->workers.emplace_back([this] {
      while (true) {
        int fd;
        {
          std::unique_lock lock(impl_->mutex);
          impl_->ready.wait(lock, [this] { return impl_->stopping || !impl_->pending.empty(); });
          if (impl_->stopping) return;
          fd = impl_->pending.front();
          impl_->pending.pop_front();
        }
        serve(fd);
        closeGracefully(fd);
      }
    });
  }
  impl_->acceptor = std::thread([this] {
    while (true) {
      pollfd fds[2] = {{impl_->listenFd, POLLIN, 0}, {impl_->wakeRead, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
      if (fds[1].revents) return;
      if (!(fds[0].revents & POLLIN)) continue;
      int fd = ::accept4(impl_->listenFd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::unique_lock lock(impl_->mutex);
      if (impl_->pending.size() >= impl_->limits.maxQueuedConnections) {
        lock.unlock();
        reply(fd, 503, "Service Unavailable", "too many connections\n");
        ::close(fd);
        continue;
      }
      impl_->pending.push_back(fd);
      impl_->ready.notify_one();
    }
  });
}

HealthServer::~HealthServer() {
  char byte = 0;
  [[maybe_unused]] auto written = ::write(impl_->wakeWrite, &byte, 1);
  impl_->acceptor.join();
  {
    std::lock_guard guard(impl_->mutex);
    impl_->stopping = true;
    impl_->ready.notify_all();
  }
  for (auto& worker : impl_->workers) worker.join();
  for (int fd : impl_->pending) ::close(fd);
  ::close(impl_->listenFd);
  ::close(impl_->wakeRead);
  ::close(impl_->wakeWrite);
}

int HealthServer::port() const { return impl_->port; }

void HealthServer::serve(int fd) {
  Request request;
  switch (readRequest(fd, impl_->limits, request)) {
    case ReadResult::TooLarge:
      return reply(fd, 431, "Request Header Fields Too Large", "request line and headers are limited to " +
                                                                    std::to_string(impl_->limits.maxHeaderBytes) +
                                                                    " bytes\n");
    case ReadResult::Timeout: return reply(fd, 408, "Request Timeout", "send the request faster\n");
    case ReadResult::Malformed: return reply(fd, 400, "Bad Request", "not an HTTP request\n");
    case ReadResult::Closed: return;
    case ReadResult::Ok: break;
  }
  bool head = request.method == "HEAD";
  if (request.method != "GET" && !head) {
    return reply(fd, 405, "Method Not Allowed", "probes answer GET and HEAD only\n", false, "Allow: GET, HEAD\r\n");
  }
  // Refused before reading any of it: a probe has no body, and a body is never buffered.
  if (request.hasBody) return reply(fd, 413, "Content Too Large", "probes take no request body\n", head);
  if (request.path == "/healthz") return reply(fd, 200, "OK", "ok", head);
  if (request.path == "/readyz") {
    auto failing = failingReadyChecks();
    if (failing.empty()) return reply(fd, 200, "OK", "ok", head);
    std::string body;
    for (const auto& name : failing) body += "[-] " + name + " failed\n";
    return reply(fd, 503, "Service Unavailable", body, head);
  }
  reply(fd, 404, "Not Found", "try /healthz or /readyz\n", head);
}

void HealthServer::addReadyCheck(std::string name, std::function<bool()> check) {
  std::lock_guard guard(mutex_);
  readyChecks_.emplace_back(std::move(name), std::move(check));
}

std::vector<std::string> HealthServer::failingReadyChecks() {
  std::lock_guard guard(mutex_);
  std::vector<std::string> failing;
  for (const auto& [name, check] : readyChecks_) {
    if (!check()) failing.push_back(name);
  }
  return failing;
}

}  // namespace vto::controller
