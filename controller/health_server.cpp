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
#include <cstring>
#include <stdexcept>
#include <thread>

namespace vto::controller {

// A parsed request line and what matters of its headers.
struct ProbeRequest {
  std::string method;
  std::string path;
  bool hasBody = false;
};

struct HealthServer::Impl {
  HealthServerLimits limits;
  int listenFd = -1;
  int wakeRead = -1, wakeWrite = -1;  // a pipe that ends the loop
  int port = 0;
  std::thread loop;
};

namespace {

using Clock = std::chrono::steady_clock;
// After answering: how long and how much a client may go on sending before the connection closes.
constexpr auto kDrainTime = std::chrono::milliseconds(500);
constexpr size_t kMaxDrainBytes = 8 * 1024 * 1024;

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
  // Non-blocking: the loop accepts until none is left. The kernel's largest backlog, so that a burst
  // of connections waits to be accepted (and evicted) instead of dropping the kubelet's SYN.
  int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int on = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  bool ok = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0;
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

enum class ParseResult { Incomplete, Ok, TooLarge, Malformed };

// The request line and headers, once all of them are in `buffer` (a body is never read).
ParseResult parseRequest(const std::string& buffer, size_t maxHeaderBytes, ProbeRequest& request) {
  size_t end = buffer.find("\r\n\r\n");
  if (end == std::string::npos) return buffer.size() > maxHeaderBytes ? ParseResult::TooLarge : ParseResult::Incomplete;
  if (end > maxHeaderBytes) return ParseResult::TooLarge;
  auto lineEnd = buffer.find("\r\n");
  std::string line = buffer.substr(0, lineEnd);
  auto space1 = line.find(' ');
  auto space2 = line.find(' ', space1 == std::string::npos ? line.size() : space1 + 1);
  if (space1 == std::string::npos || space2 == std::string::npos) return ParseResult::Malformed;
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
  return ParseResult::Ok;
}

// One client connection in the loop: reading its request until a deadline, then (answered)
// discarding what it still sends for a short while before closing, so that closing with unread
// input does not reset the connection and destroy the answer before the client reads it.
struct Connection {
  int fd = -1;
  std::string buffer;
  Clock::time_point deadline;
  bool answered = false;
  size_t drained = 0;
};

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
  impl_->loop = std::thread([this] { serveLoop(); });
}

// One thread serves every connection with poll(): an idle or slow client costs a buffer of at
// most maxHeaderBytes and a slot, never a thread, so it cannot hold the probes up.
void HealthServer::serveLoop() {
  const auto& limits = impl_->limits;
  const size_t maxConnections = std::max<size_t>(limits.maxConnections, 1);
  std::vector<Connection> connections;  // oldest first
  auto close = [](Connection& c) {
    ::close(c.fd);
    c.fd = -1;
  };
  // Reads what the client sent; answers once the request is whole, then drains until the deadline.
  auto readFrom = [&](Connection& c, Clock::time_point now) {
    char chunk[4096];
    auto n = ::recv(c.fd, chunk, sizeof chunk, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // nothing yet
    if (n <= 0) return close(c);
    if (c.answered) {
      c.drained += static_cast<size_t>(n);
      if (c.drained > kMaxDrainBytes) close(c);
      return;
    }
    c.buffer.append(chunk, static_cast<size_t>(n));
    ProbeRequest request;
    auto parsed = parseRequest(c.buffer, limits.maxHeaderBytes, request);
    if (parsed == ParseResult::Incomplete) return;
    answer(c.fd, parsed == ParseResult::Ok ? &request : nullptr, parsed == ParseResult::TooLarge);
    c.answered = true;
    c.buffer.clear();
    c.buffer.shrink_to_fit();
    c.deadline = now + kDrainTime;
    ::shutdown(c.fd, SHUT_WR);
  };
  while (true) {
    auto now = Clock::now();
    auto next = now + std::chrono::hours(1);
    std::vector<pollfd> fds = {{impl_->wakeRead, POLLIN, 0}, {impl_->listenFd, POLLIN, 0}};
    for (const auto& c : connections) {
      fds.push_back({c.fd, POLLIN, 0});
      next = std::min(next, c.deadline);
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait, 0))) < 0 && errno != EINTR) return;
    if (fds[0].revents) return;
    now = Clock::now();
    for (size_t i = 0; i < connections.size(); ++i) {
      auto& c = connections[i];
      if (fds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) {
        readFrom(c, now);
      } else if (now >= c.deadline) {
        if (!c.answered) reply(c.fd, 408, "Request Timeout", "send the request faster\n");
        close(c);
      }
    }
    std::erase_if(connections, [](const Connection& c) { return c.fd < 0; });
    if (!(fds[1].revents & POLLIN)) continue;
    // Every connection waiting is taken (bounded per wake-up, so the open ones are served too). At
    // the limit the oldest one that has not sent a whole request makes room, not the newest: the
    // kubelet sends its request as it connects, an idle flood does not. A whole request that came
    // with its connection is answered here and then, before any other connection can evict it.
    for (size_t taken = 0; taken < maxConnections; ++taken) {
      int fd = ::accept4(impl_->listenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) break;  // none left (or out of descriptors: the next wake-up tries again)
      if (connections.size() >= maxConnections) {
        auto oldest = std::find_if(connections.begin(), connections.end(), [](const Connection& c) { return !c.answered; });
        if (oldest == connections.end()) oldest = connections.begin();  // all answered: the oldest drain ends early
        if (!oldest->answered) reply(oldest->fd, 503, "Service Unavailable", "too many connections\n");
        ::close(oldest->fd);
        connections.erase(oldest);
      }
      connections.push_back({fd, {}, now + limits.readTimeout});
      readFrom(connections.back(), now);
      if (connections.back().fd < 0) connections.pop_back();
    }
  }
}

HealthServer::~HealthServer() {
  char byte = 0;
  [[maybe_unused]] auto written = ::write(impl_->wakeWrite, &byte, 1);
  impl_->loop.join();
  ::close(impl_->listenFd);
  ::close(impl_->wakeRead);
  ::close(impl_->wakeWrite);
}

int HealthServer::port() const { return impl_->port; }

void HealthServer::answer(int fd, const ProbeRequest* parsed, bool tooLarge) {
  if (tooLarge) {
    return reply(fd, 431, "Request Header Fields Too Large",
                 "request line and headers are limited to " + std::to_string(impl_->limits.maxHeaderBytes) + " bytes\n");
  }
  if (!parsed) return reply(fd, 400, "Bad Request", "not an HTTP request\n");
  const ProbeRequest& request = *parsed;
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
