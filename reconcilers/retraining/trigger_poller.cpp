#include "reconcilers/retraining/trigger_poller.h"

#include <algorithm>

#include "base/base64.h"
#include "base/json_fields.h"
#include "base/rfc3339.h"
#include "reconcilers/retraining/data_listing.h"
#include "reconcilers/retraining/decide.h"

namespace vto::reconcilers {

using nlohmann::json;

namespace {

constexpr const char* kDataTarget = "data|";
constexpr const char* kMetricTarget = "metric|";

std::string annotationOf(const crd::ObjectMeta& meta, const char* key) {
  auto found = meta.annotations.find(key);
  return found == meta.annotations.end() ? "" : found->second;
}

bool hasPolledTrigger(const crd::RetrainingPolicy& policy) {
  return !policy.spec.suspend && (policy.spec.triggers.newData || policy.spec.triggers.metric);
}

// Splits "data|ns/name" into its kind prefix and key.
std::pair<std::string, controller::ObjectKey> parseTarget(const std::string& target) {
  auto bar = target.find('|');
  auto slash = target.find('/', bar + 1);
  return {target.substr(0, bar + 1), {target.substr(bar + 1, slash - bar - 1), target.substr(slash + 1)}};
}

}  // namespace

std::optional<governance::TenancyViolation> policyTenancyViolation(const crd::RetrainingPolicy& policy,
                                                            const PolicyTenancy& tenancy, NamespaceLabels& namespaces) {
  if (tenancy.rules.empty()) return std::nullopt;
  auto ns = namespaces.get(policy.metadata.namespace_);
  return governance::decidePolicyTenancy(policy.spec, tenancy.defaults, ns, tenancy.rules).violation;
}

std::string dataBasis(const crd::RetrainingPolicy& policy) {
  const auto& trigger = policy.spec.triggers.newData;
  const auto& mark = policy.status.history.dataWatermark;
  json basis = {{"prefix", trigger ? trigger->gcsPrefix : ""}, {"glob", trigger ? trigger->matchGlob : ""}};
  if (mark && mark->timeCreated) basis["watermark"] = {rfc3339Exact(*mark->timeCreated), mark->name};
  if (mark && mark->lastPollTime) basis["polled"] = rfc3339Exact(*mark->lastPollTime);
  basis["state"] = annotationOf(policy.metadata, kDataStateAnnotation);
  return basis.dump();
}

std::string metricBasis(const crd::RetrainingPolicy& policy) {
  const auto& trigger = policy.spec.triggers.metric;
  if (!trigger) return "";
  json basis = {{"url", trigger->prometheusUrl}, {"query", trigger->query}};
  if (trigger->bearerTokenSecret) basis["secret"] = {trigger->bearerTokenSecret->name, trigger->bearerTokenSecret->key};
  return basis.dump();
}

void TriggerReadings::putData(const std::string& uid, std::string basis, DataPoll poll) {
  std::lock_guard lock(mutex_);
  auto& readings = byUid_[uid];
  readings.dataBasis = std::move(basis);
  readings.data = std::move(poll);
}

void TriggerReadings::putMetric(const std::string& uid, std::string basis, MetricEval eval) {
  std::lock_guard lock(mutex_);
  auto& readings = byUid_[uid];
  readings.metricBasis = std::move(basis);
  readings.metric = std::move(eval);
}

std::optional<DataPoll> TriggerReadings::data(const std::string& uid, const std::string& basis) const {
  std::lock_guard lock(mutex_);
  auto found = byUid_.find(uid);
  if (found == byUid_.end() || found->second.dataBasis != basis) return std::nullopt;
  return found->second.data;
}

std::optional<MetricEval> TriggerReadings::metric(const std::string& uid, const std::string& basis) const {
  std::lock_guard lock(mutex_);
  auto found = byUid_.find(uid);
  if (found == byUid_.end() || found->second.metricBasis != basis) return std::nullopt;
  return found->second.metric;
}

void TriggerReadings::forget(const std::string& uid) {
  std::lock_guard lock(mutex_);
  byUid_.erase(uid);
}

size_t TriggerReadings::size() const {
  std::lock_guard lock(mutex_);
  return byUid_.size();
}

TriggerPoller::TriggerPoller(const controller::ObjectCache& policies, controller::KubeClient& kube,
                             TriggerClients clients, const PolicyTenancy& tenancy, NamespaceLabels& namespaces,
                             const controller::OwnWrites* ownWrites, const Clock& clock, Wake wake,
                             TriggerPollerOptions options)
    : policies_(policies),
      kube_(kube),
      clients_(clients),
      tenancy_(tenancy),
      namespaces_(namespaces),
      ownWrites_(ownWrites),
      clock_(clock),
      wake_(std::move(wake)),
      options_(options) {}

std::vector<std::string> TriggerPoller::update(const json& object) {
  auto key = controller::keyOf(object);
  std::optional<crd::RetrainingPolicy> policy;
  if (policies_.uidAt(key) == metadataField(object, "uid")) {
    try {
      policy = crd::decodeRetrainingPolicy(object);
    } catch (const std::exception&) {
      // the reconciler reports it; nothing is polled for it
    }
  }
  std::string name = key.ns + "/" + key.name;
  std::lock_guard lock(mutex_);
  targets_.erase(kDataTarget + name);
  targets_.erase(kMetricTarget + name);
  if (!policy) {
    readings_.forget(metadataField(object, "uid"));
    return {};
  }
  if (!hasPolledTrigger(*policy)) return {};
  std::vector<std::string> added;
  if (policy->spec.triggers.newData) added.push_back(kDataTarget + name);
  if (policy->spec.triggers.metric) added.push_back(kMetricTarget + name);
  targets_.insert(added.begin(), added.end());
  return added;
}

std::vector<std::string> TriggerPoller::targets() const {
  std::lock_guard lock(mutex_);
  return {targets_.begin(), targets_.end()};
}

std::string TriggerPoller::namespaceOf(const std::string& target) { return parseTarget(target).second.ns; }

Clock::duration TriggerPoller::poll(const std::string& target) {
  auto [kind, key] = parseTarget(target);
  auto cached = policies_.get(key);
  if (!cached) return options_.recheck;
  // The cache does not show the reconciler's last write yet: judged against it, a reading would be stale.
  if (ownWrites_ != nullptr && ownWrites_->waitingFor(*cached)) return std::chrono::seconds(1);
  std::optional<crd::RetrainingPolicy> policy;
  try {
    policy = crd::decodeRetrainingPolicy(*cached);
  } catch (const std::exception&) {
    return options_.recheck;  // the reconciler reports it
  }
  if (!hasPolledTrigger(*policy)) return options_.recheck;
  // The rules are checked on the very object whose prefix or URL is used (a refused one is reported
  // by the reconciler and never read with the operator's identity).
  if (policyTenancyViolation(*policy, tenancy_, namespaces_)) return options_.recheck;
  auto now = clock_.now();
  return kind == kDataTarget ? pollData(*policy, now) : pollMetric(*policy, now);
}

Clock::duration TriggerPoller::pollData(const crd::RetrainingPolicy& policy, Clock::time_point now) {
  const auto& trigger = policy.spec.triggers.newData;
  if (!trigger) return options_.recheck;
  const auto& uid = policy.metadata.uid;
  const auto& status = policy.status.history.dataWatermark;
  auto basis = dataBasis(policy);
  // A reading the policy's pass has not judged yet: give the pass its time before polling again.
  if (auto waiting = readings_.data(uid, basis); waiting && now - waiting->at < options_.judgeWithin) {
    return std::chrono::seconds(1);
  }
  auto state = parseDataState(annotationOf(policy.metadata, kDataStateAnnotation)).value_or(DataState{});
  auto due = nextDataPoll(*trigger, status, state, now);
  if (due > now) return std::min<Clock::duration>(due - now, options_.recheck);
  DataPoll poll = clients_.gcs == nullptr
                      ? DataPoll{now, std::nullopt, "this operator has no Cloud Storage client configured"}
                      : pollNewData(*clients_.gcs, *trigger, status, state, clock_);
  readings_.putData(uid, std::move(basis), std::move(poll));
  wake_({policy.metadata.namespace_, policy.metadata.name});
  return std::chrono::seconds(1);
}

Clock::duration TriggerPoller::pollMetric(const crd::RetrainingPolicy& policy, Clock::time_point now) {
  const auto& trigger = policy.spec.triggers.metric;
  if (!trigger) return options_.recheck;
  const auto& uid = policy.metadata.uid;
  auto basis = metricBasis(policy);
  const auto& status = policy.status.history.metric;
  if (auto waiting = readings_.metric(uid, basis);
      waiting && (!status || !status->lastEvalTime || *status->lastEvalTime < waiting->at) &&
      now - waiting->at < options_.judgeWithin) {
    return std::chrono::seconds(1);
  }
  auto due = nextMetricEval(*trigger, status, now);
  if (due > now) return std::min<Clock::duration>(due - now, options_.recheck);
  MetricEval eval{now, {}};
  try {
    if (clients_.prometheus == nullptr) throw std::runtime_error("this operator has no Prometheus client configured");
    std::string token =
        trigger->bearerTokenSecret ? bearerToken(policy.metadata.namespace_, *trigger->bearerTokenSecret) : "";
    auto response = clients_.prometheus->instantQuery(trigger->prometheusUrl, trigger->query, token,
                                                      policy.metadata.namespace_);
    eval.result = classifyPrometheusResponse(response.status, response.body);
  } catch (const std::exception& e) {
    eval.result = MetricResult{MetricResult::Kind::Failed, 0, e.what()};
  }
  readings_.putMetric(uid, std::move(basis), std::move(eval));
  wake_({policy.metadata.namespace_, policy.metadata.name});
  return std::chrono::seconds(1);
}

std::string TriggerPoller::bearerToken(const std::string& ns, const crd::SecretKeyRef& ref) {
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
    token = base64UrlDecode(text);
  } catch (const std::exception&) {
    throw std::runtime_error("the Secret " + ns + "/" + ref.name + " key \"" + ref.key + "\" is not base64");
  }
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
  return token;
}

}  // namespace vto::reconcilers
