#pragma once
// Model registration and promotion (API.md "Model registration (spec.model)" and "Promotion
// (spec.promotion)"): what a TrainingRun registers in Vertex AI Model Registry when it succeeds, what
// a RetrainingPolicy promotes, and what their status records. Strict decoding like the rest of crd/.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "crd/enum_names.h"
#include "crd/strict_json.h"

namespace vto::crd {

struct ServingContainer {
  std::string imageUri;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::string predictRoute;
  std::string healthRoute;
};

struct ModelEvaluationSpec {
  std::string metricsFile = "metrics.json";  // under artifactUri: a flat JSON object of numbers
};

// spec.model of a TrainingRun.
struct ModelSpec {
  std::string model;        // the model ID: projects/P/locations/L/models/<model>
  std::string location;     // "" = the run's
  std::string displayName;  // "" = the model ID
  std::string artifactUri;  // "" = "<baseOutputDirectory>/model/" (AIP_MODEL_DIR)
  ServingContainer servingContainer;
  std::vector<std::string> versionAliases;
  std::map<std::string, std::string> labels;
  std::optional<ModelEvaluationSpec> evaluation;
};

ModelSpec readModelSpec(const json& value, const std::string& path);
json encodeModelSpec(const ModelSpec& spec);
// The artifact directory a run registers: spec.model.artifactUri or "<baseOutputDirectory>/model/".
std::string artifactUriOf(const ModelSpec& spec, const std::string& baseOutputDirectory);

// A metrics file (spec.model.evaluation.metricsFile) is a flat JSON object of finite numbers, read
// with these bounds: it is the tenant's file.
inline constexpr std::size_t kMaxMetricsFileBytes = 64 * 1024;
inline constexpr std::size_t kMaxMetrics = 256;
inline constexpr std::size_t kMaxMetricNameBytes = 128;
struct MetricsParse {
  std::map<std::string, double> metrics;
  std::string error;  // non-empty: not a flat JSON object of numbers, and why (metrics is empty then)
};
MetricsParse parseMetricsFile(const std::string& text);
MetricsParse metricsOfJson(const json& object);

// status.model of a TrainingRun: the version its success became (or the upload in flight).
struct RegisteredModel {
  std::string name;       // projects/P/locations/L/models/M
  std::string versionId;  // "7"
  std::vector<std::string> versionAliases;
  std::string artifactUri;
  std::map<std::string, double> metrics;  // the evaluation imported from metricsFile, if any
  std::optional<Clock::time_point> registerTime;
  // The upload journal: set before models:upload is called, so a crash before its operation is
  // recorded waits for that upload's version instead of making a second one.
  std::optional<Clock::time_point> uploadStartTime;
  std::string operation;  // the models.upload operation in flight, until the version exists
  bool evaluationImported = false;
  std::string metricsError;  // why the metrics file gave no metrics (the version is registered anyway)
  bool operator==(const RegisteredModel&) const = default;
};
RegisteredModel readRegisteredModel(const json& value, const std::string& path);
json encodeRegisteredModel(const RegisteredModel& model);

enum class PromotionGoal { Maximize, Minimize };
const EnumNames<PromotionGoal>& promotionGoalNames();

// spec.promotion of a RetrainingPolicy.
struct PromotionSpec {
  std::string metric;  // a key of the evaluation metrics
  PromotionGoal goal = PromotionGoal::Maximize;
  double minImprovement = 0;  // absolute
  std::string alias = "champion";
};
PromotionSpec readPromotionSpec(const json& value, const std::string& path);
json encodePromotionSpec(const PromotionSpec& spec);

// status.champion: the version that holds the alias, as vto promoted it.
struct Champion {
  std::string versionId;
  std::optional<double> metric;
  std::string run;
  std::string artifactUri;
  std::optional<Clock::time_point> promotedTime;
  bool operator==(const Champion&) const = default;
};

enum class PromotionResult { Promoted, NotBetter, NoMetric, Manual, Failed };
const EnumNames<PromotionResult>& promotionResultNames();

// status.lastPromotion: the last decision, with both numbers in its message.
struct PromotionRecord {
  std::string versionId;
  PromotionResult result = PromotionResult::Promoted;
  std::string message;
  std::optional<Clock::time_point> time;
  bool operator==(const PromotionRecord&) const = default;
};

Champion readChampion(const json& value, const std::string& path);
json encodeChampion(const Champion& champion);
PromotionRecord readPromotionRecord(const json& value, const std::string& path);
json encodePromotionRecord(const PromotionRecord& record);

}  // namespace vto::crd
