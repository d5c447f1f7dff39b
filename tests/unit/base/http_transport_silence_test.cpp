// Silence is a failure: a peer that stops answering costs a request its deadline (a TimeoutError,
// counted apart from other failures), never a hang, and never again for the next requests on the
// pooled connections that shared the silent path. Every socket asks the kernel for keepalive probes.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "base/http_transport.h"
#include "tests/support/loopback_http_server.h"

namespace vto {
namespace {

HttpRequest get(const std::string& url, std::chrono::milliseconds timeout) {
  HttpRequest request;
  request.url = url;
  request.timeout = timeout;
  return request;
}

TEST(HttpTransportSilence, ASilentServerIsATimeoutError) {
  testing::LoopbackHttpServer server("{}", testing::LoopbackHttpServer::Mode::Silent);
  PooledHttpTransport transport;
  EXPECT_THROW(transport.send(get(server.url() + "/hung", std::chrono::milliseconds(200))), TimeoutError);
}

TEST(HttpTransportSilence, AnUnreachableServerIsNotATimeout) {
  std::string url;
  {
    testing::LoopbackHttpServer gone;
    url = gone.url();
  }
  PooledHttpTransport transport;
  try {
    transport.send(get(url + "/refused", std::chrono::seconds(5)));
    FAIL() << "expected a TransportError";
  } catch (const TimeoutError& error) {
    FAIL() << "a refusal is an answer, not silence: " << error.what();
  } catch (const TransportError&) {
  }
}

TEST(HttpTransportSilence, AfterATimeoutTheEndpointsIdleConnectionsAreNotReused) {
  testing::LoopbackHttpServer server(R"({"ok": true})");
  PooledHttpTransport transport;
  // Three connections at once, then idle in the pool.
  server.delayAnswers(std::chrono::milliseconds(300));
  std::vector<std::future<HttpResponse>> inFlight;
  for (int i = 0; i < 3; ++i) {
    inFlight.push_back(std::async(std::launch::async, [&] {
      return transport.send(get(server.url() + "/warm", std::chrono::seconds(10)));
    }));
  }
  for (auto& response : inFlight) ASSERT_EQ(response.get().status, 200);
  ASSERT_EQ(server.accepted(), 3);
  server.delayAnswers(std::chrono::milliseconds(0));

  // The path under every open connection goes silent; new connections still work.
  server.silenceOpenConnections();
  EXPECT_THROW(transport.send(get(server.url() + "/silent", std::chrono::milliseconds(300))), TimeoutError);

  // The next request does not wait a whole timeout on another idle connection of that path: it
  // opens a new one and is answered.
  auto response = transport.send(get(server.url() + "/after", std::chrono::milliseconds(2000)));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(server.accepted(), 4);
}

// The kernel's view of the client sockets connected to `port`: each ESTABLISHED one's timer kind
// (/proc/net/tcp's "tr": 2 is the keepalive timer).
std::vector<int> timerKindsOfSocketsTo(int port) {
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  std::vector<int> kinds;
  char remote[16];
  std::snprintf(remote, sizeof remote, ":%04X", port);
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, rem, state, queues, timer;
    fields >> slot >> local >> rem >> state >> queues >> timer;
    if (state != "01" || rem.size() < 5 || rem.substr(rem.size() - 5) != remote) continue;
    kinds.push_back(std::stoi(timer.substr(0, timer.find(':')), nullptr, 16));
  }
  return kinds;
}

TEST(HttpTransportSilence, EveryConnectionHasTcpKeepAlive) {
  testing::LoopbackHttpServer server;
  PooledHttpTransport transport;
  ASSERT_EQ(transport.send(get(server.url() + "/one", std::chrono::seconds(5))).status, 200);
  auto port = std::stoi(server.url().substr(server.url().rfind(':') + 1));
  // The pooled, idle connection: its only pending timer is the keepalive probe's.
  EXPECT_EQ(timerKindsOfSocketsTo(port), std::vector<int>{2});
}

TEST(HttpTransportSilence, AStreamSaysWhenTheServerAcceptedIt) {
  testing::LoopbackHttpServer server("{\"type\":\"BOOKMARK\"}\n");
  PooledHttpTransport transport;
  std::vector<std::string> seen;
  transport.streamLines(
      get(server.url() + "/watch", std::chrono::seconds(5)), [&](std::string_view line) { seen.emplace_back(line); },
      std::stop_token(), std::chrono::seconds(5), [&] { seen.emplace_back("open"); });
  EXPECT_EQ(seen, (std::vector<std::string>{"open", R"({"type":"BOOKMARK"})"}));
}

TEST(HttpTransportSilence, AStreamWhoseServerNeverAnswersIsATimeoutError) {
  testing::LoopbackHttpServer server("{}", testing::LoopbackHttpServer::Mode::Silent);
  PooledHttpTransport transport;
  bool opened = false;
  EXPECT_THROW(transport.streamLines(
                   get(server.url() + "/watch", std::chrono::milliseconds(200)), [](std::string_view) {},
                   std::stop_token(), std::chrono::seconds(60), [&] { opened = true; }),
               TimeoutError);
  EXPECT_FALSE(opened);
}

}  // namespace
}  // namespace vto
