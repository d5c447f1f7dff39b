#include "controller/runtime_metrics.h"

#include "controller/informer.h"
#include "metrics/api_request_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

namespace vto::controller {
namespace {

using prometheus::Histogram;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// controller-runtime's buckets for controller_runtime_reconcile_time_seconds.
const Histogram::BucketBoundaries kReconcileBuckets = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25,  1.5,  1.75,  2.0,  2.5, 3.0,  3.5, 4.0,  4.5, 5,    6,   7,    8,   9,   10,  15,  20,  25,
    30,    40,   50,    60};

// client-go's workqueue buckets: 10 ns to 10 s, by factors of ten.
Histogram::BucketBoundaries workqueueBuckets() {
  Histogram::BucketBoundaries bounds;
  for (double bound = 1e-8; bound < 20; bound *= 10) bounds.push_back(bound);
  return bounds;
}

const char* resultLabel(ReconcileOutcome outcome) {
  switch (outcome) {
    case ReconcileOutcome::Success: return "success";
    case ReconcileOutcome::Error: return "error";
    case ReconcileOutcome::Requeue: return "requeue";
    case ReconcileOutcome::RequeueAfter: return "requeue_after";
  }
  return "error";
}

class PrometheusControllerMetrics final : public ControllerMetrics {
 public:
  PrometheusControllerMetrics(prometheus::Registry& registry, const std::string& controller) {
    auto& total = prometheus::BuildCounter()
                      .Name("controller_runtime_reconcile_total")
                      .Help("Total number of reconciliations per controller")
                      .Register(registry);
    for (auto outcome : {ReconcileOutcome::Success, ReconcileOutcome::Error,
                         ReconcileOutcome::Requeue, ReconcileOutcome::RequeueAfter}) {
      // Created up front so every series exists (at zero) from the first scrape.
      totals_[static_cast<int>(outcome)] =
          &total.Add({{"controller", controller}, {"result", resultLabel(outcome)}});
    }
    errors_ = &prometheus::BuildCounter()
                   .Name("controller_runtime_reconcile_errors_total")
                   .Help("Total number of reconciliation errors per controller")
                   .Register(registry)
                   .Add({{"controller", controller}});
    time_ = &prometheus::BuildHistogram()
                 .Name("controller_runtime_reconcile_time_seconds")
                 .Help("Length of time per reconciliation per controller")
                 .Register(registry)
                 .Add({{"controller", controller}}, kReconcileBuckets);
    active_ = &prometheus::BuildGauge()
                   .Name("controller_runtime_active_workers")
                   .Help("Number of currently used workers per controller")
                   .Register(registry)
                   .Add({{"controller", controller}});
    max_ = &prometheus::BuildGauge()
                .Name("controller_runtime_max_concurrent_reconciles")
                .Help("Maximum number of concurrent reconciles per controller")
                .Register(registry)
                .Add({{"controller", controller}});
  }
  void maxConcurrentReconciles(int n) override { max_->Set(n); }
  void activeWorkers(int n) override { active_->Set(n); }
  void reconciled(ReconcileOutcome outcome, Clock::duration took) override {
    totals_[static_cast<int>(outcome)]->Increment();
    if (outcome == ReconcileOutcome::Error) errors_->Increment();
    time_->Observe(seconds(took));
  }

 private:
  prometheus::Counter* totals_[4] = {};
  prometheus::Counter* errors_ = nullptr;
  Histogram* time_ = nullptr;
  prometheus::Gauge* active_ = nullptr;
  prometheus::Gauge* max_ = nullptr;
};

class PrometheusWorkQueueMetrics final : public WorkQueueMetrics {
 public:
  PrometheusWorkQueueMetrics(prometheus::Registry& registry, const std::string& name) {
    prometheus::Labels labels{{"name", name}};
    depth_ = &prometheus::BuildGauge()
                  .Name("workqueue_depth")
                  .Help("Current depth of workqueue")
                  .Register(registry)
                  .Add(labels);
    adds_ = &prometheus::BuildCounter()
                 .Name("workqueue_adds_total")
                 .Help("Total number of adds handled by workqueue")
                 .Register(registry)
                 .Add(labels);
    queued_ = &prometheus::BuildHistogram()
                   .Name("workqueue_queue_duration_seconds")
                   .Help("How long in seconds an item stays in workqueue before being requested")
                   .Register(registry)
                   .Add(labels, workqueueBuckets());
    worked_ = &prometheus::BuildHistogram()
                   .Name("workqueue_work_duration_seconds")
                   .Help("How long in seconds processing an item from workqueue takes")
                   .Register(registry)
                   .Add(labels, workqueueBuckets());
    retries_ = &prometheus::BuildCounter()
                    .Name("workqueue_retries_total")
                    .Help("Total number of retries handled by workqueue")
                    .Register(registry)
                    .Add(labels);
  }
  void added() override { adds_->Increment(); }
  void depth(size_t n) override { depth_->Set(static_cast<double>(n)); }
  void queuedFor(Clock::duration d) override { queued_->Observe(seconds(d)); }
  void workedFor(Clock::duration d) override { worked_->Observe(seconds(d)); }
  void retried() override { retries_->Increment(); }

 private:
  prometheus::Gauge* depth_;
  prometheus::Counter* adds_;
  Histogram* queued_;
  Histogram* worked_;
  prometheus::Counter* retries_;
};

prometheus::MetricFamily gaugeFamily(std::string name, std::string help) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = prometheus::MetricType::Gauge;
  return family;
}

void addGauge(prometheus::MetricFamily& family, const std::string& queue, double value) {
  prometheus::ClientMetric metric;
  metric.label.push_back({"name", queue});
  metric.gauge.value = value;
  family.metric.push_back(metric);
}

}  // namespace

RuntimeMetrics::RuntimeMetrics(prometheus::Registry& registry) : registry_(registry) {
  metrics::requestTimeouts(registry_, "kubernetes");
}

std::unique_ptr<ControllerMetrics> RuntimeMetrics::forController(const std::string& controller) {
  return std::make_unique<PrometheusControllerMetrics>(registry_, controller);
}

std::unique_ptr<WorkQueueMetrics> RuntimeMetrics::forQueue(const std::string& name) {
  return std::make_unique<PrometheusWorkQueueMetrics>(registry_, name);
}

void RuntimeMetrics::watchUnfinishedWork(const std::string& name, WorkQueue& queue) {
  std::lock_guard guard(mutex_);
  queues_.emplace_back(name, &queue);
}

void RuntimeMetrics::leaderStatus(const std::string& leaseName, bool leading) {
  prometheus::BuildGauge()
      .Name("leader_election_master_status")
      .Help("Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
            "1 indicates master. 'name' is the string used to identify the lease.")
      .Register(registry_)
      .Add({{"name", leaseName}})
      .Set(leading ? 1 : 0);
}

void RuntimeMetrics::requestDone(const std::string& code, const std::string& method,
                                 const std::string& host) {
  prometheus::BuildCounter()
      .Name("rest_client_requests_total")
      .Help("Number of HTTP requests, partitioned by status code, method, and host.")
      .Register(registry_)
      .Add({{"code", code}, {"method", method}, {"host", host}})
      .Increment();
}

void RuntimeMetrics::requestTimedOut() {
  metrics::requestTimeouts(registry_, "kubernetes").Increment();
}

void RuntimeMetrics::watchInformer(const Informer& informer) {
  std::lock_guard guard(mutex_);
  informers_.push_back(&informer);
}

std::vector<prometheus::MetricFamily> RuntimeMetrics::informerFamilies() const {
  auto quiet = gaugeFamily("vto_informer_last_event_age_seconds",
                           "Seconds since the informer's quietest watch last showed life (an event, a bookmark, the "
                           "API server accepting or ending a watch). Bookmarks come every minute.");
  auto stale = gaugeFamily("vto_informer_watch_stale",
                           "1 while a watch of the informer has been quiet for twice its idle limit: its cache is no "
                           "longer current (/readyz fails too).");
  prometheus::MetricFamily restarts;
  restarts.name = "vto_informer_watch_restarts_total";
  restarts.help = "Watches the informer started again after one ended (server timeout, idle limit, error, 410 Gone).";
  restarts.type = prometheus::MetricType::Counter;
  for (const auto* informer : informers_) {
    auto add = [&](prometheus::MetricFamily& family, double value) {
      prometheus::ClientMetric metric;
      metric.label.push_back({"informer", informer->name()});
      if (family.type == prometheus::MetricType::Counter) {
        metric.counter.value = value;
      } else {
        metric.gauge.value = value;
      }
      family.metric.push_back(metric);
    };
    add(quiet, std::chrono::duration<double>(informer->quietFor()).count());
    add(stale, informer->stale() ? 1 : 0);
    add(restarts, static_cast<double>(informer->watchRestarts()));
  }
  return {quiet, stale, restarts};
}

std::vector<prometheus::MetricFamily> RuntimeMetrics::Collect() const {
  auto unfinished = gaugeFamily(
      "workqueue_unfinished_work_seconds",
      "How many seconds of work has been done that is in progress and hasn't been observed by "
      "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
      "threads by observing the rate at which this increases.");
  auto longest = gaugeFamily(
      "workqueue_longest_running_processor_seconds",
      "How many seconds has the longest running processor for workqueue been running.");
  std::lock_guard guard(mutex_);
  std::vector<prometheus::MetricFamily> families;
  if (!informers_.empty()) families = informerFamilies();
  if (queues_.empty()) return families;
  for (const auto& [name, queue] : queues_) {
    auto [total, longestSeconds] = queue->unfinishedWork();
    addGauge(unfinished, name, total);
    addGauge(longest, name, longestSeconds);
  }
  families.push_back(unfinished);
  families.push_back(longest);
  return families;
}

}  // namespace vto::controller
