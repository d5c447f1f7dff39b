#include "reconcilers/retraining/metric_trigger.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "base/json_fields.h"

namespace vto::reconcilers {

using nlohmann::json;
using Kind = MetricResult::Kind;
using TimePoint = Clock::time_point;

namespace {

MetricResult failed(std::string detail) { return {Kind::Failed, 0, std::move(detail)}; }

// Prometheus writes sample values as strings: "0.91", "NaN", "+Inf".
std::optional<double> sampleValue(const json& pair) {
  if (!pair.is_array() || pair.size() != 2 || !pair[1].is_string()) return std::nullopt;
  const auto text = pair[1].get<std::string>();
  if (text == "NaN") return std::nan("");
  if (text == "+Inf") return INFINITY;
  if (text == "-Inf") return -INFINITY;
  try {
    size_t used = 0;
    double value = std::stod(text, &used);
    if (used != text.size()) return std::nullopt;
    return value;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string clip(const std::string& text) { return text.size() > 200 ? text.substr(0, 200) + "..." : text; }

MetricResult fromSample(const json& pair) {
  auto value = sampleValue(pair);
  if (!value) return failed("a sample value is not a number");
  if (std::isnan(*value)) return {Kind::NoData, 0, "the query returned NaN"};
  return {Kind::Value, *value, ""};
}

}  // namespace

MetricResult classifyPrometheusResponse(int httpStatus, const std::string& body) {
  auto answer = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object()) {
    // Never the body itself: prometheusUrl is a tenant's, and a status condition would hand them
    // whatever service behind the operator's network position they pointed it at.
    return failed("HTTP " + std::to_string(httpStatus) + " with a body that is not Prometheus's JSON (" +
                  std::to_string(body.size()) +
                  " bytes); set prometheusUrl to the Prometheus server's base URL, e.g. http://prometheus.monitoring:9090");
  }
  if (stringField(answer, "status") != "success") {
    std::string kind = stringField(answer, "errorType");
    std::string error = stringField(answer, "error");
    return failed("HTTP " + std::to_string(httpStatus) + ", Prometheus says " + clip(kind + ": " + error));
  }
  if (httpStatus != 200) return failed("HTTP " + std::to_string(httpStatus));
  const auto data = answer.value("data", json::object());
  const auto type = stringField(data, "resultType");
  const auto result = data.value("result", json());
  if (type == "scalar") return fromSample(result);
  if (type != "vector") {
    return failed("the query gives a " + clip(type) + ", not an instant vector; write a query for one value (no [range])");
  }
  if (!result.is_array()) return failed("the result is not a list");
  if (result.empty()) return {Kind::NoData, 0, "the query returned no series"};
  if (result.size() > 1) {
    return {Kind::Ambiguous, 0,
            "the query returned " + std::to_string(result.size()) +
                " series; it must return exactly one: narrow its labels or aggregate (e.g. max(...))"};
  }
  return fromSample(result[0].value("value", json()));
}

std::optional<MetricHealth> parseMetricHealth(const std::string& text) {
  auto value = json::parse(text, nullptr, false);
  if (!value.is_object()) return std::nullopt;
  return MetricHealth{stringField(value, "reason"), stringField(value, "message")};
}

std::string formatMetricHealth(const MetricHealth& health) {
  return json{{"reason", health.reason}, {"message", health.message}}.dump();
}

TimePoint nextMetricEval(const crd::MetricTrigger& trigger, const std::optional<crd::MetricStatus>& status,
                         TimePoint now) {
  if (!status || !status->lastEvalTime) return now;
  return *status->lastEvalTime + std::max<Clock::duration>(trigger.pollInterval, std::chrono::seconds(1));
}

MetricDecision decideMetric(const crd::MetricTrigger& trigger, const std::optional<crd::MetricStatus>& status,
                            const MetricHealth& health, const std::optional<MetricEval>& eval, bool armed,
                            TimePoint now) {
  MetricDecision decision;
  decision.status = status.value_or(crd::MetricStatus{});
  decision.health = health;
  auto& out = decision.status;
  if (eval) {
    out.lastEvalTime = eval->at;
    const auto& result = eval->result;
    if (result.kind == Kind::Failed) {
      ++out.consecutiveErrors;
      const int32_t budget = std::max(1, trigger.maxConsecutiveErrors);
      if (out.consecutiveErrors >= budget) {
        // An outage is not a breach that held.
        out.breachingSince.reset();
        out.lastValue.reset();
        decision.health = {"MetricQueryFailed", std::to_string(out.consecutiveErrors) +
                                                    " queries in a row failed, the last: " + result.detail};
        if (out.consecutiveErrors == budget) decision.failedEvent = decision.health.message;
      }
    } else {
      out.consecutiveErrors = 0;
      decision.health = {};
      if (result.kind == Kind::Value) {
        out.lastValue = result.value;
        bool breach = trigger.below ? result.value < *trigger.below : (trigger.above && result.value > *trigger.above);
        if (!breach || !armed) {
          out.breachingSince.reset();
        } else {
          if (!out.breachingSince) out.breachingSince = eval->at;
          if (eval->at - *out.breachingSince >= trigger.forDuration) {
            auto interval = std::max<std::chrono::seconds>(trigger.pollInterval, std::chrono::seconds(1));
            auto since = std::chrono::floor<std::chrono::seconds>(eval->at.time_since_epoch());
            decision.fire = TimePoint(since - since % interval);
          }
        }
      } else {
        out.lastValue.reset();
        out.breachingSince.reset();  // NoData restarts `for`; an ambiguous answer is no evidence either
        if (result.kind == Kind::Ambiguous) decision.health = {"MetricQueryAmbiguous", result.detail};
      }
    }
  }
  decision.nextEval = nextMetricEval(trigger, out, now);
  return decision;
}

void afterFiring(MetricDecision& decision) {
  if (decision.fire) decision.status.breachingSince.reset();
}

}  // namespace vto::reconcilers
