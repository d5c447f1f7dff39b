// vto_test_tcp_proxy HOST PORT: a chaos TCP proxy for partition tests. Listens on 127.0.0.1 (a free
// port, printed as "listening PORT") and forwards every connection to HOST:PORT. A signal switches
// the way it fails, as networks fail:
//   SIGUSR1      silent: connections stay open but nothing is forwarded either way, and new ones are
//                accepted and held (no reset, no answer: a dropped link, a hung server);
//   SIGRTMIN     refuse: the listener closes (connections are refused) and open ones are reset;
//   SIGRTMIN+1   reset: every connection, open or new, is reset at once;
//   SIGRTMIN+2   slow: bytes trickle through, 256 at a time every 50 ms per connection;
//   SIGUSR2      heal: everything forwarded again, held connections included;
//   SIGRTMIN+3   heal for new connections only: those held by the silence stay silent for good
//                (a load-balancer failover or a NAT timeout forgets the flows it carried).
// Each change is printed ("partitioned", "refusing", "resetting", "slow", "healed") once it
// holds. SIGTERM ends it.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <time.h>

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
  bool forgotten = false;  // held for good: never forwarded again
};

enum class Mode { Forward, Silent, Refuse, Reset, Slow };

// Closes `fd` with a reset (RST) rather than an orderly FIN.
void reset(int fd) {
  if (fd < 0) return;
  linger hard{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
  ::close(fd);
}

int listenOn(sockaddr_in& address) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s HOST PORT\n", argv[0]);
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGUSR1, SIGUSR2, SIGTERM, SIGINT, SIGRTMIN, SIGRTMIN + 1, SIGRTMIN + 2, SIGRTMIN + 3}) {
    sigaddset(&signals, s);
  }
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  int signalFd = ::signalfd(-1, &signals, SFD_CLOEXEC);

  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int listenFd = listenOn(address);  // the port stays the same when a refusal ends
  if (listenFd < 0) {
    std::perror("listen");
    return 1;
  }
  std::printf("listening %d\n", ntohs(address.sin_port));
  std::fflush(stdout);

  Mode mode = Mode::Forward;
  std::vector<Pair> pairs;
  auto closePair = [](Pair& pair) {
    if (pair.client >= 0) ::close(pair.client);
    if (pair.upstream >= 0) ::close(pair.upstream);
    pair.client = pair.upstream = -1;
  };
  auto resetAll = [&pairs] {
    for (auto& pair : pairs) {
      reset(pair.client);
      reset(pair.upstream);
      pair.client = pair.upstream = -1;
    }
    pairs.clear();
  };
  auto say = [](const char* what) {
    std::printf("%s\n", what);
    std::fflush(stdout);
  };
  while (true) {
    bool partitioned = mode == Mode::Silent;
    std::vector<pollfd> fds = {{signalFd, POLLIN, 0}, {listenFd, listenFd >= 0 ? short(POLLIN) : short(0), 0}};
    if (!partitioned) {
      for (const auto& pair : pairs) {
        bool forward = !pair.forgotten && pair.upstream >= 0;
        fds.push_back({forward ? pair.client : -1, POLLIN, 0});
        fds.push_back({forward ? pair.upstream : -1, POLLIN, 0});
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) continue;
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      if (::read(signalFd, &info, sizeof info) == sizeof info) {
        int signo = static_cast<int>(info.ssi_signo);
        if (signo == SIGUSR1) {
          mode = Mode::Silent;
          say("partitioned");
        } else if (signo == SIGRTMIN) {
          mode = Mode::Refuse;
          if (listenFd >= 0) ::close(listenFd);
          listenFd = -1;
          resetAll();
          say("refusing");
        } else if (signo == SIGRTMIN + 1) {
          mode = Mode::Reset;
          resetAll();
          say("resetting");
        } else if (signo == SIGRTMIN + 2) {
          mode = Mode::Slow;
          say("slow");
        } else if (signo == SIGUSR2 || signo == SIGRTMIN + 3) {
          bool forget = signo == SIGRTMIN + 3 && mode == Mode::Silent;
          mode = Mode::Forward;
          if (listenFd < 0 && (listenFd = listenOn(address)) < 0) {
            std::perror("listen again");
            return 1;
          }
          for (auto& pair : pairs) {
            if (forget) pair.forgotten = true;
            if (pair.forgotten) continue;
            if (pair.upstream < 0) pair.upstream = connectTo(argv[1], argv[2]);
            if (pair.upstream < 0) closePair(pair);
          }
          std::erase_if(pairs, [](const Pair& pair) { return pair.client < 0; });
          say("healed");
        } else {
          return 0;
        }
        continue;  // the pairs may have changed under this round's descriptors: poll again
      }
    }
    if (listenFd >= 0 && (fds[1].revents & POLLIN)) {
      int client = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0 && mode == Mode::Reset) {
        reset(client);
      } else if (client >= 0) {
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
          auto n = ::recv(from, buffer, mode == Mode::Slow ? 256 : sizeof buffer, 0);
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
      if (mode == Mode::Slow) {
        timespec pace{0, 50'000'000};
        ::nanosleep(&pace, nullptr);
      }
    }
  }
}
