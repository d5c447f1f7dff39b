// The probe server faces anyone who can reach the pod: nothing a client sends is buffered, slow or
// idle clients are cut off, and only GET/HEAD of the two probes are answered.
#include "controller/health_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "tests/support/raw_http.h"
#include "tests/support/wait.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using testing::LoopbackConnection;
using testing::requestStatus;

TEST(HealthServerTest, AnswersProbesAndReportsFailingReadyChecks) {
  HealthServer server("127.0.0.1:0");
  std::atomic<bool> synced{false};
  server.addReadyCheck("informers-synced", [&] { return synced.load(); });
  int port = server.port();
  EXPECT_EQ(requestStatus(port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 5s), 200);
  LoopbackConnection ready(port);
  ready.send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n");
  auto response = ready.readResponse(5s);
  EXPECT_EQ(testing::statusCodeOf(response), 503);
  EXPECT_NE(response.find("[-] informers-synced failed"), std::string::npos) << response;
  synced = true;
  EXPECT_EQ(requestStatus(port, "GET /readyz?verbose HTTP/1.1\r\n\r\n", 5s), 200);
  EXPECT_EQ(requestStatus(port, "HEAD /healthz HTTP/1.1\r\n\r\n", 5s), 200);
  EXPECT_EQ(requestStatus(port, "GET /other HTTP/1.1\r\n\r\n", 5s), 404);
}

TEST(HealthServerTest, AnswersOnlyGetAndHead) {
  HealthServer server("127.0.0.1:0");
  for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS", "TRACE"}) {
    EXPECT_EQ(requestStatus(server.port(), std::string(method) + " /healthz HTTP/1.1\r\n\r\n", 5s), 405) << method;
  }
}

// Found by review: a 512 MB POST /healthz took the operator from 33 MB to 560 MB.
TEST(HealthServerTest, A512MegabyteBodyIsRefusedWithoutBeingRead) {
  HealthServer server("127.0.0.1:0");
  auto before = testing::residentBytes();
  auto flood = testing::floodBody(server.port(), "GET", "/healthz", 512ull << 20, 60s);
  auto growth = testing::residentBytes() - std::min(before, testing::residentBytes());
  EXPECT_EQ(flood.status, 413);
  EXPECT_LT(growth, 32u << 20) << "the server buffered the body: RSS grew by " << (growth >> 20) << " MiB";
  EXPECT_LT(flood.bodyBytesSent, 256u << 20) << "the server kept reading instead of refusing";
  auto posted = testing::floodBody(server.port(), "POST", "/healthz", 512ull << 20, 60s);
  EXPECT_EQ(posted.status, 405);
  EXPECT_LT(testing::residentBytes() - std::min(before, testing::residentBytes()), 32u << 20);
}

TEST(HealthServerTest, OversizedHeadersAre431) {
  HealthServer server("127.0.0.1:0");
  std::string request = "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n";
  EXPECT_EQ(requestStatus(server.port(), request, 5s), 431);
}

TEST(HealthServerTest, IdleConnectionsAreClosedAndDoNotBlockProbes) {
  HealthServerLimits limits;
  limits.readTimeout = 2s;
  HealthServer server("127.0.0.1:0", limits);
  // A slowloris: many connections that send half a request and then nothing.
  std::vector<std::unique_ptr<LoopbackConnection>> idle;
  for (int i = 0; i < 50; ++i) {
    idle.push_back(std::make_unique<LoopbackConnection>(server.port()));
    idle.back()->send("GET /healthz HTTP/1.1\r\n");
  }
  // Probes are answered at once all the same: idle clients hold no thread.
  EXPECT_EQ(requestStatus(server.port(), "GET /healthz HTTP/1.1\r\n\r\n", 1s), 200);
  // The idle ones are answered 408 at their deadline and closed.
  EXPECT_EQ(testing::statusCodeOf(idle.front()->readResponse(10s)), 408);
}

// Found by review: 256 idle connections made /healthz answer 503, so anyone who could reach the
// port could get the pod restarted. The kubelet sends its request as it connects; idle ones make room.
TEST(HealthServerTest, AFloodOfIdleConnectionsCannotLockTheProbesOut) {
  HealthServerLimits limits;
  HealthServer server("127.0.0.1:0", limits);
  const auto healthz = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  std::vector<std::unique_ptr<LoopbackConnection>> idle;
  for (size_t i = 0; i < limits.maxConnections; ++i) {
    idle.push_back(std::make_unique<LoopbackConnection>(server.port()));
    ASSERT_GE(idle.back()->fd(), 0);
  }
  // The server takes connections in the order they came: these come after all of the idle ones.
  EXPECT_EQ(requestStatus(server.port(), healthz, 5s), 200) << "at the connection limit";
  for (size_t i = 0; i < limits.maxConnections; ++i) {
    idle.push_back(std::make_unique<LoopbackConnection>(server.port()));
    idle.back()->send("GET /healthz HTTP/1.1\r\n");  // half a request, then nothing
  }
  for (int probe = 0; probe < 5; ++probe) EXPECT_EQ(requestStatus(server.port(), healthz, 5s), 200) << "probe " << probe;
  // The oldest idle connection made room, and was told why.
  EXPECT_EQ(testing::statusCodeOf(idle.front()->readResponse(5s)), 503);
}

TEST(HealthServerTest, ABusyPortIsAClearError) {
  HealthServer first("127.0.0.1:0");
  try {
    HealthServer second("127.0.0.1:" + std::to_string(first.port()));
    FAIL() << "bound a busy port";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("--health-probe-bind-address"), std::string::npos);
  }
}

}  // namespace
}  // namespace vto::controller
