#include "reconcilers/retraining/decide.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "base/json_fields.h"
#include "base/money.h"
#include "base/rfc3339.h"
#include "controller/conditions.h"
#include "crd/render.h"
#include "crd/schedule.h"
#include "crd/validation.h"
#include "governance/budget.h"
#include "reconcilers/retraining/decision.h"

namespace vto::reconcilers {

using controller::EventType;
using crd::TriggerReason;
using nlohmann::json;
using retraining::Decision;
using retraining::TimePoint;

namespace retraining {

std::string timeText(TimePoint t) { return rfc3339Exact(t); }

std::optional<TimePoint> newer(std::optional<TimePoint> a, std::optional<TimePoint> b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

void requeueBy(Decision& d, TimePoint when) {
  auto after = std::max<Clock::duration>(when - d.in.now, std::chrono::seconds(1));
  if (d.plan.requeueAfter == Clock::duration::zero() || after < d.plan.requeueAfter) d.plan.requeueAfter = after;
}

void Decision::condition(PolicyCondition type, bool status, PolicyReason reason, const std::string& message) {
  keepCondition(type);  // its lastTransitionTime carries over while its status stays
  controller::setStatusCondition(plan.status.conditions,
                                 crd::Condition{policyConditionName(type), status ? "True" : "False",
                                                policyReasonName(reason), message, std::nullopt,
                                                policy.metadata.generation},
                                 in.now);
}

void Decision::keepCondition(PolicyCondition type) {
  const char* name = policyConditionName(type);
  if (controller::findStatusCondition(plan.status.conditions, name)) return;
  if (const auto* old = controller::findStatusCondition(in.status.conditions, name)) plan.status.conditions.push_back(*old);
}

namespace {

// Whether spec.budget is spent; when it is, the skip is recorded with the figures.
bool overBudget(Decision& d, const Firing& firing) {
  const auto& spec = d.policy.spec;
  if (spec.budgetMonthlyUsd.empty()) return false;
  auto limit = Usd::parse(spec.budgetMonthlyUsd);
  const auto& spend = d.history().spend;
  if (!limit || !spend) return false;  // validated before; a spend is always there with a budget
  if (spend->estimatedUsd < *limit) return false;
  const std::string reason = crd::enumName(firing.reason, crd::triggerReasonNames());
  std::string message = "the runs of " + spend->month + " cost " + spend->estimatedUsd.display() + " of " +
                        limit->display() + " (spec.budget.monthlyUsd): the " + reason + " trigger of " +
                        timeText(firing.nominal) + " creates no run. Raise the budget, or runs start again next month";
  d.plan.outcomes.push_back({firing.reason, "skipped_budget"});
  d.event(controller::EventType::Warning, "BudgetExceeded", message);
  d.history().lastSkippedTrigger = crd::SkippedTrigger{firing.nominal, firing.reason, "BudgetExceeded", message};
  return true;
}

}  // namespace

Start startRun(Decision& d, Firing firing) {
  const auto& spec = d.policy.spec;
  if (overBudget(d, firing)) return Start::OverBudget;
  size_t running = d.active.size();
  switch (spec.concurrencyPolicy) {
    case crd::ConcurrencyPolicy::Forbid:
      if (running > 0) return Start::Blocked;
      break;
    case crd::ConcurrencyPolicy::Allow:
      if (running >= static_cast<size_t>(std::max(1, spec.maxActiveRuns))) return Start::Blocked;
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
  d.history().lastTrigger = crd::TriggerRecord{firing.nominal, firing.reason};
  d.plan.create.push_back({std::move(run), std::move(firing)});
  return Start::Started;
}

std::string activeText(const Decision& d) {
  std::string names;
  for (const auto& name : d.active) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace retraining

namespace {

std::string trimSlash(std::string text) {
  while (!text.empty() && text.back() == '/') text.pop_back();
  return text;
}

// The one way an annotation is read: its value, or "" when absent.
std::string annotationOf(const crd::ObjectMeta& meta, const std::string& key) {
  auto found = meta.annotations.find(key);
  return found == meta.annotations.end() ? "" : found->second;
}

bool controlledBy(const json& run, const std::string& uid) {
  const auto& meta = run.value("metadata", json::object());
  for (const auto& owner : meta.value("ownerReferences", json::array())) {
    if (stringField(owner, "uid") == uid && owner.value("controller", false)) return true;
  }
  return false;
}

std::string stringAt(const json& object, const char* section, const char* key) {
  auto part = object.find(section);
  if (part == object.end() || !part->is_object()) return "";
  auto value = part->find(key);
  return value != part->end() && value->is_string() ? value->get<std::string>() : "";
}

ChildRun readChild(const json& run) {
  ChildRun child;
  auto meta = crd::decodeObjectMeta(run.value("metadata", json::object()), "metadata");
  child.name = meta.name;
  child.resourceVersion = meta.resourceVersion;
  child.deleting = !meta.deletionTimestamp.empty();
  child.created = parseRfc3339OrNone(meta.creationTimestamp);
  auto phase = stringAt(run, "status", "phase");
  for (const auto& [value, name] : crd::phaseNames()) {
    if (phase == name) child.phase = value;
  }
  child.completed = parseRfc3339OrNone(stringAt(run, "status", "completionTime"));
  child.baseOutputDirectory = stringAt(run, "spec", "baseOutputDirectory");
  child.triggerTime = parseRfc3339OrNone(annotationOf(meta, crd::kTriggerTimeAnnotation));
  auto reason = annotationOf(meta, crd::kTriggerReasonAnnotation);
  for (const auto& [value, name] : crd::triggerReasonNames()) {
    if (reason == name) child.triggerReason = value;
  }
  child.retrainRequest = annotationOf(meta, kRetrainRequestAnnotation);
  if (auto time = parseRfc3339OrNone(annotationOf(meta, crd::kDataWatermarkAnnotation))) {
    child.dataWatermark = DataPosition{*time, annotationOf(meta, kDataWatermarkNameAnnotation)};
  }
  child.counted = !annotationOf(meta, kCountedAnnotation).empty();
  if (auto status = run.find("status"); status != run.end() && status->is_object()) {
    if (auto cost = status->find("cost"); cost != status->end() && cost->is_object()) {
      if (auto usd = cost->find("estimatedUsd"); usd != cost->end() && usd->is_string()) child.costUsd = Usd::parse(usd->get<std::string>());
    }
  }
  auto spec = run.find("spec");
  child.registersModel = spec != run.end() && spec->is_object() && spec->contains("model");
  // status.model counts once ModelRegistered is True; a model status that does not decode is no model.
  auto status = run.find("status");
  if (child.registersModel && status != run.end() && status->is_object() && status->contains("model")) {
    bool registered = false;
    for (const auto& condition : status->value("conditions", json::array())) {
      registered = registered || (condition.is_object() && stringField(condition, "type") == "ModelRegistered" &&
                                  stringField(condition, "status") == "True");
    }
    try {
      if (registered) child.model = crd::readRegisteredModel((*status)["model"], "status.model");
    } catch (const std::exception&) {
    }
  }
  return child;
}

std::string modelUriOf(const ChildRun& run) { return trimSlash(run.baseOutputDirectory) + "/model/"; }

// Rule 2: each watermark is the newer of what status says and what the runs' annotations say; each
// run is counted once, the first time it is seen ended.
void carryWatermarks(Decision& d) {
  auto& history = d.history();
  const auto& old = d.in.status.history;
  const std::string request = annotationOf(d.policy.metadata, crd::kRetrainRequestedAnnotation);
  const ChildRun* newestSuccess = nullptr;
  // The month's spend: a counted run's figure is kept in status (deleting the run changes nothing);
  // a run still uncounted adds its current estimate. A new month starts from nothing.
  const std::string month = governance::budgetMonth(d.in.now);
  crd::PolicySpend spend{month, old.spend && old.spend->month == month ? old.spend->endedUsd : Usd(), Usd()};
  Usd going;
  for (const auto& child : d.in.children) {
    if (child.triggerReason == TriggerReason::Schedule) {
      history.lastScheduleTime = retraining::newer(history.lastScheduleTime, child.triggerTime);
    }
    if (child.triggerReason && child.triggerTime && (!history.lastTrigger || *child.triggerTime > history.lastTrigger->time)) {
      history.lastTrigger = crd::TriggerRecord{*child.triggerTime, *child.triggerReason};
    }
    if (!request.empty() && child.retrainRequest == request) history.lastHandledRetrainRequest = request;
    if (child.succeeded() && child.endedAt() && (!newestSuccess || *child.endedAt() > *newestSuccess->endedAt())) {
      newestSuccess = &child;
    }
    bool thisMonth = child.created && governance::budgetMonth(*child.created) == month;
    if (child.ended() && !child.counted) {
      ++(child.succeeded() ? history.counts.succeeded : history.counts.failed);
      d.plan.markCounted.push_back(child.name);
      if (thisMonth) spend.endedUsd += child.costUsd.value_or(Usd()).roundedToCents();
    } else if (!child.counted && thisMonth) {
      going += child.costUsd.value_or(Usd()).roundedToCents();
    }
  }
  spend.estimatedUsd = spend.endedUsd + going;
  if (!d.policy.spec.budgetMonthlyUsd.empty() || old.spend || spend.estimatedUsd > Usd()) history.spend = spend;
  if (newestSuccess && (!old.lastSuccessfulTime || *newestSuccess->endedAt() > *old.lastSuccessfulTime)) {
    history.lastSuccessfulTime = newestSuccess->endedAt();
    history.lastSuccessfulRun = crd::SuccessfulRun{newestSuccess->name, newestSuccess->endedAt(), modelUriOf(*newestSuccess)};
  }
  if (d.policy.spec.warmStart && history.lastSuccessfulRun) d.warmStartFrom = history.lastSuccessfulRun->modelUri;
}

// Keeps the newest successfulRunsHistoryLimit succeeded and failedRunsHistoryLimit unsuccessful runs.
void pruneHistory(Decision& d) {
  auto prune = [&](bool (ChildRun::*kind)() const, int32_t limit, const char* what) {
    std::vector<const ChildRun*> runs;
    // A run still registering its model, or whose version promotion has not compared, stays.
    for (const auto& child : d.in.children)
      if ((child.*kind)() && !child.deleting && !child.registering() && !retraining::awaitsComparison(d.in, child))
        runs.push_back(&child);
    std::sort(runs.begin(), runs.end(), [](const ChildRun* a, const ChildRun* b) {
      return std::pair(a->endedAt(), a->name) > std::pair(b->endedAt(), b->name);
    });
    for (size_t i = static_cast<size_t>(std::max(0, limit)); i < runs.size(); ++i) {
      d.plan.remove.push_back({runs[i]->name, std::string("beyond ") + what + " (" + std::to_string(limit) + ")"});
    }
  };
  prune(&ChildRun::succeeded, d.policy.spec.successfulRunsHistoryLimit, "successfulRunsHistoryLimit");
  prune(&ChildRun::unsuccessful, d.policy.spec.failedRunsHistoryLimit, "failedRunsHistoryLimit");
}

void listActive(Decision& d) {
  d.plan.status.active.clear();
  for (const auto& name : d.active) d.plan.status.active.push_back(name);
}

// kstatus's view of what this pass decided: Ready only while the triggers answer, Stalled for what
// waits on an edit, Reconciling False.
void policyHealth(Decision& d) {
  auto& conditions = d.plan.status.conditions;
  const auto* valid = controller::findStatusCondition(conditions, policyConditionName(PolicyCondition::Valid));
  const auto* triggers = controller::findStatusCondition(conditions, policyConditionName(PolicyCondition::TriggersHealthy));
  const auto* ready = controller::findStatusCondition(conditions, policyConditionName(PolicyCondition::Ready));
  if (ready == nullptr) return;  // nothing decided (a policy that does not decode keeps what it had)
  bool isValid = valid != nullptr && valid->status == "True";
  if (isValid && ready->status == "True" && triggers != nullptr && triggers->status == "False") {
    crd::Condition notReady = *triggers;
    notReady.type = policyConditionName(PolicyCondition::Ready);
    controller::setStatusCondition(conditions, notReady, d.in.now);
    ready = controller::findStatusCondition(conditions, policyConditionName(PolicyCondition::Ready));
  }
  bool stalled = !isValid || (ready->status == "False" && ready->reason == policyReasonName(PolicyReason::RunNameConflict));
  std::string why = ready->reason, message = ready->message;  // copied: setting conditions below moves them
  auto set = [&](PolicyCondition type, bool status, std::string reason, std::string message) {
    d.keepCondition(type);  // its lastTransitionTime carries over while its status stays
    controller::setStatusCondition(conditions,
                                   crd::Condition{policyConditionName(type), status ? "True" : "False", std::move(reason),
                                                  std::move(message), std::nullopt, d.policy.metadata.generation},
                                   d.in.now);
  };
  set(PolicyCondition::Reconciling, false, "Reconciled", "");
  if (stalled) {
    set(PolicyCondition::Stalled, true, why, message);
  } else {
    set(PolicyCondition::Stalled, false, "NotStalled", "");
  }
}

PolicyPlan finish(Decision& d) {
  policyHealth(d);
  static const std::vector<std::string> order = {"Valid", "Ready", "TriggersHealthy", "Suspended", "Reconciling", "Stalled"};
  auto& conditions = d.plan.status.conditions;
  std::stable_sort(conditions.begin(), conditions.end(), [](const auto& a, const auto& b) {
    return std::find(order.begin(), order.end(), a.type) < std::find(order.begin(), order.end(), b.type);
  });
  return std::move(d.plan);
}

// No runs: the reason names why (the spec, its time zone, the tenancy rules), and an edit brings the
// policy back. What this pass could not judge stays as it was.
PolicyPlan invalid(Decision& d, PolicyReason reason, const std::string& message) {
  d.plan.invalid = true;
  d.plan.status.nextScheduleTime.reset();
  listActive(d);
  d.condition(PolicyCondition::Valid, false, reason, message);
  d.condition(PolicyCondition::Ready, false, reason, message);
  d.keepCondition(PolicyCondition::TriggersHealthy);
  d.keepCondition(PolicyCondition::Suspended);
  d.event(EventType::Warning, policyReasonName(reason), message);
  return finish(d);
}

// The first error among the validator's and the schedule calculator's, with its reason.
std::optional<std::pair<PolicyReason, std::string>> firstError(const crd::RetrainingPolicy& policy) {
  const auto& schedule = policy.spec.triggers.schedule;
  if (schedule) {
    try {
      crd::checkTimeZone(schedule->timeZone);  // first, for CronJob's own reason
    } catch (const std::exception& e) {
      return std::pair{PolicyReason::UnknownTimeZone, std::string(e.what())};
    }
  }
  for (const auto& finding : crd::validate(policy)) {
    if (finding.severity == crd::Severity::Error) return std::pair{PolicyReason::InvalidSpec, crd::formatFinding(finding)};
  }
  if (schedule) {
    try {
      crd::parseCron(schedule->cron);
    } catch (const std::exception& e) {
      return std::pair{PolicyReason::InvalidSpec, std::string(e.what())};
    }
  }
  return std::nullopt;
}

// TriggersHealthy: False while the newData poll or the metric query fails.
void triggersHealthy(Decision& d) {
  const auto& triggers = d.policy.spec.triggers;
  if (!triggers.newData && !triggers.metric) return;
  const auto& data = d.plan.health.data;
  const auto& metric = d.plan.health.metric;
  if (data && metric) {
    d.condition(PolicyCondition::TriggersHealthy, false, data->reason,
                "newData: " + data->message + "; metric: " + metric->message);
  } else if (data || metric) {
    const auto& problem = data ? *data : *metric;
    d.condition(PolicyCondition::TriggersHealthy, false, problem.reason, problem.message);
  } else {
    d.condition(PolicyCondition::TriggersHealthy, true, PolicyReason::Healthy);
  }
}

// Ready: what comes next, or the name conflict act found (it stays until a run is created again).
void readiness(Decision& d) {
  const auto& spec = d.policy.spec;
  const auto* ready = controller::findStatusCondition(d.in.status.conditions, policyConditionName(PolicyCondition::Ready));
  if (ready && ready->status == "False" && ready->reason == policyReasonName(PolicyReason::RunNameConflict) &&
      d.plan.create.empty()) {
    d.condition(PolicyCondition::Ready, false, PolicyReason::RunNameConflict, ready->message);
    return;
  }
  const auto& next = d.plan.status.nextScheduleTime;
  std::string message = next ? "next run at " + retraining::timeText(*next)
                        : spec.suspend ? "suspended"
                        : spec.triggers.newData || spec.triggers.metric
                            ? "no schedule: runs start on new data, a metric breach or request"
                            : "no schedule: runs start on request";
  d.condition(PolicyCondition::Ready, true, PolicyReason::Reconciled, message);
}


}  // namespace

const char* policyConditionName(PolicyCondition type) {
  static constexpr std::array names = {"Valid", "Ready", "TriggersHealthy", "Suspended", "Reconciling", "Stalled"};
  return names[static_cast<size_t>(type)];
}

const char* policyReasonName(PolicyReason reason) {
  static constexpr std::array names = {"Valid", "InvalidSpec", "UnknownTimeZone", "TenantPolicyViolation",
                                       "Reconciled", "RunNameConflict", "Healthy", "DataPollFailed",
                                       "MetricQueryFailed", "MetricQueryAmbiguous", "Suspended", "NotSuspended"};
  return names[static_cast<size_t>(reason)];
}

std::optional<ScheduleState> parseScheduleState(const std::string& text) {
  auto value = json::parse(text, nullptr, false);
  if (!value.is_object()) return std::nullopt;
  ScheduleState state;
  state.cron = stringField(value, "cron");
  state.timeZone = stringField(value, "timeZone");
  state.suspended = value.value("suspended", false);
  state.since = timeField(value, "since");
  return state;
}

std::string formatScheduleState(const ScheduleState& state) {
  json value = {{"cron", state.cron}, {"timeZone", state.timeZone}, {"suspended", state.suspended}};
  if (state.since) value["since"] = retraining::timeText(*state.since);
  return value.dump();
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
  annotations[crd::kTriggerReasonAnnotation] = crd::enumName(firing.reason, crd::triggerReasonNames());
  annotations[crd::kTriggerTimeAnnotation] = retraining::timeText(firing.nominal);
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

PolicyObserved readPolicy(const json& object, const std::vector<json>& runs, Clock::time_point now) {
  PolicyObserved o;
  o.now = now;
  o.statusStored = object.contains("status");
  try {
    o.policy = crd::decodeRetrainingPolicy(object);
    o.metadata = o.policy->metadata;
    o.status = o.policy->status;
  } catch (const std::exception& e) {
    o.decodeError = e.what();
    o.metadata = crd::decodeObjectMeta(object.value("metadata", json::object()), "metadata");
    try {
      o.status = crd::decodeRetrainingPolicyStatus(object.value("status", json::object()), "status");
    } catch (const std::exception&) {
      o.status = {};  // a status we cannot read is rebuilt from what we observe
    }
  }
  for (const auto& run : runs) {
    if (controlledBy(run, o.metadata.uid)) o.children.push_back(readChild(run));
  }
  o.scheduleState = parseScheduleState(annotationOf(o.metadata, kScheduleStateAnnotation));
  o.dataState = parseDataState(annotationOf(o.metadata, kDataStateAnnotation));
  o.metricHealth = parseMetricHealth(annotationOf(o.metadata, kMetricHealthAnnotation));
  return o;
}

PolicyPlan decidePolicy(const PolicyObserved& o) {
  static const crd::RetrainingPolicy undecoded{};
  Decision d{o, o.policy ? *o.policy : undecoded, {}, {}, {}, {}};
  auto& status = d.plan.status;
  status.observedGeneration = o.metadata.generation;
  status.history = o.status.history;  // the watermarks: the one thing carried
  for (const auto& child : o.children) {
    d.taken.insert(child.name);
    if (child.active()) d.active.push_back(child.name);
  }
  if (!o.policy) return invalid(d, PolicyReason::InvalidSpec, o.decodeError);
  if (auto error = firstError(*o.policy)) return invalid(d, error->first, error->second);
  if (o.tenancyViolation) return invalid(d, PolicyReason::TenantPolicyViolation, o.tenancyViolation->message);

  ScheduleState state = o.scheduleState.value_or(ScheduleState{});
  carryWatermarks(d);
  if (o.policy->spec.promotion) retraining::promote(d);
  int64_t passedWhileSuspended = retraining::updateScheduleState(d, state, o.scheduleState.has_value());
  for (int64_t i = 0; i < std::min<int64_t>(passedWhileSuspended, kMissedCountCap); ++i) {
    d.plan.outcomes.push_back({TriggerReason::Schedule, "suspended"});
  }
  const auto& spec = d.policy.spec;
  if (spec.triggers.schedule && !spec.suspend) retraining::fireSchedule(d, state);
  // Suspended: no polls are judged and nothing is due for them; their health is what the last poll left.
  if (!spec.suspend) {
    if (spec.triggers.newData) retraining::fireNewData(d);
    if (spec.triggers.metric) retraining::fireMetric(d);
  } else {
    if (spec.triggers.newData) d.plan.health.data = retraining::dataProblem(o.dataState.value_or(DataState{}));
    if (spec.triggers.metric) d.plan.health.metric = retraining::metricProblem(o.metricHealth.value_or(MetricHealth{}));
  }
  retraining::fireManual(d);
  pruneHistory(d);
  if (o.scheduleState != state) d.plan.scheduleState = state;

  listActive(d);
  d.condition(PolicyCondition::Valid, true, PolicyReason::Valid);
  readiness(d);
  triggersHealthy(d);
  d.condition(PolicyCondition::Suspended, spec.suspend, spec.suspend ? PolicyReason::Suspended : PolicyReason::NotSuspended,
              spec.suspend ? "suspend is true: no new runs start; running ones go on" : "");
  return finish(d);
}

PolicyPlan afterCreates(const PolicyObserved& o, PolicyPlan plan, const std::vector<CreateOutcome>& outcomes) {
  static const crd::RetrainingPolicy undecoded{};
  Decision d{o, o.policy ? *o.policy : undecoded, std::move(plan), {}, {}, {}};
  std::vector<controller::Event> created;
  for (size_t i = 0; i < d.plan.create.size() && i < outcomes.size(); ++i) {
    const auto& create = d.plan.create[i];
    const std::string runName = create.run["metadata"]["name"];
    const std::string reason = crd::enumName(create.firing.reason, crd::triggerReasonNames());
    const std::string trigger = reason + " trigger of " + retraining::timeText(create.firing.nominal);
    switch (outcomes[i]) {
      case CreateOutcome::Created:
        created.push_back({EventType::Normal, "SuccessfulCreate", "created run " + runName + " (" + trigger + ")"});
        d.plan.outcomes.push_back({create.firing.reason, "created"});
        break;
      case CreateOutcome::Deduplicated:  // a pass before a crash, or another replica, created it
        d.plan.outcomes.push_back({create.firing.reason, "deduplicated"});
        break;
      case CreateOutcome::NameConflict: {
        std::string message = "a TrainingRun named " + runName +
                              " exists and is not controlled by this policy; delete or rename it so the " + trigger +
                              " can run";
        created.push_back({EventType::Warning, "RunNameConflict", message});
        std::erase(d.plan.status.active, runName);
        d.condition(PolicyCondition::Ready, false, PolicyReason::RunNameConflict, message);
        break;
      }
    }
  }
  // The creations happened first: their Events come first.
  d.plan.events.insert(d.plan.events.begin(), created.begin(), created.end());
  return finish(d);
}

}  // namespace vto::reconcilers
