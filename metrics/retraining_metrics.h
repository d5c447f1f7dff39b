#pragma once
// vto's metrics about RetrainingPolicies: what became of each trigger, where each policy's schedule
// stands, and how late scheduled runs are created. Families are registered once, in the constructor.
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <optional>
#include <string>

namespace vto::metrics {

class RetrainingMetrics {
 public:
  explicit RetrainingMetrics(prometheus::Registry& registry);

  // vto_retrainingpolicy_triggers_total{namespace,policy,reason,outcome}; outcome is one of
  // created | deduplicated | skipped_active | missed_deadline | suspended.
  void trigger(const std::string& ns, const std::string& policy, const std::string& reason,
               const std::string& outcome);
  // vto_retrainingpolicy_schedule_skew_seconds: when a scheduled run was created minus its nominal slot.
  void scheduleSkew(double seconds);
  // The per-policy gauges (unix seconds; a time that is absent removes its series):
  // vto_retrainingpolicy_{next_schedule,last_schedule,last_success}_time_seconds and _active_runs.
  void policyState(const std::string& ns, const std::string& policy, std::optional<double> nextSchedule,
                   std::optional<double> lastSchedule, std::optional<double> lastSuccess, int activeRuns);
  // The polled triggers' gauges (absent values remove their series):
  // vto_retrainingpolicy_trigger_healthy{namespace,policy,trigger} (1 or 0, trigger newData | metric),
  // vto_retrainingpolicy_metric_value, vto_retrainingpolicy_data_pending_objects and _data_pending_bytes.
  void triggerState(const std::string& ns, const std::string& policy, std::optional<bool> dataHealthy,
                    std::optional<bool> metricHealthy, std::optional<double> metricValue,
                    std::optional<double> pendingObjects, std::optional<double> pendingBytes);
  // vto_model_promotions_total{namespace,policy,result}: promotion decisions (Promoted, NotBetter,
  // NoMetric, Manual, Failed).
  void promotion(const std::string& ns, const std::string& policy, const std::string& result);
  // vto_model_champion_metric{namespace,policy}: the champion's value of promotion.metric (absent: removed).
  void championMetric(const std::string& ns, const std::string& policy, std::optional<double> value);
  // Drops a deleted policy's per-policy gauges.
  void forgetPolicy(const std::string& ns, const std::string& policy);

 private:
  prometheus::Family<prometheus::Counter>& triggers_;
  prometheus::Family<prometheus::Gauge>& nextSchedule_;
  prometheus::Family<prometheus::Gauge>& lastSchedule_;
  prometheus::Family<prometheus::Gauge>& lastSuccess_;
  prometheus::Family<prometheus::Gauge>& activeRuns_;
  prometheus::Histogram& skew_;
  prometheus::Family<prometheus::Gauge>& triggerHealthy_;
  prometheus::Family<prometheus::Gauge>& metricValue_;
  prometheus::Family<prometheus::Gauge>& pendingObjects_;
  prometheus::Family<prometheus::Gauge>& pendingBytes_;
  prometheus::Family<prometheus::Counter>& promotions_;
  prometheus::Family<prometheus::Gauge>& champion_;
};

}  // namespace vto::metrics
