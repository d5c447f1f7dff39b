// The informer against a real API server: it follows kubectl's changes, relists after 410 Gone,
// and recovers from an API server restart with a cache equal to a fresh list.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "base/clock.h"
#include "controller/informer.h"
#include "controller/kube_client.h"
#include "tests/support/test_cluster.h"
#include "tests/support/wait.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using vto::testing::sharedCluster;
using vto::testing::TestCluster;
using vto::testing::waitFor;

const Resource kConfigMaps{"", "v1", "configmaps", true};

// name -> resourceVersion: what "the cache matches the server" compares.
using Versions = std::map<std::string, std::string>;

Versions versionsOf(const std::vector<json>& items) {
  Versions versions;
  for (const auto& item : items) {
    versions[item["metadata"]["name"]] = item["metadata"]["resourceVersion"];
  }
  return versions;
}

Versions versionsOf(const std::vector<CachedObject>& cached) {
  std::vector<json> items;
  for (const auto& object : cached) items.push_back(*object);
  return versionsOf(items);
}

Versions serverVersions(const TestCluster& cluster, const std::string& ns) {
  auto listed = cluster.kubectl("get configmaps -n " + ns + " -o json");
  if (listed.exitCode != 0) return {{"<kubectl failed>", listed.output}};
  auto list = json::parse(listed.output);
  std::vector<json> items(list["items"].begin(), list["items"].end());
  return versionsOf(items);
}

// Records what the handlers were told, by name.
struct Seen {
  std::mutex mutex;
  std::map<std::string, int> notifications;
  void operator()(const json& object) {
    std::lock_guard guard(mutex);
    ++notifications[object["metadata"]["name"]];
  }
  int of(const std::string& name) {
    std::lock_guard guard(mutex);
    return notifications[name];
  }
};

// Synced both ways: streamed through the watch (the API server here has the WatchList feature), and
// listed (as from a server without it).
class InformerSyncTest : public ::testing::TestWithParam<bool> {};

TEST_P(InformerSyncTest, FollowsCreatesUpdatesAndDeletesMadeWithKubectl) {
  auto& cluster = sharedCluster();
  const std::string ns = GetParam() ? "informer-crud-streamed" : "informer-crud-listed";
  ASSERT_EQ(cluster.kubectl("create namespace " + ns).exitCode, 0);
  ASSERT_EQ(cluster.kubectl("create configmap before -n " + ns + " --from-literal=k=v").exitCode, 0);
  RestKubeClient client(loadKubeconfig(cluster.kubeconfig()));
  RealClock clock;
  Informer informer(client, clock, {.resource = kConfigMaps, .namespaces = {ns}, .streamInitialEvents = GetParam()});
  Seen seen;
  informer.addHandler(std::ref(seen));
  informer.start();
  ASSERT_TRUE(waitFor([&] { return informer.hasSynced(); }, 30s));
  EXPECT_TRUE(informer.cache().get({ns, "before"}) != nullptr);
  EXPECT_EQ(seen.of("before"), 1);

  ASSERT_EQ(cluster.kubectl("create configmap made -n " + ns + " --from-literal=k=1").exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return informer.cache().get({ns, "made"}) != nullptr; }, 30s));

  ASSERT_EQ(cluster.kubectl("patch configmap made -n " + ns + " -p '{\"data\":{\"k\":\"2\"}}'").exitCode, 0);
  ASSERT_TRUE(waitFor([&] {
    auto made = informer.cache().get({ns, "made"});
    return made && (*made)["data"]["k"] == "2";
  }, 30s));

  ASSERT_EQ(cluster.kubectl("delete configmap made -n " + ns).exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return informer.cache().get({ns, "made"}) == nullptr; }, 30s));
  EXPECT_EQ(seen.of("made"), 3) << "added, modified, deleted";
  EXPECT_EQ(versionsOf(informer.cache().list(ns)), serverVersions(cluster, ns));
  informer.stop();
}

INSTANTIATE_TEST_SUITE_P(StreamedOrListed, InformerSyncTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Streamed" : "Listed"; });

TEST(InformerTest, OnlyWatchesTheConfiguredNamespaces) {
  auto& cluster = sharedCluster();
  ASSERT_EQ(cluster.kubectl("create namespace informer-in").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("create namespace informer-out").exitCode, 0);
  RestKubeClient client(loadKubeconfig(cluster.kubeconfig()));
  RealClock clock;
  Informer informer(client, clock,
                    {.resource = kConfigMaps, .namespaces = {"informer-in"}, .indexedLabel = "app"});
  informer.start();
  ASSERT_TRUE(waitFor([&] { return informer.hasSynced(); }, 30s));
  ASSERT_EQ(cluster.kubectl("create configmap ignored -n informer-out").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("create configmap wanted -n informer-in").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("label configmap wanted -n informer-in app=demo").exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return informer.cache().byLabel("demo").size() == 1; }, 30s));
  // Changes are seen in order, so once "wanted" is labelled the earlier "ignored" would be there.
  EXPECT_FALSE(informer.cache().get({"informer-out", "ignored"}) != nullptr);
  informer.stop();
}

std::string serverOf(const std::string& kubeconfig) {
  std::ifstream in(kubeconfig);
  for (std::string line; std::getline(in, line);) {
    auto at = line.find("server: ");
    if (at != std::string::npos) return line.substr(at + 8);
  }
  return "";
}

// Stops `cluster` and starts it again on the same data directory AND port, so that a client's
// configuration stays valid (TestCluster::restart() picks a new port). The returned process is
// the new control plane; stop it before `cluster` goes away.
std::unique_ptr<vto::testing::Subprocess> restartOnSamePort(TestCluster& cluster) {
  auto server = serverOf(cluster.kubeconfig());
  auto port = server.substr(server.rfind(':') + 1);
  cluster.stop();  // its exit status does not matter: the data directory survives either way
  auto restarted = std::make_unique<vto::testing::Subprocess>(
      std::vector<std::string>{vto::testing::binDir() + "/vto-testcluster", "--dir", cluster.dir(),
                               "--port", port},
      cluster.logPath());
  for (auto line = restarted->readLine(120s); line; line = restarted->readLine(120s)) {
    if (*line == "ready") return restarted;
  }
  throw std::runtime_error("vto-testcluster did not come back on port " + port);
}

// Passes everything through, but starts the first watch from resourceVersion 1. After an API
// server restart that is older than the server's watch history, so the real server answers 410.
class ExpiringClient final : public KubeClient {
 public:
  explicit ExpiringClient(KubeClient& real) : real_(real) {}
  json get(const Resource& r, const std::string& ns, const std::string& n) override { return real_.get(r, ns, n); }
  ListPage list(const Resource& r, const std::string& ns, const ListOptions& o) override { return real_.list(r, ns, o); }
  json create(const Resource& r, const std::string& ns, const json& o) override { return real_.create(r, ns, o); }
  json update(const Resource& r, const std::string& ns, const json& o) override { return real_.update(r, ns, o); }
  json updateStatus(const Resource& r, const std::string& ns, const json& o) override { return real_.updateStatus(r, ns, o); }
  json patch(const Resource& r, const std::string& ns, const std::string& n, PatchType t, const json& b,
             const std::string& m, bool f, const std::string& s) override {
    return real_.patch(r, ns, n, t, b, m, f, s);
  }
  void remove(const Resource& r, const std::string& ns, const std::string& n) override { real_.remove(r, ns, n); }
  void watch(const Resource& r, const std::string& ns, const WatchOptions& o,
             const std::function<void(WatchEvent&&)>& onEvent, std::stop_token stop) override {
    // The first watch that resumes from a version (after a list, or after a streamed sync ended) asks
    // for one long compacted away.
    auto options = o;
    if (!o.resourceVersion.empty() && !o.sendInitialEvents && !expired_.exchange(true)) options.resourceVersion = "1";
    real_.watch(r, ns, options, onEvent, stop);
  }

 private:
  KubeClient& real_;
  std::atomic<bool> expired_{false};
};

TEST(InformerTest, RelistsWhenTheWatchIsGone) {
  TestCluster cluster;
  ASSERT_EQ(cluster.kubectl("create namespace informer-gone").exitCode, 0);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(cluster.kubectl("create configmap c" + std::to_string(i) + " -n informer-gone").exitCode, 0);
  }
  auto restarted = restartOnSamePort(cluster);  // the watch history now starts after resourceVersion 1
  RestKubeClient real(loadKubeconfig(cluster.kubeconfig()));
  ExpiringClient client(real);
  RealClock clock;
  // A streamed sync's watch ends after a second, so that the next watch resumes (and finds 410).
  Informer informer(client, clock, {.resource = kConfigMaps, .namespaces = {"informer-gone"}, .watchTimeoutSeconds = 1});
  informer.start();
  ASSERT_TRUE(waitFor([&] { return informer.listCount() >= 2; }, 30s)) << "no relist after 410";
  ASSERT_EQ(cluster.kubectl("create configmap after -n informer-gone").exitCode, 0);
  ASSERT_TRUE(waitFor([&] { return informer.cache().get({"informer-gone", "after"}) != nullptr; }, 30s))
      << "the watch did not resume after the relist";
  EXPECT_EQ(versionsOf(informer.cache().list("informer-gone")), serverVersions(cluster, "informer-gone"));
  informer.stop();
  restarted->stop();
}

TEST(InformerTest, RecoversWhenTheApiServerRestarts) {
  TestCluster cluster;
  ASSERT_EQ(cluster.kubectl("create namespace restart").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("create configmap kept -n restart").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("create configmap doomed -n restart").exitCode, 0);
  RestKubeClient client(loadKubeconfig(cluster.kubeconfig()));
  RealClock clock;
  Informer informer(client, clock, {.resource = kConfigMaps, .namespaces = {"restart"},
                                    .maxBackoff = std::chrono::seconds(2)});
  informer.start();
  ASSERT_TRUE(waitFor([&] { return informer.hasSynced(); }, 30s));

  auto restarted = restartOnSamePort(cluster);
  ASSERT_EQ(cluster.kubectl("delete configmap doomed -n restart").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("create configmap born -n restart").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("label configmap kept -n restart touched=yes").exitCode, 0);
  auto expected = serverVersions(cluster, "restart");
  ASSERT_EQ(expected.count("born"), 1u);
  EXPECT_TRUE(waitFor([&] { return versionsOf(informer.cache().list("restart")) == expected; }, 60s))
      << "cache never matched a fresh list";
  informer.stop();
  restarted->stop();
}

}  // namespace
}  // namespace vto::controller
