// PooledHttpTransport keeps connections alive: many requests to one endpoint share its TCP
// connections, never more than the per-endpoint bound; a connection the server dropped is replaced.
#include "base/http_transport.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <vector>

#include "tests/support/loopback_http_server.h"
#include "tests/support/wait.h"

namespace vto {
namespace {

HttpRequest get(const std::string& url) {
  HttpRequest request;
  request.url = url;
  return request;
}

TEST(PooledHttpTransport, SequentialRequestsReuseOneConnection) {
  testing::LoopbackHttpServer server(R"({"ok": true})");
  PooledHttpTransport transport;
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

TEST(PooledHttpTransport, ConcurrentRequestsStayWithinTheConnectionBound) {
  testing::LoopbackHttpServer server;
  HttpTransportOptions options;
  options.maxConnectionsPerEndpoint = 2;
  PooledHttpTransport transport(options);
  std::vector<std::thread> callers;
  std::atomic<int> ok{0};
  for (int t = 0; t < 6; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        if (transport.send(get(server.url() + "/x")).status == 200) ++ok;
      }
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(ok, 150);
  EXPECT_EQ(server.requests(), 150);
  EXPECT_LE(server.peakOpen(), 2);
  EXPECT_LE(server.accepted(), 2) << "two connections, each reused";
}

TEST(PooledHttpTransport, EachEndpointHasItsOwnConnections) {
  testing::LoopbackHttpServer first, second;
  PooledHttpTransport transport;
  for (int i = 0; i < 5; ++i) {
    transport.send(get(first.url() + "/a"));
    transport.send(get(second.url() + "/b"));
  }
  EXPECT_EQ(first.requests(), 5);
  EXPECT_EQ(second.requests(), 5);
  EXPECT_EQ(first.accepted(), 1);
  EXPECT_EQ(second.accepted(), 1);
}

TEST(PooledHttpTransport, AConnectionTheServerDroppedIsReplaced) {
  testing::LoopbackHttpServer server(R"({"n": 1})", testing::LoopbackHttpServer::Mode::CloseAfterAnswer);
  PooledHttpTransport transport;
  for (int i = 0; i < 5; ++i) {
    auto response = transport.send(get(server.url() + "/again"));
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, R"({"n": 1})");
  }
  EXPECT_EQ(server.accepted(), 5);
}

TEST(PooledHttpTransport, ASilentServerIsATimeoutNotAHang) {
  testing::LoopbackHttpServer server("{}", testing::LoopbackHttpServer::Mode::Silent);
  PooledHttpTransport transport;
  auto request = get(server.url() + "/slow");
  request.timeout = std::chrono::milliseconds(200);
  try {
    transport.send(request);
    FAIL() << "expected a TransportError";
  } catch (const TransportError& error) {
    EXPECT_NE(std::string(error.what()).find("no answer within 200 ms"), std::string::npos) << error.what();
  }
  // The timed-out connection is not reused: the next request opens another.
  EXPECT_THROW(transport.send(request), TransportError);
  EXPECT_EQ(server.accepted(), 2);
}

TEST(PooledHttpTransport, AResponseBeyondTheLimitIsAnError) {
  testing::LoopbackHttpServer server(std::string(1000, 'x'));
  HttpTransportOptions options;
  options.maxResponseBytes = 100;
  PooledHttpTransport transport(options);
  EXPECT_THROW(transport.send(get(server.url() + "/big")), TransportError);
}

TEST(PooledHttpTransport, ARequestsOwnSmallerLimitApplies) {
  testing::LoopbackHttpServer server(std::string(1000, 'x'));
  PooledHttpTransport transport;
  auto request = get(server.url() + "/big");
  request.maxBodyBytes = 100;
  try {
    transport.send(request);
    FAIL() << "expected a TransportError";
  } catch (const TransportError& error) {
    EXPECT_NE(std::string(error.what()).find("more than the 100 allowed"), std::string::npos)
        << error.what();
  }
  request.maxBodyBytes = 2000;
  EXPECT_EQ(transport.send(request).body.size(), 1000u);
}

TEST(PooledHttpTransport, HeadersAndBodyReachTheServerAndBack) {
  testing::LoopbackHttpServer server(R"({"ok": true})");
  PooledHttpTransport transport;
  HttpRequest request = get(server.url() + "?alt=json");
  request.method = "PUT";
  request.headers["Authorization"] = "Bearer t";
  request.body = R"({"a": 1})";
  auto response = transport.send(request);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.headers["content-type"], "application/json");
  EXPECT_EQ(server.requests(), 1);
}

TEST(PooledHttpTransport, AStreamedBodyArrivesLineByLine) {
  testing::LoopbackHttpServer server("{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n{\"type\":\"BOOKMARK\"}");
  PooledHttpTransport transport;
  std::vector<std::string> lines;
  auto response = transport.streamLines(
      get(server.url() + "/watch"), [&](std::string_view line) { lines.emplace_back(line); }, std::stop_token(),
      std::chrono::seconds(10));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(lines, (std::vector<std::string>{R"({"type":"ADDED"})", R"({"type":"MODIFIED"})", R"({"type":"BOOKMARK"})"}))
      << "each line once, the last one without its newline too";
}

TEST(PooledHttpTransport, AStopEndsASilentStreamAtOnce) {
  testing::LoopbackHttpServer server("{}", testing::LoopbackHttpServer::Mode::Silent);
  PooledHttpTransport transport;
  std::stop_source stop;
  auto streaming = std::async(std::launch::async, [&] {
    return transport.streamLines(get(server.url() + "/watch"), [](std::string_view) {}, stop.get_token(),
                                 std::chrono::minutes(5));
  });
  ASSERT_TRUE(testing::waitFor([&] { return server.accepted() == 1; }, std::chrono::seconds(10)));
  stop.request_stop();
  // Far sooner than the five-minute idle timeout: the stop closes the socket under the pending read.
  ASSERT_EQ(streaming.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_NO_THROW(streaming.get());
}

TEST(PooledHttpTransport, BadUrlsAreTransportErrors) {
  PooledHttpTransport transport;
  EXPECT_THROW(transport.send(get("ftp://example.com/x")), TransportError);
  EXPECT_THROW(transport.send(get("no-scheme/x")), TransportError);
  EXPECT_THROW(transport.send(get("http://host:notaport/x")), TransportError);
  EXPECT_THROW(transport.send(get("http://user:pw@host/x")), TransportError);
}

TEST(PooledHttpTransport, NoServerIsATransportError) {
  int port;
  { testing::LoopbackHttpServer gone; port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1)); }
  PooledHttpTransport transport;
  EXPECT_THROW(transport.send(get("http://127.0.0.1:" + std::to_string(port) + "/")),
               TransportError);
}

}  // namespace
}  // namespace vto
