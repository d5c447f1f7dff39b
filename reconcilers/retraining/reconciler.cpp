#include "reconcilers/retraining/reconciler.h"

#include <spdlog/spdlog.h>

#include "base/json_fields.h"
#include "base/rfc3339.h"
#include "controller/event.h"
#include "controller/kube_client.h"
#include "crd/model.h"
#include "reconcilers/trainingrun/reconciler.h"
#include "vertex/api_error.h"

namespace vto::reconcilers {

using nlohmann::json;

const controller::Resource& retrainingPolicyResource() {
  static const controller::Resource resource{"vto.dev", "v1beta1", "retrainingpolicies", true};
  return resource;
}

RetrainingPolicyReconciler::RetrainingPolicyReconciler(PolicyReconcilerContext context) : c_(context) {}

controller::Result RetrainingPolicyReconciler::reconcile(const controller::ObjectKey& key) {
  auto cached = c_.policies.get(key);
  if (!cached) {
    if (c_.metrics) c_.metrics->forgetPolicy(key.ns, key.name);
    if (c_.policyWrites) c_.policyWrites->forget(key);
    return {};  // deleted: the garbage collector removes the runs it owned
  }
  const auto& meta = (*cached)["metadata"];
  if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) return {};
  auto observed = observe(*cached);
  if (!observed) return {};
  auto plan = decidePolicy(*observed);
  spdlog::debug("retrainingpolicy {}: {} run(s) to create, {} to delete, requeue in {} ms", key.str(),
                plan.create.size(), plan.remove.size(),
                std::chrono::duration_cast<std::chrono::milliseconds>(plan.requeueAfter).count());
  return act(*cached, *observed, std::move(plan));
}

std::optional<PolicyObserved> RetrainingPolicyReconciler::observe(const json& policy) {
  // Decided on a version this process has already replaced, a pass would write again and conflict,
  // or count a run twice: the echo of the write brings the policy back.
  if (c_.policyWrites && c_.policyWrites->behind(policy)) return std::nullopt;
  auto key = controller::keyOf(policy);
  std::vector<json> runs;
  for (const auto& run : c_.runs.byLabel(key.name)) {
    if (stringField((*run)["metadata"], "namespace") != key.ns) continue;
    if (c_.runWrites && c_.runWrites->waitingFor(*run)) return std::nullopt;  // a run's echo wakes the policy
    runs.push_back(*run);
  }
  auto o = readPolicy(policy, runs, c_.clock.now());
  if (!o.policy) return o;
  // Tenancy first: a refused policy gets no run, and no reading of its triggers is judged.
  o.tenancyViolation = policyTenancyViolation(*o.policy, c_.tenancy, c_.namespaces);
  if (o.tenancyViolation) return o;
  o.dataPoll = c_.readings.data(o.metadata.uid, dataBasis(*o.policy));
  o.metricEval = c_.readings.metric(o.metadata.uid, metricBasis(*o.policy));
  if (auto work = promotionWork(o); work.any() && c_.registry != nullptr) o.promotion = readPromotion(o, work);
  return o;
}

PromotionReading RetrainingPolicyReconciler::readPromotion(const PolicyObserved& o, const PromotionWork& work) {
  const auto& spec = *o.policy->spec.promotion;
  auto& registry = *c_.registry;
  PromotionReading reading;
  reading.model = modelNameOf(o.policy->spec.templ.spec, c_.tenancy.defaults);
  auto read = [&](const std::string& versionName) -> std::optional<VersionMetric> {
    vertex::ModelVersion version;
    try {
      version = registry.getModel(versionName);
    } catch (const vertex::ApiError& e) {
      if (e.isNotFound()) return std::nullopt;
      throw;
    }
    VersionMetric found{version.versionId, std::nullopt, "", version.artifactUri};
    // The metric from what vto already knows; only a version made elsewhere costs a read.
    if (const auto* run = runOfVersion(o, reading.model, version.versionId)) {
      found.run = run->name;
      found.metric = metricOf(*run->model, spec.metric);
      if (!run->model->artifactUri.empty()) found.artifactUri = run->model->artifactUri;
      return found;
    }
    const auto& champion = o.status.history.champion;
    if (champion && champion->versionId == version.versionId && champion->metric) {
      found.metric = champion->metric;
      found.run = champion->run;
      return found;
    }
    for (const auto& evaluation : registry.listEvaluations(version.versionName(), 100, "").evaluations) {
      auto metrics = crd::metricsOfJson(evaluation.metrics).metrics;
      if (auto value = metrics.find(spec.metric); value != metrics.end()) {
        found.metric = value->second;
        break;
      }
    }
    return found;
  };
  try {
    reading.holder = read(reading.model + "@" + spec.alias);
    bool versionId = !work.request.empty() && std::all_of(work.request.begin(), work.request.end(), ::isdigit) &&
                     work.request.size() <= 20;
    if (versionId) reading.requested = read(reading.model + "@" + work.request);
  } catch (const vertex::ApiError& e) {
    if (e.isRetryable()) throw;  // the work queue backs off
    reading.failure = e.what();
  }
  return reading;
}

json RetrainingPolicyReconciler::patchAnnotations(const json& policy, const json& annotations) {
  auto key = controller::keyOf(policy);
  auto replaced = controller::versionOf(policy);
  // Conditional on the version decided on, like the status write: nothing written in between is lost.
  json patch = {{"metadata", {{"resourceVersion", replaced}, {"annotations", annotations}}}};
  json written = policy;
  for (const auto& [name, value] : annotations.items()) written["metadata"]["annotations"][name] = value;
  written["metadata"]["resourceVersion"] = c_.kube.mergePatchVersion(retrainingPolicyResource(), key.ns, key.name, patch);
  if (c_.policyWrites) c_.policyWrites->record(key, replaced, controller::versionOf(written));
  return written;
}

std::vector<CreateOutcome> RetrainingPolicyReconciler::createRuns(const json& policy, const PolicyPlan& plan) {
  const auto key = controller::keyOf(policy);
  const std::string uid = metadataField(policy, "uid");
  std::vector<CreateOutcome> outcomes;
  for (const auto& create : plan.create) {
    const std::string runName = create.run["metadata"]["name"];
    try {
      c_.kube.create(trainingRunResource(), key.ns, create.run);
      outcomes.push_back(CreateOutcome::Created);
      if (c_.metrics && create.firing.reason == crd::TriggerReason::Schedule) {
        c_.metrics->scheduleSkew(std::chrono::duration<double>(c_.clock.now() - create.firing.nominal).count());
      }
    } catch (const controller::ApiError& e) {
      if (!e.isAlreadyExists()) throw;
      auto existing = c_.kube.get(trainingRunResource(), key.ns, runName);
      bool ours = false;
      for (const auto& owner : existing["metadata"].value("ownerReferences", json::array())) {
        ours = ours || (stringField(owner, "uid") == uid && owner.value("controller", false));
      }
      outcomes.push_back(ours ? CreateOutcome::Deduplicated : CreateOutcome::NameConflict);
    }
  }
  return outcomes;
}

void RetrainingPolicyReconciler::markCounted(const PolicyObserved& o, const PolicyPlan& plan) {
  const auto& ns = o.metadata.namespace_;
  // status.counts includes these runs now. Each mark is conditional on the version read, and recorded
  // with every version it replaced, so no pass counts a run again from a cache that lags the mark.
  for (const auto& name : plan.markCounted) {
    std::string version;
    for (const auto& child : o.children) {
      if (child.name == name) version = child.resourceVersion;
    }
    std::vector<std::string> seen{version};
    for (int attempt = 0; attempt < 3; ++attempt) {
      json patch = {{"metadata", {{"resourceVersion", version}, {"annotations", {{kCountedAnnotation, "true"}}}}}};
      try {
        auto written = c_.kube.mergePatchVersion(trainingRunResource(), ns, name, patch);
        if (c_.runWrites) c_.runWrites->record({ns, name}, seen, written);
        break;
      } catch (const controller::ApiError& e) {
        if (e.isNotFound()) break;
        if (!e.isConflict() || attempt == 2) throw;
        // Written meanwhile (its reconciler's status): mark the version that is there now.
        auto fresh = c_.kube.get(trainingRunResource(), ns, name);
        if (fresh["metadata"].value("annotations", json::object()).contains(kCountedAnnotation)) break;
        version = controller::versionOf(fresh);
        seen.push_back(version);
      }
    }
  }
}

std::vector<controller::Event> RetrainingPolicyReconciler::deleteRuns(const std::string& ns, const PolicyPlan& plan) {
  std::vector<controller::Event> deleted;
  for (const auto& run : plan.remove) {
    try {
      c_.kube.remove(trainingRunResource(), ns, run.name);
      deleted.push_back(controller::normalEvent("SuccessfulDelete", "deleted run " + run.name + ": " + run.why));
    } catch (const controller::ApiError& e) {
      if (!e.isNotFound()) throw;  // already gone: nothing to tell
    }
  }
  return deleted;
}

controller::Result RetrainingPolicyReconciler::act(const json& cached, const PolicyObserved& o, PolicyPlan plan) {
  const auto key = controller::keyOf(cached);
  json policy = cached;  // as this pass's writes leave it
  // The baseline first: were this pass to stop here, the next one sees the edit as made now, which can
  // only skip slots, never replay one.
  if (plan.scheduleState) {
    policy = patchAnnotations(policy, {{kScheduleStateAnnotation, formatScheduleState(*plan.scheduleState)}});
  }
  if (const auto& move = plan.moveAlias) {
    try {
      // A crash between the two calls leaves the alias on no version: the next pass finds no holder
      // and adds it where the status (not yet written) would have put it.
      if (!move->fromVersionName.empty()) c_.registry->mergeVersionAliases(move->fromVersionName, {"-" + move->alias});
      c_.registry->mergeVersionAliases(move->versionName, {move->alias});
    } catch (const vertex::ApiError& e) {
      if (e.isRetryable()) throw;  // nothing written yet: the next pass decides again
      plan = afterPromotionFailed(o, std::move(plan), e.what());
    }
  }
  plan = afterCreates(o, std::move(plan), createRuns(policy, plan));
  if (!o.statusStored || plan.status != o.status) {
    auto replaced = controller::versionOf(policy);
    auto body = controller::statusWriteBody(policy, crd::encodeRetrainingPolicyStatus(plan.status));
    policy["metadata"]["resourceVersion"] = c_.kube.updateStatusVersion(retrainingPolicyResource(), key.ns, body);
    if (c_.policyWrites) c_.policyWrites->record(key, replaced, controller::versionOf(policy));
  }
  markCounted(o, plan);
  auto deleted = deleteRuns(key.ns, plan);
  // After the status: a state whose watermark is not the status's is ignored, never a replay.
  json annotations = json::object();
  if (plan.dataState) annotations[kDataStateAnnotation] = formatDataState(*plan.dataState);
  if (plan.metricHealth) annotations[kMetricHealthAnnotation] = formatMetricHealth(*plan.metricHealth);
  if (!annotations.empty()) policy = patchAnnotations(policy, annotations);
  plan.events.insert(plan.events.end(), deleted.begin(), deleted.end());
  controller::recordEvents(c_.events, policy, plan.events);
  recordMetrics(o, plan);
  if (plan.failure) throw std::runtime_error(*plan.failure);  // told in status and Events; retried with backoff
  return controller::Result{plan.requeueAfter};
}

void RetrainingPolicyReconciler::recordMetrics(const PolicyObserved& o, const PolicyPlan& plan) {
  if (!c_.metrics) return;
  const auto& ns = o.metadata.namespace_;
  const auto& name = o.metadata.name;
  for (const auto& outcome : plan.outcomes) {
    c_.metrics->trigger(ns, name, crd::enumName(outcome.reason, crd::triggerReasonNames()), outcome.outcome);
  }
  auto seconds = [](const std::optional<Clock::time_point>& t) -> std::optional<double> {
    if (!t) return std::nullopt;
    return std::chrono::duration<double>(t->time_since_epoch()).count();
  };
  const auto& status = plan.status;
  const auto& history = status.history;
  c_.metrics->policyState(ns, name, seconds(status.nextScheduleTime), seconds(history.lastScheduleTime),
                          seconds(history.lastSuccessfulTime), static_cast<int>(status.active.size()));
  // A trigger's health is reported once it has been polled.
  auto healthy = [](bool polled, const std::optional<TriggerHealth::Problem>& problem) -> std::optional<bool> {
    if (!polled) return std::nullopt;
    return !problem.has_value();
  };
  std::optional<double> value, pendingObjects, pendingBytes;
  if (history.metric && history.metric->lastValue) value = *history.metric->lastValue;
  if (history.dataWatermark) {
    pendingObjects = static_cast<double>(history.dataWatermark->pendingObjects);
    pendingBytes = static_cast<double>(history.dataWatermark->pendingBytes);
  }
  if (plan.promotion) c_.metrics->promotion(ns, name, crd::enumName(*plan.promotion, crd::promotionResultNames()));
  std::optional<double> champion;
  if (history.champion && history.champion->metric) champion = history.champion->metric;
  c_.metrics->championMetric(ns, name, champion);
  c_.metrics->triggerState(ns, name, healthy(history.dataWatermark.has_value(), plan.health.data),
                           healthy(history.metric.has_value(), plan.health.metric), value, pendingObjects, pendingBytes);
}

}  // namespace vto::reconcilers
