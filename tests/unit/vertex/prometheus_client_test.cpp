#include "vertex/prometheus_client.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/fakes/vertex_fake_transport.h"
#include "tests/support/loopback_http_server.h"

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

TEST(PrometheusClient, SendsTheCanonicalUrlItChecked) {
  testing::ScriptedTransport transport;
  PrometheusClient client(transport);
  transport.enqueue(200, "{}");
  client.instantQuery("HTTP://Prom.Monitoring:80/%7eprom/", "up", "");
  transport.enqueue(200, "{}");
  client.instantQuery("http://prom/%0d%0a", "up", "");  // encoded, CR LF are data
  auto requests = transport.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].url, "http://prom.monitoring/~prom/api/v1/query?query=up");
  EXPECT_EQ(requests[1].url, "http://prom/%0D%0A/api/v1/query?query=up");
  for (const std::string& bad : std::vector<std::string>{"http://prom:9090/\r\nX-Injected: 1", "http://prom:9090/\nX-Injected: 1",
                                 "http://prom:9090/ HTTP/1.1", "http://prom:9090/\tx", "http://prom:9090/\xc3\xa9",
                                 "http://user@prom:9090", "http://prom:9090/a\\b", "http://prom:9090/%zz",
                                 "http://prom:9090/a/../b", "http://prom:9090/%2e%2e/b", "http://prom\r\nX: 1:9090"}) {
    try {
      client.instantQuery(bad, "up", "");
      ADD_FAILURE() << "sent to " << bad;
    } catch (const std::invalid_argument& error) {
      std::string what = error.what();
      EXPECT_EQ(what.find_first_of("\r\n\t"), std::string::npos) << what;  // a status condition gets it
      EXPECT_EQ(what.rfind("prometheusUrl", 0), 0u) << what;
    }
  }
  EXPECT_EQ(transport.requests().size(), 2u);
}

// vto run's client: a transport of its own, a connection per query and closed after it, so that a
// tenant's server shares nothing with (and can desynchronise nothing for) any other request.
TEST(PrometheusClient, ItsOwnTransportOpensAConnectionPerQuery) {
  vto::testing::LoopbackHttpServer server(R"({"status":"success"})", vto::testing::LoopbackHttpServer::Mode::SmuggleResponse);
  PrometheusClient client(/*allowInsecure=*/false);
  for (int i = 0; i < 3; ++i) {
    auto response = client.instantQuery(server.url(), "up", "");
    EXPECT_EQ(response.status, 200);
    EXPECT_EQ(response.body, R"({"status":"success"})");
  }
  EXPECT_EQ(server.accepted(), 3);
  EXPECT_NE(server.received().find("Connection: close\r\n"), std::string::npos) << server.received();
  EXPECT_THROW(client.instantQuery(server.url() + "/\r\nX-Injected: 1", "up", ""), std::invalid_argument);
  EXPECT_EQ(server.accepted(), 3);
  EXPECT_EQ(server.received().find("X-Injected"), std::string::npos);
}

}  // namespace
}  // namespace vto::vertex
