// The operator's clients as `vto run` wires them. A tenant chooses the Prometheus server a metric
// trigger queries: its queries must not travel on the pool that carries Google's token (a connection
// a tenant's server keeps, or a DNS lookup it never answers, would be the shared pool's).
#include "cmd/operator_clients.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include "tests/fakes/clock_fake.h"
#include "tests/support/loopback_http_server.h"

namespace vto::cmd {
namespace {

Flags operatorFlags() {
  Flags flags = runFlags();
  flags.parse({});
  return flags;
}

TEST(OperatorClients, TenantsPrometheusHasATransportOfItsOwn) {
  prometheus::Registry registry;
  metrics::ApiRequestMetrics requestMetrics(registry);
  testing::FakeClock clock;
  OperatorClients clients(operatorFlags(), clock, requestMetrics);
  // A server that keeps connections alive: on the shared, pooled transport three queries would share
  // one connection; on Prometheus's own each has its own, closed after it.
  vto::testing::LoopbackHttpServer server(R"({"status":"success"})");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(clients.prometheus().instantQuery(server.url(), "up", "").status, 200);
  EXPECT_EQ(server.accepted(), 3) << "the queries shared a pooled connection: Prometheus is on the shared transport";
  EXPECT_NE(server.received().find("Connection: close\r\n"), std::string::npos) << server.received();
}

}  // namespace
}  // namespace vto::cmd
