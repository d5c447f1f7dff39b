#include "crd/retraining_policy.h"

#include <cmath>

#include "base/money.h"
#include "base/rfc3339.h"
#include "crd/duration.h"
#include "crd/strict_json.h"
#include "crd/timestamp.h"

namespace vto::crd {

const EnumNames<ConcurrencyPolicy>& concurrencyPolicyNames() {
  static const EnumNames<ConcurrencyPolicy> names = {
      {ConcurrencyPolicy::Allow, "Allow"}, {ConcurrencyPolicy::Forbid, "Forbid"}, {ConcurrencyPolicy::Replace, "Replace"}};
  return names;
}
const EnumNames<MissedRunsPolicy>& missedRunsPolicyNames() {
  static const EnumNames<MissedRunsPolicy> names = {
      {MissedRunsPolicy::Latest, "Latest"}, {MissedRunsPolicy::Skip, "Skip"}, {MissedRunsPolicy::All, "All"}};
  return names;
}
const EnumNames<TriggerReason>& triggerReasonNames() {
  static const EnumNames<TriggerReason> names = {{TriggerReason::Schedule, "Schedule"},
                                                 {TriggerReason::Manual, "Manual"},
                                                 {TriggerReason::NewData, "NewData"},
                                                 {TriggerReason::Metric, "Metric"}};
  return names;
}

namespace {

constexpr int64_t kMaxInt32 = 2147483647;

// Any duration within crd/duration.h's bound; validation says which must be positive, with the same
// words as the CRD's CEL rules.
void duration(ObjectReader& r, const std::string& key, std::chrono::seconds& out) {
  r.with(key, [&](const json& v, const std::string& p) { out = std::chrono::seconds(readDuration(v, p)); });
}

std::string durationText(std::chrono::seconds d) { return formatDuration(d.count()); }

ScheduleTrigger readSchedule(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  ScheduleTrigger s;
  r.string("cron", s.cron);
  r.string("timeZone", s.timeZone);
  duration(r, "jitter", s.jitter);
  r.finish();
  return s;
}

NewDataTrigger readNewData(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  NewDataTrigger n;
  r.string("gcsPrefix", n.gcsPrefix);
  r.string("matchGlob", n.matchGlob);
  duration(r, "pollInterval", n.pollInterval);
  r.integer("minNewObjects", n.minNewObjects, 1);
  r.integer("minNewBytes", n.minNewBytes, 0);
  duration(r, "quietPeriod", n.quietPeriod);
  r.finish();
  return n;
}

MetricTrigger readMetric(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  MetricTrigger m;
  r.string("prometheusUrl", m.prometheusUrl);
  r.string("query", m.query);
  r.number("below", m.below);
  r.number("above", m.above);
  duration(r, "for", m.forDuration);
  duration(r, "pollInterval", m.pollInterval);
  r.integer("maxConsecutiveErrors", m.maxConsecutiveErrors, 1, 1000);
  r.with("bearerTokenSecret", [&](const json& v, const std::string& p) {
    ObjectReader s(v, p);
    SecretKeyRef ref;
    s.string("name", ref.name);
    s.string("key", ref.key);
    s.finish();
    if (ref.name.empty()) throw DecodeError(joinPath(p, "name"), "required: the Secret (in the policy's namespace) that holds the token");
    if (ref.key.empty()) throw DecodeError(joinPath(p, "key"), "required: the key of the token in that Secret, e.g. token");
    m.bearerTokenSecret = ref;
  });
  r.finish();
  return m;
}

Triggers readTriggers(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  Triggers t;
  r.with("schedule", [&](const json& v, const std::string& p) { t.schedule = readSchedule(v, p); });
  r.with("newData", [&](const json& v, const std::string& p) { t.newData = readNewData(v, p); });
  r.with("metric", [&](const json& v, const std::string& p) { t.metric = readMetric(v, p); });
  r.finish();
  return t;
}

TrainingRunTemplate readTemplate(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  TrainingRunTemplate templ;
  r.with("metadata", [&](const json& v, const std::string& p) {
    ObjectReader m(v, p);
    m.stringMap("labels", templ.labels);
    m.stringMap("annotations", templ.annotations);
    m.finish();
  });
  const json* runSpec = r.get("spec");
  if (!runSpec) throw DecodeError(joinPath(path, "spec"), "required: a TrainingRun spec");
  templ.spec = decodeTrainingRunSpec(*runSpec, joinPath(path, "spec"));
  r.finish();
  return templ;
}

json encodeTriggers(const Triggers& t) {
  json out = json::object();
  if (const auto& s = t.schedule) {
    out["schedule"] = {{"cron", s->cron}, {"jitter", durationText(s->jitter)}};
    if (!s->timeZone.empty()) out["schedule"]["timeZone"] = s->timeZone;
  }
  if (const auto& n = t.newData) {
    out["newData"] = {{"gcsPrefix", n->gcsPrefix},         {"pollInterval", durationText(n->pollInterval)},
                      {"minNewObjects", n->minNewObjects}, {"minNewBytes", n->minNewBytes},
                      {"quietPeriod", durationText(n->quietPeriod)}};
    if (!n->matchGlob.empty()) out["newData"]["matchGlob"] = n->matchGlob;
  }
  if (const auto& m = t.metric) {
    json metric = {{"prometheusUrl", m->prometheusUrl},
                   {"query", m->query},
                   {"for", durationText(m->forDuration)},
                   {"pollInterval", durationText(m->pollInterval)},
                   {"maxConsecutiveErrors", m->maxConsecutiveErrors}};
    if (m->below) metric["below"] = *m->below;
    if (m->above) metric["above"] = *m->above;
    if (m->bearerTokenSecret) metric["bearerTokenSecret"] = {{"name", m->bearerTokenSecret->name}, {"key", m->bearerTokenSecret->key}};
    out["metric"] = metric;
  }
  return out;
}

}  // namespace

RetrainingPolicySpec decodeRetrainingPolicySpec(const json& value, const std::string& path) {
  ObjectReader s(value, path);
  RetrainingPolicySpec ps;
  const json* templ = s.get("template");
  if (!templ)
    throw DecodeError(joinPath(path, "template"), "required: the TrainingRun to create, as {metadata: {labels}, spec: {...}}");
  ps.templ = readTemplate(*templ, joinPath(path, "template"));
  s.with("triggers", [&](const json& v, const std::string& p) { ps.triggers = readTriggers(v, p); });
  s.with("missedRuns", [&](const json& v, const std::string& p) { ps.missedRuns = readEnum(v, p, missedRunsPolicyNames()); });
  s.integer("maxCatchUpRuns", ps.maxCatchUpRuns, 1, 1000);
  s.integer("startingDeadlineSeconds", ps.startingDeadlineSeconds, 0);
  s.with("concurrencyPolicy", [&](const json& v, const std::string& p) { ps.concurrencyPolicy = readEnum(v, p, concurrencyPolicyNames()); });
  s.integer("maxActiveRuns", ps.maxActiveRuns, 1, 1000);
  duration(s, "cooldown", ps.cooldown);
  s.boolean("warmStart", ps.warmStart);
  s.integer("successfulRunsHistoryLimit", ps.successfulRunsHistoryLimit, 0, 1000);
  s.integer("failedRunsHistoryLimit", ps.failedRunsHistoryLimit, 0, 1000);
  s.boolean("suspend", ps.suspend);
  s.with("promotion", [&](const json& v, const std::string& p) { ps.promotion = readPromotionSpec(v, p); });
  s.with("budget", [&](const json& v, const std::string& p) {
    ObjectReader b(v, p);
    b.string("monthlyUsd", ps.budgetMonthlyUsd);
    if (ps.budgetMonthlyUsd.empty())
      throw DecodeError(joinPath(p, "monthlyUsd"), "required: US dollars per calendar month (UTC) as a string, e.g. \"500\"");
    b.finish();
  });
  s.finish();
  return ps;
}

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
    const json* time = t.get("time");
    if (!time) throw DecodeError(joinPath(p, "time"), "required: when the trigger fired, e.g. 2026-05-18T03:00:00Z");
    rec.time = readTimestamp(*time, joinPath(p, "time"));
    t.with("reason", [&](const json& x, const std::string& xp) { rec.reason = readEnum(x, xp, triggerReasonNames()); });
    t.finish();
    s.history.lastTrigger = rec;
  });
  readTime(r, "lastScheduleTime", s.history.lastScheduleTime);
  readTime(r, "nextScheduleTime", s.nextScheduleTime);
  readTime(r, "lastSuccessfulTime", s.history.lastSuccessfulTime);
  r.with("lastSuccessfulRun", [&](const json& v, const std::string& p) {
    ObjectReader o(v, p);
    SuccessfulRun run;
    o.string("name", run.name);
    readTime(o, "completionTime", run.completionTime);
    o.string("modelUri", run.modelUri);
    o.finish();
    s.history.lastSuccessfulRun = run;
  });
  r.string("lastHandledRetrainRequest", s.history.lastHandledRetrainRequest);
  r.integer("missedSchedules", s.history.missedSchedules, 0);
  r.with("counts", [&](const json& v, const std::string& p) {
    ObjectReader c(v, p);
    c.integer("succeeded", s.history.counts.succeeded, 0);
    c.integer("failed", s.history.counts.failed, 0);
    c.finish();
  });
  r.with("dataWatermark", [&](const json& v, const std::string& p) {
    ObjectReader w(v, p);
    DataWatermark dw;
    readTime(w, "timeCreated", dw.timeCreated);
    w.string("name", dw.name);
    w.integer("pendingObjects", dw.pendingObjects, 0);
    w.integer("pendingBytes", dw.pendingBytes, 0);
    readTime(w, "lastPollTime", dw.lastPollTime);
    w.finish();
    s.history.dataWatermark = dw;
  });
  r.with("metric", [&](const json& v, const std::string& p) {
    ObjectReader m(v, p);
    MetricStatus ms;
    m.number("lastValue", ms.lastValue);
    readTime(m, "lastEvalTime", ms.lastEvalTime);
    readTime(m, "breachingSince", ms.breachingSince);
    m.integer("consecutiveErrors", ms.consecutiveErrors, 0, kMaxInt32);
    m.finish();
    s.history.metric = ms;
  });
  r.with("champion", [&](const json& v, const std::string& p) { s.history.champion = readChampion(v, p); });
  r.with("lastPromotion", [&](const json& v, const std::string& p) { s.history.lastPromotion = readPromotionRecord(v, p); });
  r.string("lastHandledPromoteRequest", s.history.lastHandledPromoteRequest);
  r.string("lastComparedVersion", s.history.lastComparedVersion);
  r.with("spend", [&](const json& v, const std::string& p) {
    ObjectReader o(v, p);
    PolicySpend spend;
    std::string ended, estimated;
    o.string("month", spend.month);
    o.string("endedUsd", ended);
    o.string("estimatedUsd", estimated);
    o.finish();
    // Figures vto wrote; anything else reads as nothing spent rather than stopping the policy.
    spend.endedUsd = Usd::parse(ended).value_or(Usd());
    spend.estimatedUsd = Usd::parse(estimated).value_or(Usd());
    s.history.spend = spend;
  });
  r.with("lastSkippedTrigger", [&](const json& v, const std::string& p) {
    ObjectReader t(v, p);
    SkippedTrigger skipped;
    const json* time = t.get("time");
    if (!time) throw DecodeError(joinPath(p, "time"), "required: the trigger's time");
    skipped.time = readTimestamp(*time, joinPath(p, "time"));
    t.with("reason", [&](const json& x, const std::string& xp) { skipped.reason = readEnum(x, xp, triggerReasonNames()); });
    t.string("skipReason", skipped.skipReason);
    t.string("message", skipped.message);
    t.finish();
    s.history.lastSkippedTrigger = skipped;
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
  if (!isServedApiVersion(apiVersion))
    throw DecodeError("apiVersion", "must be " + std::string(kApiVersion) + " (or the deprecated " + kDeprecatedApiVersion +
                                        "), not \"" + apiVersion + "\"");
  if (kind != kRetrainingPolicyKind) throw DecodeError("kind", "must be RetrainingPolicy, not \"" + kind + "\"");
  r.with("metadata", [&](const json& v, const std::string& p) { policy.metadata = decodeObjectMeta(v, p); });
  const json* spec = r.get("spec");
  if (!spec) throw DecodeError("spec", "required: a RetrainingPolicy needs a spec with a template (see `kubectl explain rtp.spec`)");
  policy.spec = decodeRetrainingPolicySpec(*spec, "spec");
  r.with("status", [&](const json& v, const std::string& p) { policy.status = decodeRetrainingPolicyStatus(v, p); });
  r.finish();
  return policy;
}

json encodeRetrainingPolicyStatus(const RetrainingPolicyStatus& s) {
  json out = {{"observedGeneration", s.observedGeneration}, {"active", json::array()}, {"conditions", json::array()}};
  for (const auto& name : s.active) out["active"].push_back({{"name", name}});
  if (s.history.lastTrigger)
    out["lastTrigger"] = {{"time", rfc3339Exact(s.history.lastTrigger->time)}, {"reason", enumName(s.history.lastTrigger->reason, triggerReasonNames())}};
  writeTime(out, "lastScheduleTime", s.history.lastScheduleTime);
  writeTime(out, "nextScheduleTime", s.nextScheduleTime);
  writeTime(out, "lastSuccessfulTime", s.history.lastSuccessfulTime);
  if (const auto& run = s.history.lastSuccessfulRun) {
    json r = {{"name", run->name}, {"modelUri", run->modelUri}};
    writeTime(r, "completionTime", run->completionTime);
    out["lastSuccessfulRun"] = r;
  }
  if (!s.history.lastHandledRetrainRequest.empty()) out["lastHandledRetrainRequest"] = s.history.lastHandledRetrainRequest;
  out["missedSchedules"] = s.history.missedSchedules;
  out["counts"] = {{"succeeded", s.history.counts.succeeded}, {"failed", s.history.counts.failed}};
  if (const auto& w = s.history.dataWatermark) {
    json dw = {{"name", w->name}, {"pendingObjects", w->pendingObjects}, {"pendingBytes", w->pendingBytes}};
    writeTime(dw, "timeCreated", w->timeCreated);
    writeTime(dw, "lastPollTime", w->lastPollTime);
    out["dataWatermark"] = dw;
  }
  if (const auto& m = s.history.metric) {
    json metric = {{"consecutiveErrors", m->consecutiveErrors}};
    // JSON has no NaN or infinity; such a value is "no data" and is left out.
    if (m->lastValue && std::isfinite(*m->lastValue)) metric["lastValue"] = *m->lastValue;
    writeTime(metric, "lastEvalTime", m->lastEvalTime);
    writeTime(metric, "breachingSince", m->breachingSince);
    out["metric"] = metric;
  }
  if (s.history.champion) out["champion"] = encodeChampion(*s.history.champion);
  if (s.history.lastPromotion) out["lastPromotion"] = encodePromotionRecord(*s.history.lastPromotion);
  if (!s.history.lastHandledPromoteRequest.empty()) out["lastHandledPromoteRequest"] = s.history.lastHandledPromoteRequest;
  if (!s.history.lastComparedVersion.empty()) out["lastComparedVersion"] = s.history.lastComparedVersion;
  if (const auto& spend = s.history.spend) {
    out["spend"] = {{"month", spend->month}, {"endedUsd", spend->endedUsd.plain()}, {"estimatedUsd", spend->estimatedUsd.plain()}};
  }
  if (const auto& skipped = s.history.lastSkippedTrigger) {
    out["lastSkippedTrigger"] = {{"time", rfc3339Exact(skipped->time)},
                                 {"reason", enumName(skipped->reason, triggerReasonNames())},
                                 {"skipReason", skipped->skipReason},
                                 {"message", skipped->message}};
  }
  for (const auto& c : s.conditions) out["conditions"].push_back(encodeCondition(c));
  return out;
}

json encodeRetrainingPolicySpec(const RetrainingPolicySpec& ps) {
  json templMeta = json::object();
  if (!ps.templ.labels.empty()) templMeta["labels"] = ps.templ.labels;
  if (!ps.templ.annotations.empty()) templMeta["annotations"] = ps.templ.annotations;
  json spec = {{"template", {{"metadata", templMeta}, {"spec", encodeTrainingRunSpec(ps.templ.spec)}}},
               {"triggers", encodeTriggers(ps.triggers)},
               {"missedRuns", enumName(ps.missedRuns, missedRunsPolicyNames())},
               {"maxCatchUpRuns", ps.maxCatchUpRuns},
               {"concurrencyPolicy", enumName(ps.concurrencyPolicy, concurrencyPolicyNames())},
               {"maxActiveRuns", ps.maxActiveRuns},
               {"cooldown", durationText(ps.cooldown)},
               {"warmStart", ps.warmStart},
               {"successfulRunsHistoryLimit", ps.successfulRunsHistoryLimit},
               {"failedRunsHistoryLimit", ps.failedRunsHistoryLimit},
               {"suspend", ps.suspend}};
  if (ps.startingDeadlineSeconds) spec["startingDeadlineSeconds"] = *ps.startingDeadlineSeconds;
  if (ps.promotion) spec["promotion"] = encodePromotionSpec(*ps.promotion);
  if (!ps.budgetMonthlyUsd.empty()) spec["budget"] = {{"monthlyUsd", ps.budgetMonthlyUsd}};
  return spec;
}

json encodeRetrainingPolicy(const RetrainingPolicy& policy) {
  return {{"apiVersion", kApiVersion},
          {"kind", kRetrainingPolicyKind},
          {"metadata", encodeObjectMeta(policy.metadata)},
          {"spec", encodeRetrainingPolicySpec(policy.spec)},
          {"status", encodeRetrainingPolicyStatus(policy.status)}};
}

}  // namespace vto::crd
