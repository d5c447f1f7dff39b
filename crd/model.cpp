#include "crd/model.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "crd/timestamp.h"

namespace vto::crd {

namespace {

std::vector<std::string> readStrings(ObjectReader& r, const char* key) {
  std::vector<std::string> out;
  r.stringList(key, out);
  return out;
}

}  // namespace

ModelSpec readModelSpec(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  ModelSpec spec;
  r.string("model", spec.model);
  r.string("location", spec.location);
  r.string("displayName", spec.displayName);
  r.string("artifactUri", spec.artifactUri);
  r.with("servingContainer", [&](const json& v, const std::string& p) {
    ObjectReader c(v, p);
    auto& s = spec.servingContainer;
    c.string("imageUri", s.imageUri);
    c.stringList("command", s.command);
    c.stringList("args", s.args);
    c.stringMap("env", s.env);
    c.string("predictRoute", s.predictRoute);
    c.string("healthRoute", s.healthRoute);
    c.finish();
  });
  r.stringList("versionAliases", spec.versionAliases);
  r.stringMap("labels", spec.labels);
  r.with("evaluation", [&](const json& v, const std::string& p) {
    ObjectReader e(v, p);
    ModelEvaluationSpec evaluation;
    e.string("metricsFile", evaluation.metricsFile);
    e.finish();
    spec.evaluation = evaluation;
  });
  r.finish();
  return spec;
}

json encodeModelSpec(const ModelSpec& spec) {
  json out = {{"model", spec.model}};
  if (!spec.location.empty()) out["location"] = spec.location;
  if (!spec.displayName.empty()) out["displayName"] = spec.displayName;
  if (!spec.artifactUri.empty()) out["artifactUri"] = spec.artifactUri;
  const auto& s = spec.servingContainer;
  json container = {{"imageUri", s.imageUri}};
  if (!s.command.empty()) container["command"] = s.command;
  if (!s.args.empty()) container["args"] = s.args;
  if (!s.env.empty()) container["env"] = s.env;
  if (!s.predictRoute.empty()) container["predictRoute"] = s.predictRoute;
  if (!s.healthRoute.empty()) container["healthRoute"] = s.healthRoute;
  out["servingContainer"] = container;
  if (!spec.versionAliases.empty()) out["versionAliases"] = spec.versionAliases;
  if (!spec.labels.empty()) out["labels"] = spec.labels;
  if (spec.evaluation) out["evaluation"] = {{"metricsFile", spec.evaluation->metricsFile}};
  return out;
}

std::string artifactUriOf(const ModelSpec& spec, const std::string& baseOutputDirectory) {
  if (!spec.artifactUri.empty()) return spec.artifactUri.back() == '/' ? spec.artifactUri : spec.artifactUri + "/";
  std::string base = baseOutputDirectory;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/model/";
}

MetricsParse metricsOfJson(const json& object) {
  MetricsParse out;
  if (!object.is_object()) {
    out.error = "not a JSON object but " + std::string(object.type_name()) + "; write e.g. {\"auc\": 0.91}";
    return out;
  }
  if (object.size() > kMaxMetrics) {
    out.error = std::to_string(object.size()) + " metrics, more than the " + std::to_string(kMaxMetrics) + " vto reads";
    return out;
  }
  for (const auto& [key, value] : object.items()) {
    std::string name = key.substr(0, kMaxMetricNameBytes);
    if (key.empty() || key.size() > kMaxMetricNameBytes) {
      out.error = "a metric name must be 1 to " + std::to_string(kMaxMetricNameBytes) + " characters";
    } else if (!value.is_number() || !std::isfinite(value.get<double>())) {
      out.error = "\"" + name + "\" is " + (value.is_number() ? std::string("not finite") : "a " + std::string(value.type_name())) +
                  ", not a number (the file must be a flat JSON object of numbers)";
    } else {
      out.metrics[key] = value.get<double>();
      continue;
    }
    out.metrics.clear();
    return out;
  }
  return out;
}

MetricsParse parseMetricsFile(const std::string& text) {
  if (text.size() > kMaxMetricsFileBytes) {
    return {{}, "larger than " + std::to_string(kMaxMetricsFileBytes / 1024) + " KiB"};
  }
  json parsed = json::parse(text, nullptr, false);
  if (parsed.is_discarded()) return {{}, "not valid JSON"};
  return metricsOfJson(parsed);
}

RegisteredModel readRegisteredModel(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  RegisteredModel model;
  r.string("name", model.name);
  r.string("versionId", model.versionId);
  model.versionAliases = readStrings(r, "versionAliases");
  r.string("artifactUri", model.artifactUri);
  r.with("metrics", [&](const json& m, const std::string& mp) {
    if (!m.is_object()) throw DecodeError(mp, "must be a map of numbers");
    for (const auto& [k, n] : m.items()) decodeField([&, &k = k, &n = n] { model.metrics[k] = readNumber(n, joinPath(mp, k)); });
  });
  readTime(r, "registerTime", model.registerTime);
  readTime(r, "uploadStartTime", model.uploadStartTime);
  r.string("operation", model.operation);
  r.boolean("evaluationImported", model.evaluationImported);
  r.string("metricsError", model.metricsError);
  r.finish();
  return model;
}

json encodeRegisteredModel(const RegisteredModel& model) {
  json out = json::object();
  if (!model.name.empty()) out["name"] = model.name;
  if (!model.versionId.empty()) out["versionId"] = model.versionId;
  if (!model.versionAliases.empty()) out["versionAliases"] = model.versionAliases;
  if (!model.artifactUri.empty()) out["artifactUri"] = model.artifactUri;
  json metrics = json::object();
  for (const auto& [k, v] : model.metrics) {
    if (std::isfinite(v)) metrics[k] = v;  // JSON has no NaN or infinity
  }
  if (!metrics.empty()) out["metrics"] = metrics;
  writeTime(out, "registerTime", model.registerTime);
  writeTime(out, "uploadStartTime", model.uploadStartTime);
  if (!model.operation.empty()) out["operation"] = model.operation;
  if (model.evaluationImported) out["evaluationImported"] = true;
  if (!model.metricsError.empty()) out["metricsError"] = model.metricsError;
  return out;
}

const EnumNames<PromotionGoal>& promotionGoalNames() {
  static const EnumNames<PromotionGoal> names = {{PromotionGoal::Maximize, "Maximize"}, {PromotionGoal::Minimize, "Minimize"}};
  return names;
}

const EnumNames<PromotionResult>& promotionResultNames() {
  static const EnumNames<PromotionResult> names = {{PromotionResult::Promoted, "Promoted"},
                                                   {PromotionResult::NotBetter, "NotBetter"},
                                                   {PromotionResult::NoMetric, "NoMetric"},
                                                   {PromotionResult::Manual, "Manual"},
                                                   {PromotionResult::Failed, "Failed"}};
  return names;
}

PromotionSpec readPromotionSpec(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  PromotionSpec spec;
  r.string("metric", spec.metric);
  r.with("goal", [&](const json& v, const std::string& p) { spec.goal = readEnum(v, p, promotionGoalNames()); });
  r.with("minImprovement", [&](const json& v, const std::string& p) {
    spec.minImprovement = readNumber(v, p);
    if (!(spec.minImprovement >= 0) || !std::isfinite(spec.minImprovement)) throw DecodeError(p, "must be a number >= 0");
  });
  r.string("alias", spec.alias);
  r.finish();
  return spec;
}

json encodePromotionSpec(const PromotionSpec& spec) {
  return {{"metric", spec.metric},
          {"goal", enumName(spec.goal, promotionGoalNames())},
          {"minImprovement", spec.minImprovement},
          {"alias", spec.alias}};
}

Champion readChampion(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  Champion c;
  r.string("versionId", c.versionId);
  r.number("metric", c.metric);
  r.string("run", c.run);
  r.string("artifactUri", c.artifactUri);
  readTime(r, "promotedTime", c.promotedTime);
  r.finish();
  return c;
}

json encodeChampion(const Champion& c) {
  json out = {{"versionId", c.versionId}};
  if (c.metric && std::isfinite(*c.metric)) out["metric"] = *c.metric;
  if (!c.run.empty()) out["run"] = c.run;
  if (!c.artifactUri.empty()) out["artifactUri"] = c.artifactUri;
  writeTime(out, "promotedTime", c.promotedTime);
  return out;
}

PromotionRecord readPromotionRecord(const json& value, const std::string& path) {
  ObjectReader r(value, path);
  PromotionRecord p;
  r.string("versionId", p.versionId);
  r.with("result", [&](const json& v, const std::string& vp) { p.result = readEnum(v, vp, promotionResultNames()); });
  r.string("message", p.message);
  readTime(r, "time", p.time);
  r.finish();
  return p;
}

json encodePromotionRecord(const PromotionRecord& p) {
  json out = {{"versionId", p.versionId}, {"result", enumName(p.result, promotionResultNames())}, {"message", p.message}};
  writeTime(out, "time", p.time);
  return out;
}

}  // namespace vto::crd
