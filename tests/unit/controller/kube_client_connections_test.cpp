// RestKubeClient keeps its connections to the API server alive: requests share them. (cpprestsdk
// puts a connection back in its pool a moment after the response completes, so a request that
// follows at once may open another: the counts are "far fewer than requests", not exact.)
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "controller/kube_client.h"
#include "tests/support/loopback_http_server.h"

namespace vto::controller {
namespace {

const Resource kConfigMaps{"", "v1", "configmaps", true};

RestConfig configFor(const testing::LoopbackHttpServer& server) {
  RestConfig config;
  config.server = server.url();
  config.token = "t";
  return config;
}

TEST(RestKubeClientConnections, SequentialRequestsReuseOneConnection) {
  testing::LoopbackHttpServer server(R"({"kind": "ConfigMap", "metadata": {"name": "a"}})");
  RestKubeClient client(configFor(server));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(client.get(kConfigMaps, "ns", "a")["metadata"]["name"], "a");
    client.patch(kConfigMaps, "ns", "a", PatchType::Merge, {{"data", {{"k", std::to_string(i)}}}});
  }
  EXPECT_EQ(server.requests(), 20);
  EXPECT_LE(server.accepted(), 10) << "a client per request would open 20";
}

TEST(RestKubeClientConnections, ConcurrentRequestsShareABoundedPool) {
  testing::LoopbackHttpServer server(R"({"kind": "ConfigMap", "metadata": {"name": "a"}})");
  RestKubeClient client(configFor(server));
  std::atomic<int> ok{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 24; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        if (client.get(kConfigMaps, "ns", "a").contains("metadata")) ++ok;
      }
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(ok, 240);
  EXPECT_LT(server.accepted(), 240 / 4) << "connections are reused, not opened per request";
}

}  // namespace
}  // namespace vto::controller
