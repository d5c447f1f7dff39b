#include "metrics/metrics_server.h"

#include <gtest/gtest.h>
#include <prometheus/counter.h>

#include "tests/support/subprocess.h"

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
