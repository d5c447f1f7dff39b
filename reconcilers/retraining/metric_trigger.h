#pragma once
// The metric trigger's pure logic (rule 8 of docs/retraining.md): what one Prometheus instant query
// answered, and whether a breach has held long enough to start a run.
//
// Exactly one sample counts. Several series are ambiguous (Flagger silently takes the last one); an
// empty result or NaN is NoData: neither breach nor recovery, and it restarts `for` (KEDA reads empty
// as 0, which would fire every `below` rule). After maxConsecutiveErrors failed queries the trigger
// is unhealthy and never fires until a query succeeds again.
#include <optional>
#include <string>

#include "base/clock.h"
#include "crd/retraining_policy.h"

namespace vto::reconcilers {

struct MetricResult {
  enum class Kind { Value, NoData, Ambiguous, Failed };
  Kind kind = Kind::Failed;
  double value = 0;    // for Value
  std::string detail;  // why, for NoData, Ambiguous and Failed
};

// Classifies the body of a /api/v1/query answer (any HTTP status; the caller bounds its size).
MetricResult classifyPrometheusResponse(int httpStatus, const std::string& body);

// One evaluation: when it was made and what it gave.
struct MetricEval {
  Clock::time_point at;
  MetricResult result;
};

// The trigger's health besides status.metric, kept in the annotation vto.dev/metric-state.
struct MetricHealth {
  std::string reason;   // "" healthy, else MetricQueryAmbiguous | MetricQueryFailed
  std::string message;
  bool operator==(const MetricHealth&) const = default;
};
std::optional<MetricHealth> parseMetricHealth(const std::string& text);
std::string formatMetricHealth(const MetricHealth& health);

struct MetricDecision {
  crd::MetricStatus status;
  MetricHealth health;
  // The nominal time of the run to start now (the evaluation time truncated to pollInterval), when
  // the breach has held for `for` and the trigger is armed.
  std::optional<Clock::time_point> fire;
  std::optional<std::string> failedEvent;  // a Warning MetricQueryFailed, when the budget runs out
  Clock::time_point nextEval;
};

// When the next evaluation is due (at once when there was none).
Clock::time_point nextMetricEval(const crd::MetricTrigger& trigger, const std::optional<crd::MetricStatus>& status,
                                 Clock::time_point now);

// Pure. `eval` nullopt: nothing was evaluated this pass. `armed`: the trigger's last run has ended
// and cooldown has passed since (a breach is not tracked while disarmed: the degraded model keeps
// serving and would otherwise start run after run).
MetricDecision decideMetric(const crd::MetricTrigger& trigger, const std::optional<crd::MetricStatus>& status,
                            const MetricHealth& health, const std::optional<MetricEval>& eval, bool armed,
                            Clock::time_point now);

// The run was planned: the breach is used up; the next one must hold `for` again.
void afterFiring(MetricDecision& decision);

}  // namespace vto::reconcilers
