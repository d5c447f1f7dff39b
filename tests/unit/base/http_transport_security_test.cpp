// What a hostile URL, header or server can do through PooledHttpTransport, seen on the wire: a
// loopback server records every byte it receives. Nothing in a URL or a header adds a header or a
// request of its own; a response nobody asked for never reaches the next request; a new
// connection's DNS lookup ends at the request's deadline.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "base/http_transport.h"
#include "tests/support/loopback_http_server.h"
#include "tests/support/wait.h"

namespace vto {
namespace {

using namespace std::chrono_literals;
using testing::LoopbackHttpServer;

HttpRequest get(const std::string& url) {
  HttpRequest request;
  request.url = url;
  return request;
}

// The refusal of `request`: a RefusedRequestError, not retryable, that repeats none of `hostile`.
void expectRefused(PooledHttpTransport& transport, const HttpRequest& request, const std::string& hostile) {
  try {
    transport.send(request);
    ADD_FAILURE() << "sent: " << request.method << " " << request.url;
  } catch (const RefusedRequestError& error) {
    EXPECT_FALSE(error.isRetryable());
    std::string what = error.what();
    EXPECT_EQ(what.find(hostile), std::string::npos) << "the error repeats the hostile value: " << what;
    EXPECT_EQ(what.find_first_of("\r\n"), std::string::npos) << what;
  }
}

TEST(TransportInjection, NoUrlCharacterAddsAHeaderOrARequest) {
  LoopbackHttpServer server;
  PooledHttpTransport transport;
  const std::string injected = "X-Injected";
  for (const std::string& tail : std::vector<std::string>{
           "/x\r\nX-Injected: 1",                                        // CR LF: a header of the tenant's
           "/x\nX-Injected: 1",                                          // LF alone (lenient servers split on it)
           "/x HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET /smuggled",          // a whole second request
           "/x\tX-Injected: 1",                                          // tab
           "/x X-Injected: 1",                                           // space: ends the request target
           std::string("/x\0X-Injected: 1", 16),                         // NUL
           "/x\x7fX-Injected: 1",                                        // DEL
           "/\xc3\xa9X-Injected: 1",                                     // not ASCII
           "/x\\X-Injected: 1",                                          // backslash
           "/x%X-Injected: 1",                                           // a '%' that encodes nothing
           "/x#X-Injected:1",                                            // a fragment is never sent
           "/x<X-Injected>",                                             // outside RFC 3986's characters
       }) {
    expectRefused(transport, get(server.url() + tail), injected);
  }
  auto port = server.url().substr(server.url().rfind(':') + 1);
  expectRefused(transport, get("http://X-Injected%3A1@127.0.0.1:" + port + "/x"), injected);  // user info
  EXPECT_EQ(server.accepted(), 0) << "a refused request makes no connection";

  // Encoded, the same characters are data: sent as they are, they end no line.
  auto response = transport.send(get(server.url() + "/x%0d%0aX-Injected:%201?q=%0D%0A"));
  EXPECT_EQ(response.status, 200);
  auto wire = server.received();
  EXPECT_EQ(wire.rfind("GET /x%0d%0aX-Injected:%201?q=%0D%0A HTTP/1.1\r\n", 0), 0u) << wire;
  EXPECT_EQ(wire.find("\r\nX-Injected"), std::string::npos) << wire;
  EXPECT_EQ(server.requests(), 1);
}

TEST(TransportInjection, NoMethodHeaderNameOrValueAddsAHeader) {
  LoopbackHttpServer server;
  PooledHttpTransport transport;
  auto request = get(server.url() + "/x");
  request.headers["Authorization"] = "Bearer s3cret\r\nX-Injected: 1";  // a token from a tenant's Secret
  expectRefused(transport, request, "s3cret");
  request.headers.clear();
  request.headers["X-A\r\nX-Injected"] = "1";
  expectRefused(transport, request, "X-Injected");
  request.headers.clear();
  request.headers["X-A"] = std::string("1\0X-Injected: 1", 15);
  expectRefused(transport, request, "X-Injected");
  request.headers.clear();
  request.method = "GET /y HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET";
  expectRefused(transport, request, "X-Injected");
  EXPECT_EQ(server.accepted(), 0);

  // A tab, and bytes beyond ASCII, are allowed in a value (RFC 9110 field-value).
  request = get(server.url() + "/x");
  request.headers["X-Note"] = "a\tb \xc3\xa9";
  EXPECT_EQ(transport.send(request).status, 200);
  EXPECT_EQ(server.received().find("\r\nX-Injected"), std::string::npos);
}

TEST(TransportInjection, StreamLinesRefusesTheSameRequests) {
  LoopbackHttpServer server;
  PooledHttpTransport transport;
  try {
    transport.streamLines(get(server.url() + "/watch\r\nX-Injected: 1"), [](std::string_view) {}, std::stop_token(), 10s);
    ADD_FAILURE() << "a watch was sent";
  } catch (const RefusedRequestError& error) {
    EXPECT_EQ(std::string(error.what()).find("X-Injected"), std::string::npos) << error.what();
  }
  EXPECT_EQ(server.accepted(), 0);
}

TEST(TransportSmuggling, AResponseInTheSameWriteIsNeverReadByTheNextRequest) {
  LoopbackHttpServer server(R"({"n": 1})", LoopbackHttpServer::Mode::SmuggleResponse);
  PooledHttpTransport transport;
  for (int i = 0; i < 3; ++i) {
    auto response = transport.send(get(server.url() + "/x"));
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, R"({"n": 1})") << "request " << i << " read the response meant for nobody";
  }
  EXPECT_EQ(server.requests(), 3);
  EXPECT_EQ(server.accepted(), 3) << "a connection that held unasked-for bytes was reused";
}

TEST(TransportSmuggling, AResponseSentWhileTheConnectionIdlesIsNeverReadByTheNextRequest) {
  LoopbackHttpServer server(R"({"n": 1})");
  PooledHttpTransport transport;
  EXPECT_EQ(transport.send(get(server.url() + "/first")).body, R"({"n": 1})");
  server.sendToAll(LoopbackHttpServer::unaskedResponse());
  auto response = transport.send(get(server.url() + "/second"));
  EXPECT_EQ(response.body, R"({"n": 1})") << "the second request read the response sent while idle";
  EXPECT_EQ(server.requests(), 2);
  EXPECT_EQ(server.accepted(), 2);
  // Without such bytes, the pool reuses its connection as before.
  EXPECT_EQ(transport.send(get(server.url() + "/third")).body, R"({"n": 1})");
  EXPECT_EQ(server.accepted(), 2);
}

// A TLS server on loopback (a throwaway self-signed certificate, which the client is told not to
// verify) that answers each request and then sends a response nobody asked for: in the same TLS
// record, or in a record of its own, which the client's TLS layer may hold undecrypted.
class TlsSmugglingServer {
 public:
  explicit TlsSmugglingServer(bool sameRecord) : sameRecord_(sameRecord) {
    // OpenSSL writes with write(2): an answer to a client that has gone must not kill the test.
    ::signal(SIGPIPE, SIG_IGN);
    context_ = SSL_CTX_new(TLS_server_method());
    EVP_PKEY* key = EVP_EC_gen("P-256");
    X509* certificate = X509_new();
    ASN1_INTEGER_set(X509_get_serialNumber(certificate), 1);
    X509_gmtime_adj(X509_getm_notBefore(certificate), -60);
    X509_gmtime_adj(X509_getm_notAfter(certificate), 3600);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(certificate), "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
    X509_set_issuer_name(certificate, X509_get_subject_name(certificate));
    X509_set_pubkey(certificate, key);
    X509_sign(certificate, key, EVP_sha256());
    SSL_CTX_use_certificate(context_, certificate);
    SSL_CTX_use_PrivateKey(context_, key);
    X509_free(certificate);
    EVP_PKEY_free(key);
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      throw std::runtime_error("TLS test server: cannot listen");
    }
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] {
      for (int fd; (fd = ::accept(listener_, nullptr, nullptr)) >= 0;) {
        ++accepted_;
        std::lock_guard guard(mutex_);
        handlers_.emplace_back([this, fd] { serve(fd); });
      }
    });
  }
  ~TlsSmugglingServer() {
    ::shutdown(listener_, SHUT_RDWR);
    acceptor_.join();
    for (auto& handler : handlers_) handler.join();  // each ends when its client closes
    ::close(listener_);
    SSL_CTX_free(context_);
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_; }

 private:
  void serve(int fd) {
    SSL* ssl = SSL_new(context_);
    SSL_set_fd(ssl, fd);
    std::string buffer;
    char chunk[4096];
    for (bool up = SSL_accept(ssl) == 1; up;) {
      if (auto end = buffer.find("\r\n\r\n"); end != std::string::npos) {
        buffer.erase(0, end + 4);
        std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        std::string unasked = LoopbackHttpServer::unaskedResponse();
        if (sameRecord_) answer += unasked;
        // Corked, two records leave in one segment: the client reads both at once, as it would
        // from a fast server, rather than racing the second one.
        int on = 1, off = 0;
        ::setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
        SSL_write(ssl, answer.data(), static_cast<int>(answer.size()));
        if (!sameRecord_) SSL_write(ssl, unasked.data(), static_cast<int>(unasked.size()));
        ::setsockopt(fd, IPPROTO_TCP, TCP_CORK, &off, sizeof off);
        continue;
      }
      int n = SSL_read(ssl, chunk, sizeof chunk);
      up = n > 0;
      if (up) buffer.append(chunk, static_cast<size_t>(n));
    }
    SSL_free(ssl);
    ::close(fd);
  }

  bool sameRecord_;
  SSL_CTX* context_ = nullptr;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::mutex mutex_;
  std::vector<std::thread> handlers_;
  std::thread acceptor_;
};

TEST(TransportSmuggling, OverTlsAResponseNobodyAskedForIsNeverReadEither) {
  for (bool sameRecord : {true, false}) {
    TlsSmugglingServer server(sameRecord);
    HttpTransportOptions options;
    options.verifyPeer = false;
    PooledHttpTransport transport(options);
    for (int i = 0; i < 3; ++i) {
      auto response = transport.send(get(server.url() + "/x"));
      EXPECT_EQ(response.body, "ok") << (sameRecord ? "same record" : "own record") << ", request " << i;
    }
    EXPECT_EQ(server.accepted(), 3) << (sameRecord ? "same record" : "own record");
  }
}

// The system's CA bundle is parsed once and shared: every context that trusts it holds the same store.
TEST(TransportTls, TheSystemsRootsAreParsedOnceAndShared) {
  boost::asio::ssl::context first{boost::asio::ssl::context::tls_client}, second{boost::asio::ssl::context::tls_client};
  trustSystemRoots(first);
  trustSystemRoots(second);
  X509_STORE* store = SSL_CTX_get_cert_store(first.native_handle());
  EXPECT_EQ(store, SSL_CTX_get_cert_store(second.native_handle()));
  EXPECT_GT(sk_X509_OBJECT_num(X509_STORE_get0_objects(store)), 0) << "no certificate in the system's bundle";
}

TEST(TransportKeepAlive, OffMeansAConnectionPerRequestClosedAfter) {
  LoopbackHttpServer server;
  HttpTransportOptions options;
  options.keepAlive = false;
  PooledHttpTransport transport(options);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(transport.send(get(server.url() + "/x")).status, 200);
  EXPECT_EQ(server.accepted(), 3);
  auto wire = server.received();
  EXPECT_NE(wire.find("Connection: close\r\n"), std::string::npos) << wire;
  EXPECT_TRUE(testing::waitFor([&] { return server.open() == 0; }, 5s)) << "the client kept a connection open";
}

// A resolver that answers only when the test lets it, and says when it has returned.
struct HeldResolver {
  std::mutex mutex;
  std::condition_variable changed;
  bool released = false;
  int called = 0;
  int returned = 0;

  HostResolver resolver(std::shared_ptr<HeldResolver> self) {
    return [self](const std::string&, const std::string&) {
      std::unique_lock lock(self->mutex);
      ++self->called;
      self->changed.wait(lock, [&] { return self->released; });
      ++self->returned;
      return std::vector<std::string>{"127.0.0.1"};
    };
  }
  void release() {
    std::lock_guard guard(mutex);
    released = true;
    changed.notify_all();
  }
  int calledCount() {
    std::lock_guard guard(mutex);
    return called;
  }
  int returnedCount() {
    std::lock_guard guard(mutex);
    return returned;
  }
};

TEST(TransportDns, ALookupThatDoesNotAnswerEndsAtTheRequestsDeadline) {
  auto held = std::make_shared<HeldResolver>();
  HttpTransportOptions options;
  options.resolve = held->resolver(held);
  options.maxPendingLookups = 1;
  PooledHttpTransport transport(options);
  auto request = get("http://prometheus.tenant.example:9090/api/v1/query");
  request.timeout = 300ms;
  auto started = std::chrono::steady_clock::now();
  try {
    transport.send(request);
    FAIL() << "a lookup that never answered gave an answer";
  } catch (const TransportError& error) {
    EXPECT_NE(std::string(error.what()).find("no answer from the DNS resolver before the request's deadline"),
              std::string::npos)
        << error.what();
    EXPECT_TRUE(error.isRetryable());
  }
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 3s) << "the request waited for the resolver, not for its deadline";
  // The abandoned lookup still runs; past maxPendingLookups, another is refused at once.
  request.timeout = 10s;
  started = std::chrono::steady_clock::now();
  try {
    transport.send(request);
    FAIL() << "a second lookup started while the first still waits";
  } catch (const TransportError& error) {
    EXPECT_NE(std::string(error.what()).find("still waiting for the DNS resolver"), std::string::npos) << error.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  held->release();
  ASSERT_TRUE(testing::waitFor([&] { return held->returnedCount() == 1; }, 10s));
}

// Every tenant's Prometheus shares one transport: a tenant whose host's DNS never answers uses up its
// own lookups, not the others'.
TEST(TransportDns, OneTenantsLookupsThatNeverAnswerLeaveOtherTenantsTheirs) {
  LoopbackHttpServer server;
  auto held = std::make_shared<HeldResolver>();
  auto hostile = held->resolver(held);
  HttpTransportOptions options;
  options.resolve = [hostile](const std::string& host, const std::string& port) {
    return host == "hostile.example" ? hostile(host, port) : std::vector<std::string>{"127.0.0.1"};
  };
  options.maxPendingLookups = 8;
  options.maxPendingLookupsPerKey = 2;
  PooledHttpTransport transport(options);
  auto port = server.url().substr(server.url().rfind(':') + 1);
  auto fromTeamX = get("http://hostile.example:9090/api/v1/query");
  fromTeamX.lookupBudgetKey = "team-x";
  fromTeamX.timeout = 100ms;
  for (int i = 0; i < 2; ++i) EXPECT_THROW(transport.send(fromTeamX), TimeoutError);
  try {
    transport.send(fromTeamX);
    FAIL() << "team-x started a third lookup while two still wait";
  } catch (const TransportError& error) {
    EXPECT_NE(std::string(error.what()).find("2 earlier lookups of team-x are still waiting"), std::string::npos)
        << error.what();
  }
  auto fromTeamCalm = get("http://calm.test:" + port + "/api/v1/query");
  fromTeamCalm.lookupBudgetKey = "team-calm";
  EXPECT_EQ(transport.send(fromTeamCalm).status, 200) << "the neighbour's lookups are its own";
  held->release();
  ASSERT_TRUE(testing::waitFor([&] { return held->returnedCount() == 2; }, 10s));
  // Answered: team-x's budget is whole again.
  ASSERT_TRUE(testing::waitFor(
      [&] {
        try {
          auto again = get("http://calm.test:" + port + "/x");
          again.lookupBudgetKey = "team-x";
          return transport.send(again).status == 200;
        } catch (const TransportError&) {
          return false;
        }
      },
      10s));
}

TEST(TransportDns, TheInjectedResolverChoosesTheAddress) {
  LoopbackHttpServer server;
  auto held = std::make_shared<HeldResolver>();
  held->release();
  HttpTransportOptions options;
  options.resolve = held->resolver(held);
  PooledHttpTransport transport(options);
  auto port = server.url().substr(server.url().rfind(':') + 1);
  EXPECT_EQ(transport.send(get("http://some-name.test:" + port + "/x")).status, 200);
  EXPECT_EQ(held->returnedCount(), 1);
  // An IP literal is never looked up.
  EXPECT_EQ(transport.send(get(server.url() + "/y")).status, 200);
  EXPECT_EQ(held->returnedCount(), 1);
  auto wire = server.received();
  EXPECT_NE(wire.find("Host: some-name.test:" + port + "\r\n"), std::string::npos) << wire;
}

TEST(TransportDns, AStopEndsAWatchWaitingForItsLookup) {
  auto held = std::make_shared<HeldResolver>();
  HttpTransportOptions options;
  options.resolve = held->resolver(held);
  PooledHttpTransport transport(options);
  std::stop_source stop;
  auto request = get("http://kube.example:6443/watch");
  request.timeout = std::chrono::minutes(1);
  // Stopped while the lookup is under way, as a watch being shut down.
  std::thread stopper([&] {
    if (testing::waitFor([&] { return held->calledCount() == 1; }, 10s, 10ms)) stop.request_stop();
  });
  auto started = std::chrono::steady_clock::now();
  auto response = transport.streamLines(request, [](std::string_view) {}, stop.get_token(), std::chrono::minutes(1));
  stopper.join();
  EXPECT_EQ(response.status, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  held->release();
  ASSERT_TRUE(testing::waitFor([&] { return held->returnedCount() == 1; }, 10s));
}

}  // namespace
}  // namespace vto
