// PooledHttpTransport speaks TLS and verifies certificates: the test cluster's API server (HTTPS,
// a certificate from its own self-signed CA, which the system trust store does not hold) is refused
// during the handshake, and a refused connection is not kept.
#include <gtest/gtest.h>

#include "controller/rest_config.h"
#include "tests/support/test_cluster.h"
#include "vertex/api_error.h"
#include "vertex/http_transport.h"

namespace vto::vertex {
namespace {

TEST(PooledHttpTransportTls, AnUntrustedCertificateIsRefused) {
  auto server = controller::loadKubeconfig(testing::sharedCluster().kubeconfig()).server;
  ASSERT_EQ(server.rfind("https://", 0), 0u) << server;
  PooledHttpTransport transport;
  HttpRequest request;
  request.url = server + "/version";
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      transport.send(request);
      FAIL() << "a certificate from an unknown CA was accepted";
    } catch (const TransportError& error) {
      EXPECT_NE(std::string(error.what()).find("TLS handshake"), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace vto::vertex
