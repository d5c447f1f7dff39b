// The runtime's outputs a user and a cluster see: Events in `kubectl describe`, /metrics that
// promtool accepts (with controller-runtime's names), and the health probes.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <prometheus/registry.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "controller/controller.h"
#include "controller/event_recorder.h"
#include "controller/health_server.h"
#include "controller/informer.h"
#include "controller/kube_client.h"
#include "controller/runtime_metrics.h"
#include "controller/workqueue.h"
#include "metrics/metrics_server.h"
#include "tests/support/ports.h"
#include "tests/support/test_cluster.h"
#include "tests/support/wait.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using vto::testing::runShell;
using vto::testing::sharedCluster;
using vto::testing::waitFor;

const Resource kConfigMaps{"", "v1", "configmaps", true};

TEST(EventsTest, KubectlDescribeShowsAggregatedEvents) {
  auto& cluster = sharedCluster();
  ASSERT_EQ(cluster.kubectl("create namespace events-test").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("create configmap described -n events-test").exitCode, 0);
  RestKubeClient client(loadKubeconfig(cluster.kubeconfig()));
  RealClock clock;
  KubeEventRecorder recorder(client, clock, "vto", "test-instance");
  auto object = client.get(kConfigMaps, "events-test", "described");
  object["apiVersion"] = "v1";  // a GET of one object carries them, but be explicit
  object["kind"] = "ConfigMap";
  for (int i = 0; i < 3; ++i) {
    recorder.event(object, EventType::Warning, "BadThing", "the thing is bad; fix spec.thing");
  }
  recorder.event(object, EventType::Normal, "GoodThing", "all is well");
  auto events = cluster.kubectl("get events -n events-test -o json");
  ASSERT_EQ(events.exitCode, 0) << events.output;
  auto items = nlohmann::json::parse(events.output)["items"];
  ASSERT_EQ(items.size(), 2u) << "three repeats are one Event";
  for (const auto& item : items) {
    if (item["reason"] == "BadThing") {
      EXPECT_EQ(item["count"], 3);
    }
  }
  auto described = cluster.kubectl("describe configmap described -n events-test");
  EXPECT_NE(described.output.find("BadThing"), std::string::npos) << described.output;
  EXPECT_NE(described.output.find("the thing is bad; fix spec.thing"), std::string::npos);
  EXPECT_NE(described.output.find("(x3 over"), std::string::npos) << described.output;
}

// Counts reconciles; fails the first pass of every key to exercise the error series.
class FlakyReconciler final : public Reconciler {
 public:
  Result reconcile(const ObjectKey& key) override {
    std::lock_guard guard(mutex_);
    if (++passes_[key] == 1) throw std::runtime_error("first pass fails");
    return {};
  }
  int passes(const ObjectKey& key) {
    std::lock_guard guard(mutex_);
    return passes_[key];
  }

 private:
  std::mutex mutex_;
  std::map<ObjectKey, int> passes_;
};

TEST(MetricsTest, PromtoolAcceptsTheMetricsWithControllerRuntimeNames) {
  auto& cluster = sharedCluster();
  ASSERT_EQ(cluster.kubectl("create namespace metrics-test").exitCode, 0);
  ASSERT_EQ(cluster.kubectl("create configmap one -n metrics-test").exitCode, 0);
  auto registry = std::make_shared<prometheus::Registry>();
  auto runtime = std::make_shared<RuntimeMetrics>(*registry);
  metrics::MetricsServer server("127.0.0.1:0", registry, {runtime});
  RealClock clock;
  RestKubeClient client(loadKubeconfig(cluster.kubeconfig()), runtime.get());
  auto queueMetrics = runtime->forQueue("configmap");
  WorkQueue queue(clock, defaultControllerRateLimiter(clock), queueMetrics.get());
  runtime->watchUnfinishedWork("configmap", queue);
  FlakyReconciler reconciler;
  auto controllerMetrics = runtime->forController("configmap");
  Controller controller("configmap", reconciler, queue, clock, 2, controllerMetrics.get());
  Informer informer(client, clock, {.resource = kConfigMaps, .namespaces = {"metrics-test"}});
  informer.addHandler(enqueueKey(queue));
  runtime->leaderStatus("vto-controller-leader", true);
  informer.start();
  controller.start();
  ASSERT_TRUE(waitFor([&] { return reconciler.passes({"metrics-test", "one"}) == 2; }, 30s));

  auto scraped = runShell("curl -sf http://127.0.0.1:" + std::to_string(server.port()) + "/metrics");
  ASSERT_EQ(scraped.exitCode, 0) << scraped.output;
  for (const char* name :
       {"controller_runtime_reconcile_total{controller=\"configmap\",result=\"success\"} 1",
        "controller_runtime_reconcile_total{controller=\"configmap\",result=\"error\"} 1",
        "controller_runtime_reconcile_errors_total{controller=\"configmap\"} 1",
        "controller_runtime_reconcile_time_seconds_bucket{controller=\"configmap\"",
        "controller_runtime_active_workers{controller=\"configmap\"}",
        "controller_runtime_max_concurrent_reconciles{controller=\"configmap\"} 2",
        "workqueue_depth{name=\"configmap\"}", "workqueue_adds_total{name=\"configmap\"} 2",
        "workqueue_queue_duration_seconds_bucket{name=\"configmap\"",
        "workqueue_work_duration_seconds_bucket{name=\"configmap\"",
        "workqueue_retries_total{name=\"configmap\"} 1",
        "workqueue_unfinished_work_seconds{name=\"configmap\"}",
        "workqueue_longest_running_processor_seconds{name=\"configmap\"}",
        "rest_client_requests_total{", "method=\"GET\"",
        "leader_election_master_status{name=\"vto-controller-leader\"} 1"}) {
    EXPECT_NE(scraped.output.find(name), std::string::npos) << name << " missing from:\n" << scraped.output;
  }
  auto checked = runShell("curl -sf http://127.0.0.1:" + std::to_string(server.port()) +
                          "/metrics | promtool check metrics");
  EXPECT_EQ(checked.exitCode, 0) << checked.output;
  controller.stop();
  informer.stop();
}

TEST(HealthTest, ReadyOnlyOnceTheCacheHasSynced) {
  HealthServer health("127.0.0.1:0");  // binds a free port itself
  int port = health.port();
  ASSERT_GT(port, 0);
  std::atomic<bool> synced{false};
  health.addReadyCheck("informers-synced", [&] { return synced.load(); });
  auto url = "http://127.0.0.1:" + std::to_string(port);
  auto probe = [&](const std::string& path) {
    return runShell("curl -s -o /dev/null -w '%{http_code}' " + url + path).output;
  };
  EXPECT_EQ(probe("/healthz"), "200");
  EXPECT_EQ(probe("/readyz"), "503");
  auto body = runShell("curl -s " + url + "/readyz").output;
  EXPECT_NE(body.find("informers-synced"), std::string::npos) << body;
  synced = true;
  EXPECT_EQ(probe("/readyz"), "200");
}

TEST(MetricsServerTest, BusyAddressIsAClearError) {
  auto registry = std::make_shared<prometheus::Registry>();
  metrics::MetricsServer first("127.0.0.1:0", registry);
  try {
    metrics::MetricsServer second("127.0.0.1:" + std::to_string(first.port()), registry);
    FAIL() << "two servers on one port";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("--metrics-bind-address"), std::string::npos);
  }
}

}  // namespace
}  // namespace vto::controller
