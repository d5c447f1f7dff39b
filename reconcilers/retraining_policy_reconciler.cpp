#include "reconcilers/retraining_policy_reconciler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <set>

#include "base/rfc3339.h"
#include "crd/render.h"
#include "crd/schedule.h"
#include "crd/timestamp.h"
#include "crd/validation.h"
#include "controller/conditions.h"
#include "reconcilers/data_listing.h"
#include "reconcilers/training_run_reconciler.h"
#include "vertex/jwt.h"

namespace vto::reconcilers {

using controller::EventType;
using crd::TriggerReason;
using nlohmann::json;
using TimePoint = Clock::time_point;

namespace {

std::string reasonName(TriggerReason reason) { return crd::enumName(reason, crd::triggerReasonNames()); }

std::optional<TimePoint> timeOrNone(const std::string& text) {
  if (text.empty()) return std::nullopt;
  try {
    return parseRfc3339(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<TimePoint> newer(std::optional<TimePoint> a, std::optional<TimePoint> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

std::string stringAt(const json& object, const char* section, const char* key) {
  auto part = object.find(section);
  if (part == object.end() || !part->is_object()) return "";
  auto value = part->find(key);
  return value != part->end() && value->is_string() ? value->get<std::string>() : "";
}

std::string annotationOf(const json& object, const std::string& key) {
  const auto& meta = object.value("metadata", json::object());
  const auto& annotations = meta.value("annotations", json::object());
  auto found = annotations.find(key);
  return found != annotations.end() && found->is_string() ? found->get<std::string>() : "";
}

// What a pass needs to know of a child run, read leniently: a child that a user edited must not stop
// the policy.
struct Child {
  std::string name;
  std::string phase;  // "" while the run has no status yet
  bool deleting = false;
  std::optional<TimePoint> created;
  std::optional<TimePoint> completed;
  std::optional<TimePoint> triggerTime;
  std::optional<TriggerReason> triggerReason;
  std::string retrainRequest;
  std::optional<DataPosition> dataWatermark;  // on runs of the newData trigger
  std::string baseOutputDirectory;
  bool counted = false;

  bool succeeded() const { return phase == "Succeeded"; }
  bool unsuccessful() const { return phase == "Failed" || phase == "Cancelled" || phase == "Invalid"; }
  bool finished() const { return succeeded() || unsuccessful(); }
  bool active() const { return !finished() && !deleting; }
  // Invalid runs have no completion time; their creation stands in.
  std::optional<TimePoint> endedAt() const { return completed ? completed : created; }
};

bool controlledBy(const json& run, const std::string& uid) {
  const auto& meta = run.value("metadata", json::object());
  for (const auto& owner : meta.value("ownerReferences", json::array())) {
    if (owner.value("uid", "") == uid && owner.value("controller", false)) return true;
  }
  return false;
}

Child readChild(const json& run) {
  Child child;
  const auto& meta = run.value("metadata", json::object());
  child.name = meta.value("name", "");
  child.deleting = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  child.created = timeOrNone(meta.value("creationTimestamp", ""));
  child.phase = stringAt(run, "status", "phase");
  child.completed = timeOrNone(stringAt(run, "status", "completionTime"));
  child.baseOutputDirectory = stringAt(run, "spec", "baseOutputDirectory");
  child.triggerTime = timeOrNone(annotationOf(run, crd::kTriggerTimeAnnotation));
  auto reason = annotationOf(run, crd::kTriggerReasonAnnotation);
  for (const auto& [value, name] : crd::triggerReasonNames()) {
    if (reason == name) child.triggerReason = value;
  }
  child.retrainRequest = annotationOf(run, kRetrainRequestAnnotation);
  if (auto time = timeOrNone(annotationOf(run, crd::kDataWatermarkAnnotation))) {
    child.dataWatermark = DataPosition{*time, annotationOf(run, kDataWatermarkNameAnnotation)};
  }
  child.counted = !annotationOf(run, kCountedAnnotation).empty();
  return child;
}

std::string trimSlash(std::string text) {
  while (!text.empty() && text.back() == '/') text.pop_back();
  return text;
}

std::string modelUriOf(const Child& run) { return trimSlash(run.baseOutputDirectory) + "/model/"; }

// Slots of one schedule, with the jitter applied to "now" rather than to each slot.
class Slots {
 public:
  explicit Slots(const crd::ScheduleTrigger& trigger) : cron_(crd::parseCron(trigger.cron)), zone_(trigger.timeZone) {}

  TimePoint after(TimePoint t) const { return crd::nextScheduleAfter(cron_, zone_, t); }

  // How many slots lie in (from, to], counted up to kMissedCountCap.
  int64_t count(TimePoint from, TimePoint to) const {
    int64_t n = 0;
    for (auto t = after(from); t <= to && n < kMissedCountCap; t = after(t)) ++n;
    return n;
  }

  // The newest `n` slots in (from, to], oldest first. Looks back from `to` in windows that grow four
  // times each step, so a long outage costs a few calls, not one per missed slot.
  std::vector<TimePoint> newest(TimePoint from, TimePoint to, size_t n) const {
    std::chrono::seconds window(60);
    while (true) {
      TimePoint start = to - window <= from ? from : to - window;
      std::deque<TimePoint> found;
      for (auto t = after(start); t <= to; t = after(t)) {
        found.push_back(t);
        if (found.size() > n) found.pop_front();
      }
      if (found.size() >= n || start == from) return {found.begin(), found.end()};
      window *= 4;
    }
  }

 private:
  crd::CronSchedule cron_;
  std::string zone_;
};

std::string timeText(TimePoint t) { return rfc3339Exact(t); }

// Everything one decision works on.
struct Decision {
  const RetrainingObserved& in;
  crd::RetrainingPolicy policy;
  RetrainingPlan plan;
  std::vector<Child> children;  // controlled by the policy
  std::vector<std::string> active;  // names of runs that count against concurrency
  std::set<std::string> taken;  // run names that exist or are planned
  std::string warmStartFrom;

  void event(EventType type, std::string reason, std::string message) {
    plan.events.push_back({type, std::move(reason), std::move(message)});
  }
  void condition(const char* type, bool status, const std::string& reason, const std::string& message) {
    controller::setStatusCondition(
        plan.status.conditions,
        crd::Condition{type, status ? "True" : "False", reason, message, "", policy.metadata.generation}, in.now);
  }
};

// Rule 2: each watermark is the newer of what status says and what the runs' annotations say.
void carryWatermarks(Decision& d) {
  auto& status = d.plan.status;
  const auto& old = d.policy.status;
  const std::string request = d.policy.metadata.annotations.count(crd::kRetrainRequestedAnnotation)
                                  ? d.policy.metadata.annotations.at(crd::kRetrainRequestedAnnotation)
                                  : "";
  const Child* newestSuccess = nullptr;
  for (const auto& child : d.children) {
    if (child.triggerReason == TriggerReason::Schedule) status.lastScheduleTime = newer(status.lastScheduleTime, child.triggerTime);
    if (child.triggerReason && child.triggerTime && (!status.lastTrigger || *child.triggerTime > status.lastTrigger->time)) {
      status.lastTrigger = crd::TriggerRecord{*child.triggerTime, *child.triggerReason};
    }
    if (!request.empty() && child.retrainRequest == request) status.lastHandledRetrainRequest = request;
    if (child.succeeded() && child.endedAt() &&
        (!newestSuccess || *child.endedAt() > *newestSuccess->endedAt())) {
      newestSuccess = &child;
    }
    // Counts: each run once, the first time it is seen finished.
    if (child.finished() && !child.counted) {
      ++(child.succeeded() ? status.counts.succeeded : status.counts.failed);
      d.plan.markCounted.push_back(child.name);
    }
  }
  if (newestSuccess && (!old.lastSuccessfulTime || *newestSuccess->endedAt() > *old.lastSuccessfulTime)) {
    status.lastSuccessfulTime = newestSuccess->endedAt();
    status.lastSuccessfulRun = crd::SuccessfulRun{newestSuccess->name, newestSuccess->endedAt(), modelUriOf(*newestSuccess)};
  }
  if (d.policy.spec.warmStart && status.lastSuccessfulRun) d.warmStartFrom = status.lastSuccessfulRun->modelUri;
}

// The schedule and suspension since when no slot counts as missed; returns the slots that passed while
// the policy was suspended, when it has just been unsuspended (they are reported, never run).
int64_t updateScheduleState(Decision& d, ScheduleState& state, bool known) {
  const auto& spec = d.policy.spec;
  std::string cron = spec.triggers.schedule ? spec.triggers.schedule->cron : "";
  std::string zone = spec.triggers.schedule ? spec.triggers.schedule->timeZone : "";
  int64_t passedWhileSuspended = 0;
  if (!known) {
    state.since = timeOrNone(d.policy.metadata.creationTimestamp);
  } else if (state.cron != cron || state.timeZone != zone) {
    state.since = d.in.now;  // a schedule edit is never "missed" (CronJob #123220)
  } else if (state.suspended && !spec.suspend) {
    if (spec.triggers.schedule && state.since) {
      Slots slots(*spec.triggers.schedule);
      auto from = newer(d.plan.status.lastScheduleTime, state.since);
      passedWhileSuspended = slots.count(*from, d.in.now);
    }
    state.since = d.in.now;  // unsuspending fires nothing missed (CronJob #110919)
  }
  state.cron = cron;
  state.timeZone = zone;
  state.suspended = spec.suspend;
  return passedWhileSuspended;
}

// Creates the run for `firing` if concurrency allows; false when it does not (nothing was planned).
bool startRun(Decision& d, Firing firing) {
  const auto& spec = d.policy.spec;
  size_t running = d.active.size();
  switch (spec.concurrencyPolicy) {
    case crd::ConcurrencyPolicy::Forbid:
      if (running > 0) return false;
      break;
    case crd::ConcurrencyPolicy::Allow:
      if (running >= static_cast<size_t>(std::max(1, spec.maxActiveRuns))) return false;
      break;
    case crd::ConcurrencyPolicy::Replace:
      for (const auto& name : d.active) {
        auto planned = std::find_if(d.plan.create.begin(), d.plan.create.end(),
                                    [&](const auto& c) { return c.run["metadata"]["name"] == name; });
        if (planned != d.plan.create.end()) {
          // Two triggers in one pass: the older one's run is replaced before it exists.
          d.plan.outcomes.push_back({planned->firing.reason, "skipped_active"});
          d.plan.create.erase(planned);
        } else {
          d.plan.remove.push_back({name, "replaced by the run of a newer trigger (concurrencyPolicy Replace)"});
        }
      }
      d.active.clear();
      break;
  }
  auto run = runFromTemplate(d.policy, firing, d.warmStartFrom);
  std::string name = run["metadata"]["name"];
  d.taken.insert(name);
  d.active.push_back(name);
  d.plan.status.lastTrigger = crd::TriggerRecord{firing.nominal, firing.reason};
  d.plan.create.push_back({std::move(run), std::move(firing)});
  return true;
}

std::string activeText(const Decision& d) {
  std::string names;
  for (const auto& name : d.active) names += (names.empty() ? "" : ", ") + name;
  return names;
}

void fireSchedule(Decision& d, const ScheduleState& state) {
  const auto& spec = d.policy.spec;
  const auto& trigger = *spec.triggers.schedule;
  auto& status = d.plan.status;
  Slots slots(trigger);
  auto jitter = crd::jitterOffset(d.policy.metadata.uid, trigger.jitter);
  // A slot is due once its jittered time has come; comparing nominal slots with now - jitter says so.
  TimePoint dueBy = d.in.now - jitter;
  // Slots after the latest of these were missed; time before them never counts (rule 4).
  TimePoint baseline = newer(newer(status.lastScheduleTime, timeOrNone(d.policy.metadata.creationTimestamp)), state.since)
                           .value_or(d.in.now);
  int64_t due = baseline < dueBy ? slots.count(baseline, dueBy) : 0;
  if (due > 0) {
    std::vector<TimePoint> chosen;
    switch (spec.missedRuns) {
      case crd::MissedRunsPolicy::Latest:
        chosen = slots.newest(baseline, dueBy, 1);
        if (due - 1 > kTooManyMissed) {
          d.event(EventType::Warning, "TooManyMissedSchedules",
                  "more than " + std::to_string(kTooManyMissed) + " slots were missed; starting only the newest (" +
                      timeText(chosen.back()) + "). Check the operator's uptime, or set startingDeadlineSeconds");
        }
        break;
      case crd::MissedRunsPolicy::Skip:
        // A slot found alone is on time; with several due, all were missed and none is started.
        if (due == 1) chosen = slots.newest(baseline, dueBy, 1);
        break;
      case crd::MissedRunsPolicy::All:
        chosen = slots.newest(baseline, dueBy, static_cast<size_t>(std::max(1, spec.maxCatchUpRuns)));
        break;
    }
    int64_t notStarted = due - static_cast<int64_t>(chosen.size());
    if (notStarted > 0 && spec.missedRuns != crd::MissedRunsPolicy::Latest) {
      d.event(EventType::Warning, "MissSchedule",
              std::to_string(notStarted) + (due >= kMissedCountCap ? "+" : "") +
                  " missed slot(s) not started (missedRuns " + crd::enumName(spec.missedRuns, crd::missedRunsPolicyNames()) + ")");
    }
    for (auto slot : chosen) {
      if (d.taken.count(runNameFor(d.policy.metadata.name, slot))) continue;  // its run exists already
      if (spec.startingDeadlineSeconds && d.in.now - (slot + jitter) > std::chrono::seconds(*spec.startingDeadlineSeconds)) {
        d.plan.outcomes.push_back({TriggerReason::Schedule, "missed_deadline"});
        d.event(EventType::Warning, "MissSchedule",
                "the slot " + timeText(slot) + " is more than startingDeadlineSeconds (" +
                    std::to_string(*spec.startingDeadlineSeconds) + ") late; it is not started");
        ++notStarted;
        continue;
      }
      Firing firing{TriggerReason::Schedule, slot, {}};
      std::string blocking = activeText(d);
      if (!startRun(d, std::move(firing))) {
        d.plan.outcomes.push_back({TriggerReason::Schedule, "skipped_active"});
        d.event(EventType::Normal, "RunAlreadyActive",
                "skipped the slot " + timeText(slot) + ": " + blocking + " is still active (concurrencyPolicy " +
                    crd::enumName(spec.concurrencyPolicy, crd::concurrencyPolicyNames()) +
                    "); the slot is not run late");
        ++notStarted;
      }
    }
    status.missedSchedules += notStarted;
    status.lastScheduleTime = slots.newest(baseline, dueBy, 1).back();
    baseline = *status.lastScheduleTime;
  }
  auto next = slots.after(std::max(baseline, dueBy));
  status.nextScheduleTime = next + jitter;
  d.plan.requeueAfter = std::max<Clock::duration>(*status.nextScheduleTime - d.in.now, std::chrono::seconds(0));
  if (d.plan.requeueAfter == Clock::duration::zero()) d.plan.requeueAfter = std::chrono::seconds(1);
}

// Rule 9: the least time between two runs started by NewData or Metric; nullopt when none is due.
std::optional<TimePoint> cooldownEnd(const Decision& d) {
  if (d.policy.spec.cooldown.count() <= 0) return std::nullopt;
  std::optional<TimePoint> last;
  for (const auto& child : d.children) {
    if (child.triggerReason == TriggerReason::NewData || child.triggerReason == TriggerReason::Metric) {
      last = newer(last, child.created);
    }
  }
  for (const auto& create : d.plan.create) {
    if (create.firing.reason == TriggerReason::NewData || create.firing.reason == TriggerReason::Metric) last = d.in.now;
  }
  if (!last || d.in.now >= *last + d.policy.spec.cooldown) return std::nullopt;
  return *last + d.policy.spec.cooldown;
}

void requeueBy(Decision& d, TimePoint when) {
  auto after = std::max<Clock::duration>(when - d.in.now, std::chrono::seconds(1));
  if (d.plan.requeueAfter == Clock::duration::zero() || after < d.plan.requeueAfter) d.plan.requeueAfter = after;
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
  if (startRun(d, std::move(firing))) return true;
  d.plan.outcomes.push_back({firing.reason, "skipped_active"});
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
    for (const auto& child : d.children) {
      if (child.name == name && child.triggerReason == reason) return std::nullopt;
    }
    nominal += std::chrono::seconds(1);
  }
  return nominal;
}

std::string annotationValue(const crd::RetrainingPolicy& policy, const char* key) {
  auto found = policy.metadata.annotations.find(key);
  return found == policy.metadata.annotations.end() ? "" : found->second;
}

// Rule 7. Health goes to `health` (reason, message; empty reason = healthy).
void fireNewData(Decision& d, std::pair<std::string, std::string>& health) {
  const auto& trigger = *d.policy.spec.triggers.newData;
  auto& status = d.plan.status;
  auto stateText = annotationValue(d.policy, kDataStateAnnotation);
  DataState state = parseDataState(stateText).value_or(DataState{});
  // Rule 2: the newest run's watermark counts when status lost it.
  for (const auto& child : d.children) {
    if (!child.dataWatermark) continue;
    if (!status.dataWatermark) status.dataWatermark = crd::DataWatermark{};
    auto& mark = *status.dataWatermark;
    if (!mark.timeCreated || *child.dataWatermark > DataPosition{*mark.timeCreated, mark.name}) {
      mark.timeCreated = child.dataWatermark->timeCreated;
      mark.name = child.dataWatermark->name;
      if (!mark.lastPollTime) mark.lastPollTime = child.created;
    }
  }
  auto decision = decideNewData(trigger, status.dataWatermark, state, d.in.dataPoll, d.in.now);
  if (decision.pollError) {
    health = {"DataPollFailed", *decision.pollError};
    d.event(EventType::Warning, "DataPollFailed", *decision.pollError);
  } else if (d.in.dataPoll) {
    health = {};
  } else if (!state.pollError.empty()) {
    health = {"DataPollFailed", state.pollError};
  }
  decision.state.pollError = decision.pollError.value_or(d.in.dataPoll ? "" : state.pollError);
  if (decision.fire) {
    std::string what = std::to_string(decision.status.pendingObjects) + " new object(s), " +
                       std::to_string(decision.status.pendingBytes) + " bytes, newest " + decision.fire->name;
    auto nominal = freeNominal(d, decision.fire->timeCreated, TriggerReason::NewData);
    NewDataDecision folded = decision;
    afterFiring(folded, *d.in.dataPoll);
    if (!nominal) {
      decision = std::move(folded);  // its run exists already
    } else {
      Firing firing{TriggerReason::NewData, *nominal, {}};
      firing.annotations[crd::kDataWatermarkAnnotation] = timeText(*folded.status.timeCreated);
      firing.annotations[kDataWatermarkNameAnnotation] = folded.status.name;
      if (startPolledRun(d, std::move(firing), what)) decision = std::move(folded);
    }
  }
  status.dataWatermark = decision.status;
  if (formatDataState(decision.state) != stateText) d.plan.dataState = formatDataState(decision.state);
  requeueBy(d, decision.nextPoll);
}

// Rule 8.
void fireMetric(Decision& d, std::pair<std::string, std::string>& health) {
  const auto& trigger = *d.policy.spec.triggers.metric;
  auto& status = d.plan.status;
  auto healthText = annotationValue(d.policy, kMetricHealthAnnotation);
  MetricHealth previous = parseMetricHealth(healthText).value_or(MetricHealth{});
  // Armed once the last Metric run has ended and cooldown has passed since (and no run the status
  // names is missing from the cache: it may be that run, just created).
  bool armed = true;
  std::optional<TimePoint> lastEnd;
  for (const auto& child : d.children) {
    if (child.triggerReason != TriggerReason::Metric) continue;
    if (child.active()) armed = false;
    if (child.finished()) lastEnd = newer(lastEnd, child.endedAt());
  }
  for (const auto& name : d.policy.status.active) {
    if (std::none_of(d.children.begin(), d.children.end(), [&](const Child& c) { return c.name == name; })) armed = false;
  }
  if (lastEnd && d.in.now < *lastEnd + d.policy.spec.cooldown) armed = false;
  auto decision = decideMetric(trigger, status.metric, previous, d.in.metricEval, armed, d.in.now);
  if (decision.failedEvent) d.event(EventType::Warning, "MetricQueryFailed", *decision.failedEvent);
  if (decision.fire) {
    auto nominal = freeNominal(d, *decision.fire, TriggerReason::Metric);
    std::string what = "value " + (decision.status.lastValue ? std::to_string(*decision.status.lastValue) : "?") +
                       (trigger.below ? " below " + std::to_string(*trigger.below)
                                      : " above " + std::to_string(trigger.above.value_or(0))) +
                       " for " + std::to_string(trigger.forDuration.count()) + "s";
    if (!nominal || startPolledRun(d, Firing{TriggerReason::Metric, *nominal, {}}, what)) afterFiring(decision);
  }
  status.metric = decision.status;
  health = {decision.health.reason, decision.health.message};
  if (formatMetricHealth(decision.health) != healthText) d.plan.metricHealth = formatMetricHealth(decision.health);
  if (!armed && lastEnd && d.in.now < *lastEnd + d.policy.spec.cooldown) requeueBy(d, *lastEnd + d.policy.spec.cooldown);
  requeueBy(d, decision.nextEval);
}

// TriggersHealthy: False while the newData poll or the metric query fails.
void triggersHealthy(Decision& d, const std::pair<std::string, std::string>& data,
                     const std::pair<std::string, std::string>& metric) {
  const auto& triggers = d.policy.spec.triggers;
  if (!triggers.newData && !triggers.metric) {
    std::erase_if(d.plan.status.conditions, [](const crd::Condition& c) { return c.type == "TriggersHealthy"; });
    return;
  }
  if (!data.first.empty() && !metric.first.empty()) {
    d.condition("TriggersHealthy", false, data.first, "newData: " + data.second + "; metric: " + metric.second);
  } else if (!data.first.empty()) {
    d.condition("TriggersHealthy", false, data.first, data.second);
  } else if (!metric.first.empty()) {
    d.condition("TriggersHealthy", false, metric.first, metric.second);
  } else {
    d.condition("TriggersHealthy", true, "Healthy", "");
  }
}

void fireManual(Decision& d) {
  const auto& annotations = d.policy.metadata.annotations;
  auto found = annotations.find(crd::kRetrainRequestedAnnotation);
  if (found == annotations.end() || found->second.empty()) return;
  const std::string& request = found->second;
  if (request == d.plan.status.lastHandledRetrainRequest) return;
  if (d.policy.spec.suspend) {
    d.event(EventType::Normal, "RetrainRequestPending",
            "retrain request \"" + request + "\" waits: the policy is suspended");
    return;
  }
  // The handling time names the run; a second that is already taken (a slot) moves it on.
  auto nominal = std::chrono::floor<std::chrono::seconds>(d.in.now);
  while (d.taken.count(runNameFor(d.policy.metadata.name, nominal))) nominal += std::chrono::seconds(1);
  Firing firing{TriggerReason::Manual, nominal, {{kRetrainRequestAnnotation, request}}};
  std::string blocking = activeText(d);
  if (startRun(d, std::move(firing))) {
    d.plan.status.lastHandledRetrainRequest = request;
    return;
  }
  // Never dropped: the run's end wakes the policy and the request is handled then.
  d.event(EventType::Normal, "RetrainRequestPending",
          "retrain request \"" + request + "\" waits for " + blocking + " to finish (concurrencyPolicy " +
              crd::enumName(d.policy.spec.concurrencyPolicy, crd::concurrencyPolicyNames()) + ")");
}

// Keeps the newest successfulRunsHistoryLimit succeeded and failedRunsHistoryLimit unsuccessful runs.
void pruneHistory(Decision& d) {
  auto prune = [&](bool (Child::*kind)() const, int32_t limit, const char* what) {
    std::vector<const Child*> runs;
    for (const auto& child : d.children)
      if ((child.*kind)() && !child.deleting) runs.push_back(&child);
    std::sort(runs.begin(), runs.end(), [](const Child* a, const Child* b) {
      return std::pair(a->endedAt(), a->name) > std::pair(b->endedAt(), b->name);
    });
    for (size_t i = static_cast<size_t>(std::max(0, limit)); i < runs.size(); ++i) {
      d.plan.remove.push_back({runs[i]->name, std::string("beyond ") + what + " (" + std::to_string(limit) + ")"});
    }
  };
  prune(&Child::succeeded, d.policy.spec.successfulRunsHistoryLimit, "successfulRunsHistoryLimit");
  prune(&Child::unsuccessful, d.policy.spec.failedRunsHistoryLimit, "failedRunsHistoryLimit");
}

void invalid(Decision& d, const std::string& reason, const std::string& message) {
  d.plan.invalid = true;
  d.plan.status.active.clear();
  for (const auto& child : d.children)
    if (child.active()) d.plan.status.active.push_back(child.name);
  d.plan.status.nextScheduleTime.reset();
  d.condition("Valid", false, reason, message);
  d.condition("Ready", false, reason, message);
  d.event(EventType::Warning, reason, message);
}

// The first error among the decoder's, the validator's and the schedule calculator's, with its reason.
std::optional<std::pair<std::string, std::string>> firstError(const crd::RetrainingPolicy& policy) {
  const auto& schedule = policy.spec.triggers.schedule;
  if (schedule) {
    try {
      crd::checkTimeZone(schedule->timeZone);  // first, for CronJob's own reason
    } catch (const std::exception& e) {
      return std::pair{"UnknownTimeZone", std::string(e.what())};
    }
  }
  for (const auto& finding : crd::validate(policy)) {
    if (finding.severity == crd::Severity::Error) return std::pair{"InvalidSpec", crd::formatFinding(finding)};
  }
  if (schedule) {
    try {
      crd::parseCron(schedule->cron);
    } catch (const std::exception& e) {
      return std::pair{"InvalidSpec", std::string(e.what())};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ScheduleState> parseScheduleState(const std::string& text) {
  auto value = json::parse(text, nullptr, false);
  if (!value.is_object()) return std::nullopt;
  ScheduleState state;
  state.cron = value.value("cron", "");
  state.timeZone = value.value("timeZone", "");
  state.suspended = value.value("suspended", false);
  state.since = timeOrNone(value.value("since", ""));
  return state;
}

std::string formatScheduleState(const ScheduleState& state) {
  json value = {{"cron", state.cron}, {"timeZone", state.timeZone}, {"suspended", state.suspended}};
  if (state.since) value["since"] = timeText(*state.since);
  return value.dump();
}

const controller::Resource& retrainingPolicyResource() {
  static const controller::Resource resource{"vto.dev", "v1alpha1", "retrainingpolicies", true};
  return resource;
}

std::string runNameFor(const std::string& policy, Clock::time_point nominal) {
  return policy + "-" + std::to_string(std::chrono::floor<std::chrono::seconds>(nominal).time_since_epoch().count());
}

json runFromTemplate(const crd::RetrainingPolicy& policy, const Firing& firing, const std::string& warmStartFrom) {
  const std::string name = runNameFor(policy.metadata.name, firing.nominal);
  crd::TrainingRunSpec spec = policy.spec.templ.spec;
  spec.baseOutputDirectory = trimSlash(spec.baseOutputDirectory) + "/" + name;

  json labels = json::object(), annotations = json::object();
  for (const auto& [k, v] : policy.spec.templ.labels) labels[k] = v;
  labels[crd::kRetrainingPolicyLabel] = policy.metadata.name;
  for (const auto& [k, v] : policy.spec.templ.annotations) annotations[k] = v;
  for (const auto& [k, v] : firing.annotations) annotations[k] = v;
  annotations[crd::kTriggerReasonAnnotation] = reasonName(firing.reason);
  annotations[crd::kTriggerTimeAnnotation] = timeText(firing.nominal);
  if (!warmStartFrom.empty()) annotations[crd::kWarmStartFromAnnotation] = warmStartFrom;
  return {
      {"apiVersion", crd::kApiVersion},
      {"kind", "TrainingRun"},
      {"metadata",
       {{"name", name},
        {"namespace", policy.metadata.namespace_},
        {"labels", labels},
        {"annotations", annotations},
        {"ownerReferences",
         json::array({{{"apiVersion", crd::kApiVersion},
                       {"kind", crd::kRetrainingPolicyKind},
                       {"name", policy.metadata.name},
                       {"uid", policy.metadata.uid},
                       {"controller", true},
                       {"blockOwnerDeletion", true}}})}}},
      {"spec", crd::encodeTrainingRunSpec(spec)},
  };
}

RetrainingPlan decideRetraining(const RetrainingObserved& observed) {
  Decision d{observed, {}, {}, {}, {}, {}, {}};
  try {
    d.policy = crd::decodeRetrainingPolicy(observed.policy);
  } catch (const std::exception& e) {
    d.policy.metadata = crd::decodeObjectMeta(observed.policy.value("metadata", json::object()), "metadata");
    try {
      d.policy.status = crd::decodeRetrainingPolicyStatus(observed.policy.value("status", json::object()), "status");
    } catch (const std::exception&) {
    }
    d.plan.status = d.policy.status;
    invalid(d, "InvalidSpec", e.what());
    return d.plan;
  }
  auto& status = d.plan.status;
  status = d.policy.status;
  status.observedGeneration = d.policy.metadata.generation;
  for (const auto& run : observed.children) {
    if (!controlledBy(run, d.policy.metadata.uid)) continue;
    d.children.push_back(readChild(run));
    d.taken.insert(d.children.back().name);
    if (d.children.back().active()) d.active.push_back(d.children.back().name);
  }
  if (auto error = firstError(d.policy)) {
    invalid(d, error->first, error->second);
    return d.plan;
  }
  if (observed.tenancyViolation) {
    invalid(d, "TenantPolicyViolation", observed.tenancyViolation->message);
    return d.plan;
  }

  const auto& annotations = d.policy.metadata.annotations;
  auto stateText = annotations.count(kScheduleStateAnnotation) ? annotations.at(kScheduleStateAnnotation) : "";
  auto previousState = parseScheduleState(stateText);
  ScheduleState state = previousState.value_or(ScheduleState{});
  carryWatermarks(d);
  int64_t passedWhileSuspended = updateScheduleState(d, state, previousState.has_value());
  for (int64_t i = 0; i < std::min<int64_t>(passedWhileSuspended, kMissedCountCap); ++i) {
    d.plan.outcomes.push_back({TriggerReason::Schedule, "suspended"});
  }

  const auto& spec = d.policy.spec;
  status.nextScheduleTime.reset();
  if (spec.triggers.schedule && !spec.suspend) fireSchedule(d, state);
  // Suspended: no polls, no requeue for them; status and TriggersHealthy stay as they were.
  if (!spec.suspend) {
    std::pair<std::string, std::string> dataHealth, metricHealth;
    if (spec.triggers.newData) fireNewData(d, dataHealth);
    if (spec.triggers.metric) fireMetric(d, metricHealth);
    triggersHealthy(d, dataHealth, metricHealth);
  }
  fireManual(d);
  pruneHistory(d);
  if (!previousState || *previousState != state) d.plan.scheduleState = formatScheduleState(state);

  status.active.clear();
  for (const auto& name : d.active) status.active.push_back(name);
  d.condition("Valid", true, "Valid", "");
  d.condition("Suspended", spec.suspend, spec.suspend ? "Suspended" : "NotSuspended",
              spec.suspend ? "suspend is true: no new runs start; running ones go on" : "");
  // A name conflict (set by act) stays until a run is created again.
  const auto* ready = controller::findStatusCondition(d.policy.status.conditions, "Ready");
  if (ready && ready->status == "False" && ready->reason == "RunNameConflict" && d.plan.create.empty()) {
    d.condition("Ready", false, ready->reason, ready->message);
  } else {
    std::string next = status.nextScheduleTime ? "next run at " + timeText(*status.nextScheduleTime)
                                               : (spec.suspend                                       ? "suspended"
                                                  : spec.triggers.newData || spec.triggers.metric ? "no schedule: runs start on new data, a metric breach or request"
                                                                                                   : "no schedule: runs start on request");
    d.condition("Ready", true, "Reconciled", next);
  }
  static const std::vector<std::string> order = {"Valid", "Ready", "TriggersHealthy", "Suspended"};
  std::stable_sort(status.conditions.begin(), status.conditions.end(), [](const auto& a, const auto& b) {
    return std::find(order.begin(), order.end(), a.type) < std::find(order.begin(), order.end(), b.type);
  });
  return d.plan;
}

RetrainingPolicyReconciler::RetrainingPolicyReconciler(const controller::ObjectCache& policies,
                                                       const controller::ObjectCache& runs,
                                                       controller::KubeClient& kube,
                                                       controller::EventRecorder& events, const Clock& clock,
                                                       metrics::RetrainingMetrics* metrics, TriggerClients clients,
                                                       PolicyTenancy tenancy)
    : policies_(policies),
      runs_(runs),
      kube_(kube),
      events_(events),
      clock_(clock),
      metrics_(metrics),
      clients_(clients),
      tenancy_(std::move(tenancy)),
      namespaces_(kube, clock, tenancy_.rules) {}

std::string RetrainingPolicyReconciler::bearerToken(const std::string& ns, const crd::SecretKeyRef& ref) {
  static const controller::Resource secrets{"", "v1", "secrets", true};
  json secret;
  try {
    secret = kube_.get(secrets, ns, ref.name);
  } catch (const controller::ApiError& e) {
    throw std::runtime_error("cannot read the Secret " + ns + "/" + ref.name + " named in bearerTokenSecret (" +
                             std::string(e.isNotFound() ? "it does not exist" : "the API server refused") +
                             "); create it, or give the operator get on it");
  }
  auto data = secret.value("data", json::object());
  auto value = data.find(ref.key);
  if (value == data.end() || !value->is_string()) {
    throw std::runtime_error("the Secret " + ns + "/" + ref.name + " has no key \"" + ref.key +
                             "\"; set bearerTokenSecret.key to one of its keys");
  }
  // Secret data is standard base64; the decoder reads the URL alphabet.
  std::string text = value->get<std::string>();
  std::replace(text.begin(), text.end(), '+', '-');
  std::replace(text.begin(), text.end(), '/', '_');
  std::string token;
  try {
    token = vertex::base64UrlDecode(text);
  } catch (const std::exception&) {
    throw std::runtime_error("the Secret " + ns + "/" + ref.name + " key \"" + ref.key + "\" is not base64");
  }
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  return token;
}

std::optional<crd::TenancyViolation> RetrainingPolicyReconciler::tenancyViolation(const crd::RetrainingPolicy& policy) {
  if (tenancy_.rules.empty()) return std::nullopt;
  auto ns = namespaces_.get(policy.metadata.namespace_);
  return crd::decidePolicyTenancy(policy.spec, tenancy_.defaults, ns, tenancy_.rules).violation;
}

json RetrainingPolicyReconciler::pollTriggers(const json& cached, crd::RetrainingPolicy policy,
                                              RetrainingObserved& observed) {
  const auto& triggers = policy.spec.triggers;
  if (policy.spec.suspend || (!triggers.newData && !triggers.metric)) return cached;
  auto now = observed.now;
  auto dataDue = [&](const crd::RetrainingPolicy& p) {
    if (!p.spec.triggers.newData) return false;
    auto state = parseDataState(annotationValue(p, kDataStateAnnotation)).value_or(DataState{});
    return nextDataPoll(*p.spec.triggers.newData, p.status.dataWatermark, state, now) <= now;
  };
  auto metricDue = [&](const crd::RetrainingPolicy& p) {
    return p.spec.triggers.metric && nextMetricEval(*p.spec.triggers.metric, p.status.metric, now) <= now;
  };
  if (!dataDue(policy) && !metricDue(policy)) return cached;
  // The cache may not show this process's last status write yet; a poll judges against the latest.
  json fresh = kube_.get(retrainingPolicyResource(), policy.metadata.namespace_, policy.metadata.name);
  try {
    policy = crd::decodeRetrainingPolicy(fresh);
  } catch (const std::exception&) {
    return fresh;
  }
  if (dataDue(policy)) {
    if (clients_.gcs == nullptr) {
      observed.dataPoll = DataPoll{now, std::nullopt, "this operator has no Cloud Storage client configured"};
    } else {
      auto state = parseDataState(annotationValue(policy, kDataStateAnnotation)).value_or(DataState{});
      observed.dataPoll = pollNewData(*clients_.gcs, *policy.spec.triggers.newData, policy.status.dataWatermark, state,
                                      clock_);
      observed.dataPoll->at = now;  // the pass's time, so decide stays a function of `now`
    }
  }
  if (metricDue(policy)) {
    const auto& trigger = *policy.spec.triggers.metric;
    MetricEval eval{now, {}};
    try {
      if (clients_.prometheus == nullptr) throw std::runtime_error("this operator has no Prometheus client configured");
      std::string token = trigger.bearerTokenSecret ? bearerToken(policy.metadata.namespace_, *trigger.bearerTokenSecret) : "";
      auto response = clients_.prometheus->instantQuery(trigger.prometheusUrl, trigger.query, token);
      eval.result = classifyPrometheusResponse(response.status, response.body);
    } catch (const std::exception& e) {
      eval.result = MetricResult{MetricResult::Kind::Failed, 0, e.what()};
    }
    observed.metricEval = eval;
  }
  return fresh;
}

controller::Result RetrainingPolicyReconciler::reconcile(const controller::ObjectKey& key) {
  auto cached = policies_.get(key);
  if (!cached) {
    if (metrics_) metrics_->forgetPolicy(key.ns, key.name);
    std::lock_guard guard(countedMutex_);
    countedUnseen_.erase(key);
    return {};  // deleted: the garbage collector removes the runs it owned
  }
  const auto& meta = (*cached)["metadata"];
  if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) return {};
  RetrainingObserved observed{*cached, {}, clock_.now(), {}, {}, {}};
  for (const auto& run : runs_.byLabel(key.name)) {
    if ((*run)["metadata"].value("namespace", "") == key.ns) observed.children.push_back(*run);
  }
  overlayCounted(key, observed.children);
  std::optional<crd::RetrainingPolicy> decoded;
  try {
    decoded = crd::decodeRetrainingPolicy(*cached);
  } catch (const std::exception&) {
    // decide reports it; nothing is polled for a policy that does not decode
  }
  // Tenancy first: a refused data prefix is never listed with the operator's identity.
  if (decoded) observed.tenancyViolation = tenancyViolation(*decoded);
  if (decoded && !observed.tenancyViolation) observed.policy = pollTriggers(*cached, std::move(*decoded), observed);
  auto plan = decideRetraining(observed);
  spdlog::debug("retrainingpolicy {}: at {} {} run(s) to create, {} to delete, requeue in {} ms", key.str(),
                timeText(observed.now), plan.create.size(), plan.remove.size(),
                std::chrono::duration_cast<std::chrono::milliseconds>(plan.requeueAfter).count());
  act(observed.policy, plan);
  rememberCounted(key, plan.markCounted);
  controller::Result result;
  result.requeueAfter = plan.requeueAfter;
  return result;
}

void RetrainingPolicyReconciler::overlayCounted(const controller::ObjectKey& policy,
                                                std::vector<json>& children) {
  std::lock_guard guard(countedMutex_);
  auto found = countedUnseen_.find(policy);
  if (found == countedUnseen_.end()) return;
  std::set<std::string> stillUnseen;
  for (auto& run : children) {
    std::string name = run["metadata"].value("name", "");
    if (!found->second.count(name) || !annotationOf(run, kCountedAnnotation).empty()) continue;
    run["metadata"]["annotations"][kCountedAnnotation] = "true";
    stillUnseen.insert(name);
  }
  // Runs the cache shows marked, or no longer shows at all, need no overlay any more.
  if (stillUnseen.empty()) {
    countedUnseen_.erase(found);
  } else {
    found->second = stillUnseen;
  }
}

void RetrainingPolicyReconciler::rememberCounted(const controller::ObjectKey& policy,
                                                 const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::lock_guard guard(countedMutex_);
  countedUnseen_[policy].insert(names.begin(), names.end());
}

void RetrainingPolicyReconciler::act(const json& cached, RetrainingPlan& plan) {
  json policy = cached;
  const std::string ns = policy["metadata"].value("namespace", "");
  const std::string name = policy["metadata"].value("name", "");
  // The baseline first: were this pass to stop here, the next one sees the edit as made now, which can
  // only skip slots, never replay one.
  if (plan.scheduleState) {
    json patch = {{"metadata", {{"annotations", {{kScheduleStateAnnotation, *plan.scheduleState}}}}}};
    auto updated = kube_.patch(retrainingPolicyResource(), ns, name, controller::PatchType::Merge, patch);
    policy["metadata"] = updated["metadata"];
  }
  for (const auto& create : plan.create) {
    const std::string runName = create.run["metadata"]["name"];
    const std::string reason = reasonName(create.firing.reason);
    std::string outcome = "created";
    try {
      kube_.create(trainingRunResource(), ns, create.run);
      events_.event(policy, EventType::Normal, "SuccessfulCreate",
                    "created run " + runName + " (" + reason + " trigger of " + timeText(create.firing.nominal) + ")");
      if (metrics_ && create.firing.reason == TriggerReason::Schedule) {
        metrics_->scheduleSkew(std::chrono::duration<double>(clock_.now() - create.firing.nominal).count());
      }
    } catch (const controller::ApiError& e) {
      if (!e.isAlreadyExists()) throw;
      auto existing = kube_.get(trainingRunResource(), ns, runName);
      if (controlledBy(existing, policy["metadata"].value("uid", ""))) {
        outcome = "deduplicated";  // a pass before a crash, or another replica, created it
      } else {
        outcome = "name_conflict";
        std::string message = "a TrainingRun named " + runName +
                              " exists and is not controlled by this policy; delete or rename it so the " + reason +
                              " trigger of " + timeText(create.firing.nominal) + " can run";
        events_.event(policy, EventType::Warning, "RunNameConflict", message);
        std::erase(plan.status.active, runName);
        controller::setStatusCondition(plan.status.conditions,
                                       crd::Condition{"Ready", "False", "RunNameConflict", message, "",
                                                      policy["metadata"].value("generation", int64_t{0})},
                                       clock_.now());
      }
    }
    if (metrics_ && outcome != "name_conflict") metrics_->trigger(ns, name, reason, outcome);
  }
  auto encoded = crd::encodeRetrainingPolicyStatus(plan.status);
  if (!policy.contains("status") || policy["status"] != encoded) {
    kube_.updateStatusVersion(retrainingPolicyResource(), ns, controller::statusWriteBody(policy, std::move(encoded)));
  }
  for (const auto& runName : plan.markCounted) {
    json patch = {{"metadata", {{"annotations", {{kCountedAnnotation, "true"}}}}}};
    try {
      kube_.patch(trainingRunResource(), ns, runName, controller::PatchType::Merge, patch);
    } catch (const controller::ApiError& e) {
      if (!e.isNotFound()) throw;
    }
  }
  for (const auto& run : plan.remove) {
    try {
      kube_.remove(trainingRunResource(), ns, run.name);
      events_.event(policy, EventType::Normal, "SuccessfulDelete", "deleted run " + run.name + ": " + run.why);
    } catch (const controller::ApiError& e) {
      if (!e.isNotFound()) throw;
    }
  }
  // After the status: a state whose watermark is not the status's is ignored, never a replay.
  json annotations = json::object();
  if (plan.dataState) annotations[kDataStateAnnotation] = *plan.dataState;
  if (plan.metricHealth) annotations[kMetricHealthAnnotation] = *plan.metricHealth;
  if (!annotations.empty()) {
    json patch = {{"metadata", {{"annotations", annotations}}}};
    kube_.patch(retrainingPolicyResource(), ns, name, controller::PatchType::Merge, patch);
  }
  controller::recordEvents(events_, policy, plan.events);
  recordMetrics(policy, plan);
}

void RetrainingPolicyReconciler::recordMetrics(const json& policy, const RetrainingPlan& plan) {
  if (!metrics_) return;
  const std::string ns = policy["metadata"].value("namespace", "");
  const std::string name = policy["metadata"].value("name", "");
  for (const auto& outcome : plan.outcomes) metrics_->trigger(ns, name, reasonName(outcome.reason), outcome.outcome);
  auto seconds = [](const std::optional<TimePoint>& t) -> std::optional<double> {
    if (!t) return std::nullopt;
    return std::chrono::duration<double>(t->time_since_epoch()).count();
  };
  const auto& status = plan.status;
  metrics_->policyState(ns, name, seconds(status.nextScheduleTime), seconds(status.lastScheduleTime),
                        seconds(status.lastSuccessfulTime), static_cast<int>(status.active.size()));
  const auto* healthy = controller::findStatusCondition(status.conditions, "TriggersHealthy");
  auto healthOf = [&](bool present, const char* prefix) -> std::optional<bool> {
    if (!present) return std::nullopt;
    if (!healthy || healthy->status == "True") return true;
    bool both = healthy->message.rfind("newData: ", 0) == 0;
    return !(both || healthy->reason.rfind(prefix, 0) == 0);
  };
  bool data = status.dataWatermark.has_value();
  bool metric = status.metric.has_value();
  std::optional<double> value, pendingObjects, pendingBytes;
  if (metric && status.metric->lastValue) value = *status.metric->lastValue;
  if (data) {
    pendingObjects = static_cast<double>(status.dataWatermark->pendingObjects);
    pendingBytes = static_cast<double>(status.dataWatermark->pendingBytes);
  }
  metrics_->triggerState(ns, name, healthOf(data, "DataPoll"), healthOf(metric, "MetricQuery"), value, pendingObjects,
                         pendingBytes);
}

}  // namespace vto::reconcilers
