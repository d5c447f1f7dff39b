#pragma once
// Servers on "port 0" when their library cannot say which port it bound (cpprestsdk's listener
// takes a URL and never reports the port): ask the kernel for a port that is free now, open the
// server there, and when another process took that port in between (open() throws), try a new one.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace vto {

// "host:port" -> {host, port}; ":8081" -> {"", 8081}. nullopt unless port is a number 0..65535.
inline std::optional<std::pair<std::string, int>> splitHostPort(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string digits = address.substr(colon + 1);
  if (digits.empty() || digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  int port = std::stoi(digits);
  if (port > 65535) return std::nullopt;
  return std::make_pair(address.substr(0, colon), port);
}

// A TCP port on the IPv4 address `host` ("" or "0.0.0.0": any) that nobody listens on right now.
inline int unusedTcpPort(const std::string& host) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = 0;
  if (host.empty() || host == "0.0.0.0") address.sin_addr.s_addr = htonl(INADDR_ANY);
  else if (::inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1)
    throw std::invalid_argument("cannot pick a free port on '" + host + "': not an IPv4 address; give a port other than 0");
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  socklen_t length = sizeof(address);
  bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) throw std::runtime_error("cannot pick a free port on " + (host.empty() ? std::string("0.0.0.0") : host));
  return ntohs(address.sin_port);
}

// Calls open(port) and returns the port. For port 0, open() gets a port free right now, and a
// failing open() is retried on a new port (a few times) before its error is rethrown.
inline int openOnPort(const std::string& host, int port, const std::function<void(int)>& open) {
  if (port != 0) {
    open(port);
    return port;
  }
  constexpr int kAttempts = 8;
  for (int attempt = 1;; ++attempt) {
    int candidate = unusedTcpPort(host);
    try {
      open(candidate);
      return candidate;
    } catch (const std::exception&) {
      if (attempt == kAttempts) throw;
    }
  }
}

}  // namespace vto
