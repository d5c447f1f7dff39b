#pragma once
// controller-runtime's metric names and labels, so that existing operator dashboards work:
// controller_runtime_*{controller}, workqueue_*{name}, rest_client_requests_total{code,method,host},
// leader_election_master_status{name}. The two workqueue "unfinished" gauges are computed when
// scraped, so this object is also a Collectable to hand to the MetricsServer.
#include <prometheus/collectable.h>
#include <prometheus/registry.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "controller/controller_metrics.h"
#include "controller/workqueue.h"
#include "controller/workqueue_metrics.h"

namespace vto::controller {

class Informer;

// Counts every HTTP request the kube client makes.
class RestClientMetrics {
 public:
  virtual ~RestClientMetrics() = default;
  // `code` is the HTTP status, or "<error>" when no response arrived (as client-go does).
  virtual void requestDone(const std::string& code, const std::string& method,
                           const std::string& host) = 0;
  // A request (or a watch) that got no answer, or no byte, before its deadline; also counted in
  // requestDone as "<error>".
  virtual void requestTimedOut() {}
};

class RuntimeMetrics final : public prometheus::Collectable, public RestClientMetrics {
 public:
  explicit RuntimeMetrics(prometheus::Registry& registry);

  std::unique_ptr<ControllerMetrics> forController(const std::string& controller);
  std::unique_ptr<WorkQueueMetrics> forQueue(const std::string& name);
  // Reports the queue's in-flight work at scrape time; the queue must outlive this object.
  void watchUnfinishedWork(const std::string& name, WorkQueue& queue);
  void leaderStatus(const std::string& leaseName, bool leading);

  void requestDone(const std::string& code, const std::string& method,
                   const std::string& host) override;
  void requestTimedOut() override;
  // Reports the informer's watch health at scrape time (vto_informer_*); it must outlive this object.
  void watchInformer(const Informer& informer);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  prometheus::Registry& registry_;
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, WorkQueue*>> queues_;
  std::vector<const Informer*> informers_;
  std::vector<prometheus::MetricFamily> informerFamilies() const;  // with mutex_ held
};

}  // namespace vto::controller
