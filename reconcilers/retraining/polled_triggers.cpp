// The triggers that need a reading from outside (new data in Cloud Storage, a metric in Prometheus:
// docs/retraining.md, rules 7-9) and the manual request. The readings themselves are taken by the
// TriggerPoller off the reconcile workers; here they are only judged, each exactly once.
#include "reconcilers/retraining/decision.h"

namespace vto::reconcilers::retraining {

using controller::EventType;
using crd::TriggerReason;

namespace {

bool polledReason(std::optional<TriggerReason> reason) {
  return reason == TriggerReason::NewData || reason == TriggerReason::Metric;
}

// Rule 9: the least time between two runs started by NewData or Metric; nullopt when none is due.
std::optional<TimePoint> cooldownEnd(const Decision& d) {
  if (d.policy.spec.cooldown.count() <= 0) return std::nullopt;
  std::optional<TimePoint> last;
  for (const auto& child : d.in.children) {
    if (polledReason(child.triggerReason)) last = newer(last, child.created);
  }
  for (const auto& create : d.plan.create) {
    if (polledReason(create.firing.reason)) last = d.in.now;
  }
  if (!last || d.in.now >= *last + d.policy.spec.cooldown) return std::nullopt;
  return *last + d.policy.spec.cooldown;
}

// Starts the run of a polled trigger unless cooldown or concurrency forbids; true when planned.
bool startPolledRun(Decision& d, Firing firing, const std::string& what) {
  const char* reason = firing.reason == TriggerReason::NewData ? "NewData" : "Metric";
  if (auto until = cooldownEnd(d)) {
    d.plan.outcomes.push_back({firing.reason, "skipped_cooldown"});
    d.event(EventType::Normal, "SkippedCooldown",
            std::string(reason) + " trigger (" + what + ") skipped: cooldown (" +
                std::to_string(d.policy.spec.cooldown.count()) + "s) since the last NewData/Metric run lasts until " +
                timeText(*until));
    return false;
  }
  std::string blocking = activeText(d);
  auto outcomeReason = firing.reason;
  auto started = startRun(d, std::move(firing));
  if (started == Start::Started) return true;
  if (started == Start::OverBudget) return false;  // recorded; the data stays pending for next month
  d.plan.outcomes.push_back({outcomeReason, "skipped_active"});
  d.event(EventType::Normal, "RunAlreadyActive",
          std::string(reason) + " trigger (" + what + ") waits: " + blocking + " is still active (concurrencyPolicy " +
              crd::enumName(d.policy.spec.concurrencyPolicy, crd::concurrencyPolicyNames()) + ")");
  return false;
}

// A free nominal time for `reason` at or after `nominal`: nullopt when a run of the same reason
// already has that name (it is this trigger's run, made before a crash); another reason's run moves
// it on by a second.
std::optional<TimePoint> freeNominal(const Decision& d, TimePoint nominal, TriggerReason reason) {
  nominal = std::chrono::floor<std::chrono::seconds>(nominal);
  while (d.taken.count(runNameFor(d.policy.metadata.name, nominal))) {
    auto name = runNameFor(d.policy.metadata.name, nominal);
    for (const auto& child : d.in.children) {
      if (child.name == name && child.triggerReason == reason) return std::nullopt;
    }
    nominal += std::chrono::seconds(1);
  }
  return nominal;
}

// Rule 2 for data: the newest run's watermark counts when status lost it. Returns whether it moved.
bool carryDataWatermark(Decision& d) {
  auto& history = d.history();
  bool moved = false;
  for (const auto& child : d.in.children) {
    if (!child.dataWatermark) continue;
    if (!history.dataWatermark) history.dataWatermark = crd::DataWatermark{};
    auto& mark = *history.dataWatermark;
    if (!mark.timeCreated || *child.dataWatermark > DataPosition{*mark.timeCreated, mark.name}) {
      mark.timeCreated = child.dataWatermark->timeCreated;
      mark.name = child.dataWatermark->name;
      if (!mark.lastPollTime) mark.lastPollTime = child.created;
      moved = true;
    }
  }
  return moved;
}

// The reading to judge this pass: one taken after the last one status records, against the
// watermark status still holds (a listing judged against an older watermark would count data twice).
std::optional<DataPoll> unjudgedDataPoll(const Decision& d, bool watermarkMoved) {
  const auto& poll = d.in.dataPoll;
  if (!poll || watermarkMoved) return std::nullopt;
  const auto& mark = d.in.status.history.dataWatermark;
  if (mark && mark->lastPollTime && poll->at <= *mark->lastPollTime) return std::nullopt;
  return poll;
}

}  // namespace

std::optional<TriggerHealth::Problem> dataProblem(const DataState& state) {
  if (state.pollError.empty()) return std::nullopt;
  return TriggerHealth::Problem{PolicyReason::DataPollFailed, state.pollError};
}

std::optional<TriggerHealth::Problem> metricProblem(const MetricHealth& health) {
  if (health.reason.empty()) return std::nullopt;
  auto reason = health.reason == policyReasonName(PolicyReason::MetricQueryAmbiguous) ? PolicyReason::MetricQueryAmbiguous
                                                                                      : PolicyReason::MetricQueryFailed;
  return TriggerHealth::Problem{reason, health.message};
}

// Rule 7.
void fireNewData(Decision& d) {
  const auto& trigger = *d.policy.spec.triggers.newData;
  DataState state = d.in.dataState.value_or(DataState{});
  auto poll = unjudgedDataPoll(d, carryDataWatermark(d));
  auto decision = decideNewData(trigger, d.history().dataWatermark, state, poll, d.in.now);
  if (decision.pollError) d.event(EventType::Warning, "DataPollFailed", *decision.pollError);
  decision.state.pollError = decision.pollError.value_or(poll ? "" : state.pollError);
  if (decision.fire) {
    std::string what = std::to_string(decision.status.pendingObjects) + " new object(s), " +
                       std::to_string(decision.status.pendingBytes) + " bytes, newest " + decision.fire->name;
    auto nominal = freeNominal(d, decision.fire->timeCreated, TriggerReason::NewData);
    NewDataDecision folded = decision;
    afterFiring(folded, *poll);
    if (!nominal) {
      decision = std::move(folded);  // its run exists already
    } else {
      Firing firing{TriggerReason::NewData, *nominal, {}};
      firing.annotations[crd::kDataWatermarkAnnotation] = timeText(*folded.status.timeCreated);
      firing.annotations[kDataWatermarkNameAnnotation] = folded.status.name;
      if (startPolledRun(d, std::move(firing), what)) decision = std::move(folded);
    }
  }
  d.history().dataWatermark = decision.status;
  d.plan.health.data = dataProblem(decision.state);
  if (decision.state != d.in.dataState) d.plan.dataState = decision.state;
  requeueBy(d, decision.nextPoll);
}

// Rule 8.
void fireMetric(Decision& d) {
  const auto& trigger = *d.policy.spec.triggers.metric;
  MetricHealth previous = d.in.metricHealth.value_or(MetricHealth{});
  // Armed once the last Metric run has ended and cooldown has passed since (and no run the status
  // names is missing from the cache: it may be that run, just created).
  bool armed = true;
  std::optional<TimePoint> lastEnd;
  for (const auto& child : d.in.children) {
    if (child.triggerReason != TriggerReason::Metric) continue;
    if (child.active()) armed = false;
    if (child.ended()) lastEnd = newer(lastEnd, child.endedAt());
  }
  for (const auto& name : d.in.status.active) {
    if (std::none_of(d.in.children.begin(), d.in.children.end(), [&](const ChildRun& c) { return c.name == name; })) {
      armed = false;
    }
  }
  if (lastEnd && d.in.now < *lastEnd + d.policy.spec.cooldown) armed = false;
  // An evaluation is judged once: only one taken after the last one status records.
  auto eval = d.in.metricEval;
  const auto& last = d.in.status.history.metric;
  if (eval && last && last->lastEvalTime && eval->at <= *last->lastEvalTime) eval.reset();
  auto decision = decideMetric(trigger, d.history().metric, previous, eval, armed, d.in.now);
  if (decision.failedEvent) d.event(EventType::Warning, "MetricQueryFailed", *decision.failedEvent);
  if (decision.fire) {
    auto nominal = freeNominal(d, *decision.fire, TriggerReason::Metric);
    std::string what = "value " + (decision.status.lastValue ? std::to_string(*decision.status.lastValue) : "?") +
                       (trigger.below ? " below " + std::to_string(*trigger.below)
                                      : " above " + std::to_string(trigger.above.value_or(0))) +
                       " for " + std::to_string(trigger.forDuration.count()) + "s";
    if (!nominal || startPolledRun(d, Firing{TriggerReason::Metric, *nominal, {}}, what)) afterFiring(decision);
  }
  d.history().metric = decision.status;
  d.plan.health.metric = metricProblem(decision.health);
  if (decision.health != d.in.metricHealth) d.plan.metricHealth = decision.health;
  if (!armed && lastEnd && d.in.now < *lastEnd + d.policy.spec.cooldown) requeueBy(d, *lastEnd + d.policy.spec.cooldown);
  requeueBy(d, decision.nextEval);
}

void fireManual(Decision& d) {
  const auto& annotations = d.policy.metadata.annotations;
  auto found = annotations.find(crd::kRetrainRequestedAnnotation);
  if (found == annotations.end() || found->second.empty()) return;
  const std::string& request = found->second;
  if (request == d.history().lastHandledRetrainRequest) return;
  if (d.policy.spec.suspend) {
    d.event(EventType::Normal, "RetrainRequestPending", "retrain request \"" + request + "\" waits: the policy is suspended");
    return;
  }
  // The handling time names the run; a second that is already taken (a slot) moves it on.
  auto nominal = std::chrono::floor<std::chrono::seconds>(d.in.now);
  while (d.taken.count(runNameFor(d.policy.metadata.name, nominal))) nominal += std::chrono::seconds(1);
  Firing firing{TriggerReason::Manual, nominal, {{kRetrainRequestAnnotation, request}}};
  std::string blocking = activeText(d);
  if (startRun(d, std::move(firing)) != Start::Blocked) {
    // A request over budget is answered (status.lastSkippedTrigger), not held for next month.
    d.history().lastHandledRetrainRequest = request;
    return;
  }
  // Never dropped: the run's end wakes the policy and the request is handled then.
  d.event(EventType::Normal, "RetrainRequestPending",
          "retrain request \"" + request + "\" waits for " + blocking + " to finish (concurrencyPolicy " +
              crd::enumName(d.policy.spec.concurrencyPolicy, crd::concurrencyPolicyNames()) + ")");
}

}  // namespace vto::reconcilers::retraining
