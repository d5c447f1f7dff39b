#include "metrics/metrics_server.h"

#include <gtest/gtest.h>
#include <prometheus/counter.h>

#include "tests/support/raw_http.h"
#include "tests/support/subprocess.h"
#include "tests/support/wait.h"

namespace vto::metrics {
namespace {

using vto::testing::runShell;

TEST(MetricsServerTest, ServesTheSharedRegistryOnThePortItBound) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter().Name("vto_example_total").Help("An example.").Register(*registry).Add({}).Increment(3);
  MetricsServer server("127.0.0.1:0", registry);
  ASSERT_GT(server.port(), 0);
  auto scraped = runShell("curl -sf http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");
  ASSERT_EQ(scraped.exitCode, 0) << scraped.output;
  EXPECT_NE(scraped.output.find("vto_example_total 3"), std::string::npos) << scraped.output;
}

TEST(MetricsServerTest, AcceptsKubernetesStylePortOnlyAddress) {
  auto registry = std::make_shared<prometheus::Registry>();
  MetricsServer server(":0", registry);
  EXPECT_GT(server.port(), 0);
}

}  // namespace
}  // namespace vto::metrics

namespace vto::metrics {
namespace {

using namespace std::chrono_literals;

// Found by review: two idle connections blocked /metrics for ~30 s (two threads, 30 s read timeout).
TEST(MetricsServerTest, TwoIdleConnectionsDoNotBlockAScrape) {
  auto registry = std::make_shared<prometheus::Registry>();
  MetricsServer server("127.0.0.1:0", registry);
  vto::testing::LoopbackConnection idle1(server.port()), idle2(server.port());
  ASSERT_GE(idle1.fd(), 0);
  ASSERT_GE(idle2.fd(), 0);
  EXPECT_TRUE(vto::testing::waitFor(
      [&] {
        return vto::testing::requestStatus(server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 1s) == 200;
      },
      3s));
}

TEST(MetricsServerTest, IdleConnectionsAreClosed) {
  auto registry = std::make_shared<prometheus::Registry>();
  MetricsServer server("127.0.0.1:0", registry, {}, {.threads = 2, .readTimeout = 300ms});
  vto::testing::LoopbackConnection idle(server.port());
  // The server gives up on a client that sends nothing: the connection ends (EOF, maybe after a 408).
  EXPECT_TRUE(idle.readable(5s));
}

TEST(MetricsServerTest, AHugeBodyOrOversizedHeadersAreRefusedWithoutBeingBuffered) {
  auto registry = std::make_shared<prometheus::Registry>();
  MetricsServer server("127.0.0.1:0", registry);
  auto before = vto::testing::residentBytes();
  auto flood = vto::testing::floodBody(server.port(), "POST", "/metrics", 512ull << 20, 60s);
  auto after = vto::testing::residentBytes();
  EXPECT_GE(flood.status, 400);
  EXPECT_LT(after - std::min(before, after), 32u << 20);
  std::string big = "GET /metrics HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n";
  int status = vto::testing::requestStatus(server.port(), big, 5s);
  // civetweb answers 400 (or closes) when the request line and headers exceed max_request_size.
  EXPECT_TRUE(status == 0 || (status >= 400 && status < 500)) << status;
}

}  // namespace
}  // namespace vto::metrics
