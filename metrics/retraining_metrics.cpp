#include "metrics/retraining_metrics.h"

namespace vto::metrics {
namespace {

prometheus::Family<prometheus::Gauge>& gauge(prometheus::Registry& registry, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

void setOrRemove(prometheus::Family<prometheus::Gauge>& family, const prometheus::Labels& labels,
                 std::optional<double> value) {
  if (value) {
    family.Add(labels).Set(*value);
  } else if (family.Has(labels)) {
    family.Remove(&family.Add(labels));
  }
}

}  // namespace

RetrainingMetrics::RetrainingMetrics(prometheus::Registry& registry)
    : triggers_(prometheus::BuildCounter()
                    .Name("vto_retrainingpolicy_triggers_total")
                    .Help("Triggers of RetrainingPolicies, by reason and what became of them")
                    .Register(registry)),
      nextSchedule_(gauge(registry, "vto_retrainingpolicy_next_schedule_time_seconds",
                          "Unix time of each policy's next schedule slot, jitter included")),
      lastSchedule_(gauge(registry, "vto_retrainingpolicy_last_schedule_time_seconds",
                          "Unix time of the nominal slot of each policy's last scheduled run")),
      lastSuccess_(gauge(registry, "vto_retrainingpolicy_last_success_time_seconds",
                         "Unix time at which each policy's newest successful run completed")),
      activeRuns_(gauge(registry, "vto_retrainingpolicy_active_runs", "TrainingRuns of each policy not yet finished")),
      skew_(prometheus::BuildHistogram()
                .Name("vto_retrainingpolicy_schedule_skew_seconds")
                .Help("Seconds between a scheduled run's nominal slot and its creation (jitter included)")
                .Register(registry)
                .Add({}, prometheus::Histogram::BucketBoundaries{0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600})),
      triggerHealthy_(gauge(registry, "vto_retrainingpolicy_trigger_healthy",
                            "1 when a policy's polled trigger (newData, metric) works, 0 when its polls or queries fail")),
      metricValue_(gauge(registry, "vto_retrainingpolicy_metric_value",
                         "The last value of each policy's metric query (absent after NoData)")),
      pendingObjects_(gauge(registry, "vto_retrainingpolicy_data_pending_objects",
                            "New objects under each policy's gcsPrefix not yet folded into a run")),
      pendingBytes_(gauge(registry, "vto_retrainingpolicy_data_pending_bytes",
                          "Bytes of the new objects under each policy's gcsPrefix not yet folded into a run")),
      promotions_(prometheus::BuildCounter()
                      .Name("vto_model_promotions_total")
                      .Help("Promotion decisions of RetrainingPolicies: Promoted, NotBetter, NoMetric, Manual, Failed")
                      .Register(registry)),
      champion_(gauge(registry, "vto_model_champion_metric",
                      "The champion model version's value of each policy's promotion.metric")) {}

void RetrainingMetrics::promotion(const std::string& ns, const std::string& policy, const std::string& result) {
  promotions_.Add({{"namespace", ns}, {"policy", policy}, {"result", result}}).Increment();
}

void RetrainingMetrics::championMetric(const std::string& ns, const std::string& policy, std::optional<double> value) {
  setOrRemove(champion_, {{"namespace", ns}, {"policy", policy}}, value);
}

void RetrainingMetrics::trigger(const std::string& ns, const std::string& policy, const std::string& reason,
                                const std::string& outcome) {
  triggers_.Add({{"namespace", ns}, {"policy", policy}, {"reason", reason}, {"outcome", outcome}}).Increment();
}

void RetrainingMetrics::scheduleSkew(double seconds) { skew_.Observe(seconds); }

void RetrainingMetrics::policyState(const std::string& ns, const std::string& policy,
                                    std::optional<double> nextSchedule, std::optional<double> lastSchedule,
                                    std::optional<double> lastSuccess, int activeRuns) {
  prometheus::Labels labels{{"namespace", ns}, {"policy", policy}};
  setOrRemove(nextSchedule_, labels, nextSchedule);
  setOrRemove(lastSchedule_, labels, lastSchedule);
  setOrRemove(lastSuccess_, labels, lastSuccess);
  activeRuns_.Add(labels).Set(activeRuns);
}

void RetrainingMetrics::triggerState(const std::string& ns, const std::string& policy, std::optional<bool> dataHealthy,
                                     std::optional<bool> metricHealthy, std::optional<double> metricValue,
                                     std::optional<double> pendingObjects, std::optional<double> pendingBytes) {
  prometheus::Labels labels{{"namespace", ns}, {"policy", policy}};
  auto healthy = [&](const char* trigger, std::optional<bool> value) {
    setOrRemove(triggerHealthy_, {{"namespace", ns}, {"policy", policy}, {"trigger", trigger}},
                value ? std::optional<double>(*value ? 1 : 0) : std::nullopt);
  };
  healthy("newData", dataHealthy);
  healthy("metric", metricHealthy);
  setOrRemove(metricValue_, labels, metricValue);
  setOrRemove(pendingObjects_, labels, pendingObjects);
  setOrRemove(pendingBytes_, labels, pendingBytes);
}

void RetrainingMetrics::forgetPolicy(const std::string& ns, const std::string& policy) {
  prometheus::Labels labels{{"namespace", ns}, {"policy", policy}};
  for (auto* family : {&nextSchedule_, &lastSchedule_, &lastSuccess_, &activeRuns_, &metricValue_, &pendingObjects_,
                       &pendingBytes_, &champion_}) {
    setOrRemove(*family, labels, std::nullopt);
  }
  triggerState(ns, policy, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
}

}  // namespace vto::metrics
