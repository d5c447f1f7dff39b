// vto_test_tcp_proxy HOST PORT: a TCP proxy for partition tests. Listens on 127.0.0.1 (a free
// port, printed as "listening PORT") and forwards every connection to HOST:PORT. SIGUSR1 makes it
// a silent partition: connections stay open but nothing is forwarded either way and new ones are
// accepted and held (no reset, no answer: what a dropped network link looks like). SIGUSR2 heals.
// Each change is printed ("partitioned", "healed") once it holds. SIGTERM ends it.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int connectTo(const char* host, const char* port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host, port, &hints, &found) != 0) return -1;
  int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  return fd;
}

struct Pair {
  int client = -1;
  int upstream = -1;  // -1 while held by a partition
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s HOST PORT\n", argv[0]);
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGUSR1, SIGUSR2, SIGTERM, SIGINT}) sigaddset(&signals, s);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  int signalFd = ::signalfd(-1, &signals, SFD_CLOEXEC);

  int listenFd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(listenFd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listenFd, 64) != 0 ||
      ::getsockname(listenFd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("listen");
    return 1;
  }
  std::printf("listening %d\n", ntohs(address.sin_port));
  std::fflush(stdout);

  bool partitioned = false;
  std::vector<Pair> pairs;
  auto closePair = [](Pair& pair) {
    if (pair.client >= 0) ::close(pair.client);
    if (pair.upstream >= 0) ::close(pair.upstream);
    pair.client = pair.upstream = -1;
  };
  while (true) {
    std::vector<pollfd> fds = {{signalFd, POLLIN, 0}, {listenFd, POLLIN, 0}};
    if (!partitioned) {
      for (const auto& pair : pairs) {
        fds.push_back({pair.client, POLLIN, 0});
        fds.push_back({pair.upstream, POLLIN, 0});
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      if (::read(signalFd, &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGUSR1) {
          partitioned = true;
          std::printf("partitioned\n");
        } else if (info.ssi_signo == SIGUSR2) {
          partitioned = false;
          for (auto& pair : pairs) {
            if (pair.upstream < 0) pair.upstream = connectTo(argv[1], argv[2]);
            if (pair.upstream < 0) closePair(pair);
          }
          std::printf("healed\n");
        } else {
          return 0;
        }
        std::fflush(stdout);
      }
    }
    if (fds[1].revents & POLLIN) {
      int client = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        Pair pair{client, partitioned ? -1 : connectTo(argv[1], argv[2])};
        if (!partitioned && pair.upstream < 0) {
          ::close(client);
        } else {
          pairs.push_back(pair);
        }
      }
    }
    if (!partitioned) {
      for (size_t i = 2; i < fds.size(); i += 2) {
        Pair& pair = pairs[(i - 2) / 2];
        for (int side = 0; side < 2; ++side) {
          if (!(fds[i + side].revents & (POLLIN | POLLHUP | POLLERR))) continue;
          int from = side == 0 ? pair.client : pair.upstream, to = side == 0 ? pair.upstream : pair.client;
          if (from < 0) continue;
          char buffer[16384];
          auto n = ::recv(from, buffer, sizeof buffer, 0);
          bool ok = n > 0;
          for (ssize_t sent = 0; ok && sent < n;) {
            auto w = ::send(to, buffer + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
            ok = w > 0;
            sent += w > 0 ? w : 0;
          }
          if (!ok) closePair(pair);
        }
      }
      std::erase_if(pairs, [](const Pair& pair) { return pair.client < 0; });
    }
  }
}
