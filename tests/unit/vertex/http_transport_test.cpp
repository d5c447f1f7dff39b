// CppRestTransport keeps connections alive: many requests to one endpoint share a few TCP
// connections, never more at once than the per-endpoint bound.
#include "vertex/http_transport.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "tests/support/loopback_http_server.h"
#include "vertex/api_error.h"

namespace vto::vertex {
namespace {

TEST(CppRestTransport, SequentialRequestsReuseOneConnection) {
  testing::LoopbackHttpServer server(R"({"ok": true})");
  CppRestTransport transport;
  for (int i = 0; i < 20; ++i) {
    HttpRequest request;
    request.method = i % 2 ? "POST" : "GET";
    request.url = server.url() + "/v1/things/" + std::to_string(i) + "?page=" + std::to_string(i);
    request.body = i % 2 ? R"({"n": 1})" : "";
    auto response = transport.send(request);
    ASSERT_EQ(response.status, 200);
    ASSERT_EQ(response.body, R"({"ok": true})");
  }
  EXPECT_EQ(server.requests(), 20);
  EXPECT_EQ(server.accepted(), 1) << "every request after the first reuses the kept-alive connection";
}

TEST(CppRestTransport, ConcurrentRequestsStayWithinTheConnectionBound) {
  testing::LoopbackHttpServer server;
  HttpTransportOptions options;
  options.maxConnectionsPerEndpoint = 2;
  CppRestTransport transport(options);
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  for (int t = 0; t < 6; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        HttpRequest request;
        request.url = server.url() + "/x";
        if (transport.send(request).status == 200) ++ok;
      }
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(ok, 150);
  EXPECT_EQ(server.requests(), 150);
  EXPECT_LE(server.peakOpen(), 2);
  EXPECT_LE(server.accepted(), 2 * 3) << "connections are reused, not opened per request";
}

TEST(CppRestTransport, EachEndpointHasItsOwnConnections) {
  testing::LoopbackHttpServer first, second;
  CppRestTransport transport;
  for (int i = 0; i < 5; ++i) {
    transport.send({.method = "GET", .url = first.url() + "/a"});
    transport.send({.method = "GET", .url = second.url() + "/b"});
  }
  EXPECT_EQ(first.requests(), 5);
  EXPECT_EQ(second.requests(), 5);
  EXPECT_EQ(first.accepted(), 1);
  EXPECT_EQ(second.accepted(), 1);
}

TEST(CppRestTransport, NoServerIsATransportError) {
  int port;
  { testing::LoopbackHttpServer gone; port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1)); }
  CppRestTransport transport;
  EXPECT_THROW(transport.send({.method = "GET", .url = "http://127.0.0.1:" + std::to_string(port) + "/"}),
               TransportError);
}

}  // namespace
}  // namespace vto::vertex
