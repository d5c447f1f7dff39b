#include "vertex/prometheus_client.h"

#include <gtest/gtest.h>

#include "tests/fakes/vertex_fake_transport.h"

namespace vto::vertex {
namespace {

TEST(PrometheusClient, AnInstantQueryWithBoundsAndAnOptionalToken) {
  testing::ScriptedTransport transport;
  transport.enqueue(200, R"({"status":"success"})");
  transport.enqueue(400, R"({"status":"error"})");
  PrometheusClient client(transport);
  EXPECT_EQ(client.instantQuery("http://prom:9090/", "auc{env=\"prod\"}", "").status, 200);
  EXPECT_EQ(client.instantQuery("https://prom", "up", "s3cret").status, 400);  // the caller reads the error
  auto requests = transport.requests();
  EXPECT_EQ(requests[0].url, "http://prom:9090/api/v1/query?query=auc%7Benv%3D%22prod%22%7D");
  EXPECT_FALSE(requests[0].headers.count("Authorization"));
  EXPECT_EQ(requests[0].timeout, kPrometheusTimeout);
  EXPECT_EQ(requests[0].maxBodyBytes, kPrometheusMaxBody);
  EXPECT_EQ(requests[1].headers.at("Authorization"), "Bearer s3cret");
  EXPECT_THROW(client.instantQuery("prom:9090", "up", ""), std::invalid_argument);
  EXPECT_THROW(client.instantQuery("http://prom.monitoring:9090", "up", "s3cret"), std::invalid_argument);
  transport.enqueue(200, "{}");
  EXPECT_EQ(client.instantQuery("http://127.0.0.1:9090", "up", "s3cret").status, 200);  // loopback
  transport.enqueue(200, "{}");
  EXPECT_EQ(client.instantQuery("http://[::1]:9090", "up", "s3cret").status, 200);  // loopback too
  // One endpoint check for every credential (base/url.h): no user info, no look-alike loopback.
  EXPECT_THROW(client.instantQuery("http://127.0.0.1@prom.example:9090", "up", "s3cret"), std::invalid_argument);
  EXPECT_THROW(client.instantQuery("http://127.attacker.example:9090", "up", "s3cret"), std::invalid_argument);
  EXPECT_THROW(client.instantQuery("http://prom@evil.example", "up", ""), std::invalid_argument);
  EXPECT_THROW(client.instantQuery("http://svc.other-team/private?", "up", ""), std::invalid_argument);
  EXPECT_THROW(client.instantQuery("http://svc.other-team/private#", "up", ""), std::invalid_argument);
}

}  // namespace
}  // namespace vto::vertex
