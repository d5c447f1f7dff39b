#include "crd/retraining_policy.h"

#include "crd/duration.h"
#include "crd/strict_json.h"

namespace vto::crd {

const EnumNames<ConcurrencyPolicy>& concurrencyPolicyNames() {
  static const EnumNames<ConcurrencyPolicy> names = {
      {ConcurrencyPolicy::Allow, "Allow"}, {ConcurrencyPolicy::Forbid, "Forbid"}, {ConcurrencyPolicy::Replace, "Replace"}};
  return names;
}
const EnumNames<TriggerReason>& triggerReasonNames() {
  static const EnumNames<TriggerReason> names = {{TriggerReason::Schedule, "Schedule"},
                                                 {TriggerReason::NewData, "NewData"},
                                                 {TriggerReason::Metric, "Metric"},
                                                 {TriggerReason::Manual, "Manual"}};
  return names;
}

namespace {

int64_t readPositiveDuration(const json& v, const std::string& p) {
  int64_t seconds = readDuration(v, p);
  if (seconds <= 0) throw DecodeError(p, "must be a positive duration, e.g. 5m");
  return seconds;
}

Triggers readTriggers(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  Triggers t;
  r.with("schedule", [&](const json& v, const std::string& p) {
    ObjectReader s(v, p);
    ScheduleTrigger st;
    s.string("cron", st.cron);
    s.string("timeZone", st.timeZone);
    s.finish();
    t.schedule = st;
  });
  r.with("newData", [&](const json& v, const std::string& p) {
    ObjectReader s(v, p);
    NewDataTrigger nd;
    s.string("gcsPrefix", nd.gcsPrefix);
    s.with("pollInterval", [&](const json& d, const std::string& dp) { nd.pollIntervalSeconds = readPositiveDuration(d, dp); });
    s.integer("minNewObjects", nd.minNewObjects, 1);
    s.finish();
    t.newData = nd;
  });
  r.with("metric", [&](const json& v, const std::string& p) {
    ObjectReader s(v, p);
    MetricTrigger m;
    s.string("prometheusUrl", m.prometheusUrl);
    s.string("query", m.query);
    s.number("below", m.below);
    s.number("above", m.above);
    s.with("for", [&](const json& d, const std::string& dp) {
      m.forSeconds = readDuration(d, dp);
      if (m.forSeconds < 0) throw DecodeError(dp, "must not be negative");
    });
    s.with("pollInterval", [&](const json& d, const std::string& dp) { m.pollIntervalSeconds = readPositiveDuration(d, dp); });
    s.finish();
    t.metric = m;
  });
  r.finish();
  return t;
}

}  // namespace

RetrainingPolicyStatus decodeRetrainingPolicyStatus(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  RetrainingPolicyStatus s;
  r.integer("observedGeneration", s.observedGeneration, 0);
  r.with("active", [&](const json& v, const std::string& p) {
    s.active = readList<std::string>(v, p, [](const json& item, const std::string& ip) {
      ObjectReader a(item, ip);
      std::string name;
      a.string("name", name);
      a.finish();
      return name;
    });
  });
  r.with("lastTrigger", [&](const json& v, const std::string& p) {
    ObjectReader t(v, p);
    TriggerRecord rec;
    t.string("time", rec.time);
    t.with("reason", [&](const json& x, const std::string& xp) { rec.reason = readEnum(x, xp, triggerReasonNames()); });
    t.finish();
    s.lastTrigger = rec;
  });
  r.string("lastScheduleTime", s.lastScheduleTime);
  r.string("nextScheduleTime", s.nextScheduleTime);
  r.string("lastSuccessfulRun", s.lastSuccessfulRun);
  r.with("dataWatermark", [&](const json& v, const std::string& p) {
    ObjectReader w(v, p);
    DataWatermark dw;
    w.string("updated", dw.updated);
    w.integer("objects", dw.objects, 0);
    w.finish();
    s.dataWatermark = dw;
  });
  r.with("conditions", [&](const json& v, const std::string& p) { s.conditions = readList<Condition>(v, p, decodeCondition); });
  r.finish();
  return s;
}

RetrainingPolicy decodeRetrainingPolicy(const json& object) {
  ObjectReader r(object, "");
  RetrainingPolicy policy;
  std::string apiVersion, kind;
  r.string("apiVersion", apiVersion);
  r.string("kind", kind);
  if (apiVersion != kApiVersion) throw DecodeError("apiVersion", "must be " + std::string(kApiVersion) + ", not \"" + apiVersion + "\"");
  if (kind != kRetrainingPolicyKind) throw DecodeError("kind", "must be RetrainingPolicy, not \"" + kind + "\"");
  r.with("metadata", [&](const json& v, const std::string& p) { policy.metadata = decodeObjectMeta(v, p); });
  const json* spec = r.get("spec");
  if (!spec) throw DecodeError("spec", "required: a RetrainingPolicy needs a spec with a template and triggers");
  ObjectReader s(*spec, "spec");
  auto& ps = policy.spec;
  const json* templ = s.get("template");
  if (!templ) throw DecodeError("spec.template", "required: the TrainingRun to create, as {metadata: {labels}, spec: {...}}");
  {
    ObjectReader t(*templ, "spec.template");
    t.with("metadata", [&](const json& v, const std::string& p) {
      ObjectReader m(v, p);
      m.stringMap("labels", ps.templ.labels);
      m.stringMap("annotations", ps.templ.annotations);
      m.finish();
    });
    const json* runSpec = t.get("spec");
    if (!runSpec) throw DecodeError("spec.template.spec", "required: a TrainingRun spec");
    ps.templ.spec = decodeTrainingRunSpec(*runSpec, "spec.template.spec");
    t.finish();
  }
  s.with("triggers", [&](const json& v, const std::string& p) { ps.triggers = readTriggers(v, p); });
  s.boolean("warmStart", ps.warmStart);
  s.with("concurrencyPolicy", [&](const json& v, const std::string& p) { ps.concurrencyPolicy = readEnum(v, p, concurrencyPolicyNames()); });
  s.integer("startingDeadlineSeconds", ps.startingDeadlineSeconds, 0);
  s.integer("successfulRunsHistoryLimit", ps.successfulRunsHistoryLimit, 0, 1000);
  s.integer("failedRunsHistoryLimit", ps.failedRunsHistoryLimit, 0, 1000);
  s.boolean("suspend", ps.suspend);
  s.finish();
  r.with("status", [&](const json& v, const std::string& p) { policy.status = decodeRetrainingPolicyStatus(v, p); });
  r.finish();
  return policy;
}

json encodeRetrainingPolicyStatus(const RetrainingPolicyStatus& s) {
  json out = {{"observedGeneration", s.observedGeneration}, {"active", json::array()}, {"conditions", json::array()}};
  for (const auto& name : s.active) out["active"].push_back({{"name", name}});
  if (s.lastTrigger) out["lastTrigger"] = {{"time", s.lastTrigger->time}, {"reason", enumName(s.lastTrigger->reason, triggerReasonNames())}};
  if (!s.lastScheduleTime.empty()) out["lastScheduleTime"] = s.lastScheduleTime;
  if (!s.nextScheduleTime.empty()) out["nextScheduleTime"] = s.nextScheduleTime;
  if (!s.lastSuccessfulRun.empty()) out["lastSuccessfulRun"] = s.lastSuccessfulRun;
  if (s.dataWatermark) out["dataWatermark"] = {{"updated", s.dataWatermark->updated}, {"objects", s.dataWatermark->objects}};
  for (const auto& c : s.conditions) out["conditions"].push_back(encodeCondition(c));
  return out;
}

json encodeRetrainingPolicy(const RetrainingPolicy& policy) {
  const auto& ps = policy.spec;
  json triggers = json::object();
  if (const auto& s = ps.triggers.schedule) {
    triggers["schedule"] = {{"cron", s->cron}};
    if (!s->timeZone.empty()) triggers["schedule"]["timeZone"] = s->timeZone;
  }
  if (const auto& n = ps.triggers.newData)
    triggers["newData"] = {{"gcsPrefix", n->gcsPrefix}, {"pollInterval", formatDuration(n->pollIntervalSeconds)}, {"minNewObjects", n->minNewObjects}};
  if (const auto& m = ps.triggers.metric) {
    json metric = {{"prometheusUrl", m->prometheusUrl}, {"query", m->query}, {"for", formatDuration(m->forSeconds)},
                   {"pollInterval", formatDuration(m->pollIntervalSeconds)}};
    if (m->below) metric["below"] = *m->below;
    if (m->above) metric["above"] = *m->above;
    triggers["metric"] = metric;
  }
  json templMeta = json::object();
  if (!ps.templ.labels.empty()) templMeta["labels"] = ps.templ.labels;
  if (!ps.templ.annotations.empty()) templMeta["annotations"] = ps.templ.annotations;
  json spec = {{"template", {{"metadata", templMeta}, {"spec", encodeTrainingRunSpec(ps.templ.spec)}}},
               {"triggers", triggers},
               {"warmStart", ps.warmStart},
               {"concurrencyPolicy", enumName(ps.concurrencyPolicy, concurrencyPolicyNames())},
               {"successfulRunsHistoryLimit", ps.successfulRunsHistoryLimit},
               {"failedRunsHistoryLimit", ps.failedRunsHistoryLimit},
               {"suspend", ps.suspend}};
  if (ps.startingDeadlineSeconds) spec["startingDeadlineSeconds"] = *ps.startingDeadlineSeconds;
  return {{"apiVersion", kApiVersion},
          {"kind", kRetrainingPolicyKind},
          {"metadata", encodeObjectMeta(policy.metadata)},
          {"spec", spec},
          {"status", encodeRetrainingPolicyStatus(policy.status)}};
}

}  // namespace vto::crd
