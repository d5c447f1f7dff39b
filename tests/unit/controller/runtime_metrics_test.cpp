// controller-runtime's metric names and labels, as a dashboard would query them.
#include "controller/runtime_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include "controller/informer.h"
#include "tests/fakes/clock_fake.h"
#include "tests/fakes/kube_client_fake.h"

namespace vto::controller {
namespace {

using namespace std::chrono_literals;
using vto::testing::FakeClock;

std::string exposition(prometheus::Registry& registry, RuntimeMetrics& runtime) {
  auto families = registry.Collect();
  auto scraped = runtime.Collect();
  families.insert(families.end(), scraped.begin(), scraped.end());
  return prometheus::TextSerializer().Serialize(families);
}

TEST(RuntimeMetricsTest, QueueAndControllerSeries) {
  prometheus::Registry registry;
  RuntimeMetrics runtime(registry);
  FakeClock clock;
  auto queueMetrics = runtime.forQueue("trainingrun");
  WorkQueue queue(clock, defaultControllerRateLimiter(clock), queueMetrics.get());
  runtime.watchUnfinishedWork("trainingrun", queue);
  auto controllerMetrics = runtime.forController("trainingrun");
  controllerMetrics->maxConcurrentReconciles(4);

  queue.add({"ns", "a"});
  queue.add({"ns", "b"});
  queue.get();
  clock.advance(7s);
  controllerMetrics->reconciled(ReconcileOutcome::Error, 2s);
  queue.addRateLimited({"ns", "a"});
  runtime.requestDone("200", "GET", "10.0.0.1:443");
  runtime.leaderStatus("vto-controller-leader", true);

  auto text = exposition(registry, runtime);
  for (const char* expected : {
           "workqueue_adds_total{name=\"trainingrun\"} 2",
           "workqueue_depth{name=\"trainingrun\"} 1",
           "workqueue_retries_total{name=\"trainingrun\"} 1",
           "workqueue_unfinished_work_seconds{name=\"trainingrun\"} 7",
           "workqueue_longest_running_processor_seconds{name=\"trainingrun\"} 7",
           "controller_runtime_reconcile_total{controller=\"trainingrun\",result=\"error\"} 1",
           "controller_runtime_reconcile_total{controller=\"trainingrun\",result=\"success\"} 0",
           "controller_runtime_reconcile_errors_total{controller=\"trainingrun\"} 1",
           "controller_runtime_max_concurrent_reconciles{controller=\"trainingrun\"} 4",
           "controller_runtime_reconcile_time_seconds_bucket{controller=\"trainingrun\",le=\"2.5\"} 1",
           "rest_client_requests_total{code=\"200\",host=\"10.0.0.1:443\",method=\"GET\"} 1",
           "leader_election_master_status{name=\"vto-controller-leader\"} 1",
       }) {
    EXPECT_NE(text.find(expected), std::string::npos) << expected << " not in:\n" << text;
  }
}

TEST(RuntimeMetricsTest, InformerHealthAndKubernetesTimeouts) {
  prometheus::Registry registry;
  RuntimeMetrics runtime(registry);
  FakeClock clock;
  vto::testing::FakeKubeClient client;
  Informer informer(client, clock, {.resource = {"vto.dev", "v1", "trainingruns", true}});
  runtime.watchInformer(informer);
  auto text = exposition(registry, runtime);
  EXPECT_NE(text.find("vto_request_timeouts_total{client=\"kubernetes\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("vto_informer_watch_stale{informer=\"trainingruns\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("vto_informer_watch_restarts_total{informer=\"trainingruns\"} 0"), std::string::npos) << text;
  EXPECT_NE(text.find("vto_informer_last_event_age_seconds{informer=\"trainingruns\"}"), std::string::npos) << text;
  runtime.requestTimedOut();
  text = exposition(registry, runtime);
  EXPECT_NE(text.find("vto_request_timeouts_total{client=\"kubernetes\"} 1"), std::string::npos) << text;
}

}  // namespace
}  // namespace vto::controller
