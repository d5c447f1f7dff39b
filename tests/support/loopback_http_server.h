#pragma once
// A minimal HTTP/1.1 server on 127.0.0.1 that answers every request with one fixed JSON body and
// keeps connections alive. It counts the TCP connections it accepted and the requests it answered,
// so a test can show that a client reuses connections (and how many it opens at once), and keeps
// every byte it received, so a test can show what reached the wire. It can also misbehave as a
// hostile server: answer with a second, unrequested response, or send one later on its own.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace vto::testing {

class LoopbackHttpServer {
 public:
  enum class Mode {
    KeepAlive,         // answer every request, keep the connection open
    CloseAfterAnswer,  // answer, then close without saying so (as a server dropping an idle connection)
    Silent,            // read requests, never answer (a hung server)
    SmuggleResponse,   // answer each request with its response and, in the same write, another one
  };

  // A complete response nobody asked for, with this body.
  static std::string unaskedResponse(const std::string& body = "SMUGGLED") {
    return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  }

  explicit LoopbackHttpServer(std::string body = "{}", Mode mode = Mode::KeepAlive)
      : body_(std::move(body)), mode_(mode) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ::close(listener_);
      throw std::runtime_error("loopback server: cannot listen");
    }
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { acceptLoop(); });
  }

  ~LoopbackHttpServer() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);
    acceptor_.join();
    {
      std::lock_guard guard(mutex_);
      for (int fd : connections_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& thread : handlers_) thread.join();
    ::close(listener_);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_; }
  int requests() const { return requests_; }
  // The most connections open at the same time, and those open now.
  int peakOpen() const { return peakOpen_; }
  int open() const { return open_; }
  // Every byte received so far, on every connection, in arrival order per connection.
  std::string received() const {
    std::lock_guard guard(mutex_);
    return received_;
  }
  // A path gone silent under the connections open now (a NAT or load balancer that forgot them):
  // they read requests and never answer again; connections accepted later are served as before.
  void silenceOpenConnections() {
    std::lock_guard guard(mutex_);
    silenced_.insert(silenced_.end(), connections_.begin(), connections_.end());
  }
  // Each answer waits this long first (so that concurrent requests hold connections at once).
  void delayAnswers(std::chrono::milliseconds delay) { delay_ = delay; }
  // Writes `bytes` to every open connection now (unasked: between two requests). Returns once the
  // kernel has them, so the client's socket holds them by the time this returns on loopback.
  void sendToAll(const std::string& bytes) {
    std::lock_guard guard(mutex_);
    for (int fd : connections_) ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }

 private:
  void acceptLoop() {
    while (!stopping_) {
      int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      ++accepted_;
      int open = ++open_;
      for (int peak = peakOpen_; open > peak && !peakOpen_.compare_exchange_weak(peak, open);) {}
      std::lock_guard guard(mutex_);
      connections_.push_back(fd);
      handlers_.emplace_back([this, fd] { serve(fd); });
    }
  }

  // Reads requests (headers, then Content-Length bytes of body) and answers each until the peer closes.
  void serve(int fd) {
    std::string buffer;
    char chunk[4096];
    while (true) {
      auto headerEnd = buffer.find("\r\n\r\n");
      if (headerEnd != std::string::npos) {
        size_t bodyLength = 0;
        auto lower = buffer.substr(0, headerEnd);
        for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        auto field = lower.find("content-length:");
        if (field != std::string::npos) bodyLength = std::stoul(lower.substr(field + 15));
        if (buffer.size() >= headerEnd + 4 + bodyLength) {
          buffer.erase(0, headerEnd + 4 + bodyLength);
          ++requests_;
          if (mode_ == Mode::Silent || isSilenced(fd)) continue;
          if (delay_.load() > std::chrono::milliseconds(0)) std::this_thread::sleep_for(delay_.load());
          auto response = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body_.size()) + "\r\n\r\n" + body_;
          if (mode_ == Mode::SmuggleResponse) response += unaskedResponse();
          if (::send(fd, response.data(), response.size(), MSG_NOSIGNAL) < 0) break;
          if (mode_ == Mode::CloseAfterAnswer) break;
          continue;
        }
      }
      auto n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) break;
      buffer.append(chunk, static_cast<size_t>(n));
      std::lock_guard guard(mutex_);
      received_.append(chunk, static_cast<size_t>(n));
    }
    --open_;
    ::close(fd);
    std::lock_guard guard(mutex_);
    std::erase(connections_, fd);
    std::erase(silenced_, fd);
  }
  bool isSilenced(int fd) const {
    std::lock_guard guard(mutex_);
    return std::find(silenced_.begin(), silenced_.end(), fd) != silenced_.end();
  }

  std::string body_;
  Mode mode_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0}, requests_{0}, open_{0}, peakOpen_{0};
  mutable std::mutex mutex_;
  std::vector<int> connections_;
  std::vector<int> silenced_;
  std::atomic<std::chrono::milliseconds> delay_{std::chrono::milliseconds(0)};
  std::string received_;
  std::vector<std::thread> handlers_;
  std::thread acceptor_;
};

}  // namespace vto::testing
