#pragma once
// The RetrainingPolicy kind (vto.dev/v1alpha1): creates TrainingRuns from a template when a trigger
// fires, as a CronJob creates Jobs. Member initialisers are the defaults; durations are seconds.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crd/training_run.h"

namespace vto::crd {

inline constexpr const char* kRetrainingPolicyKind = "RetrainingPolicy";
// Label on every TrainingRun a policy creates; its value is the policy's name.
inline constexpr const char* kRetrainingPolicyLabel = "vto.dev/retraining-policy";
// Annotation that requests a manual retrain; its value (e.g. a unix time) must change to trigger again.
inline constexpr const char* kRetrainRequestedAnnotation = "vto.dev/retrain-requested";

enum class ConcurrencyPolicy { Allow, Forbid, Replace };
enum class TriggerReason { Schedule, NewData, Metric, Manual };
const EnumNames<ConcurrencyPolicy>& concurrencyPolicyNames();
const EnumNames<TriggerReason>& triggerReasonNames();

struct ScheduleTrigger {
  std::string cron;      // 5 fields, or @yearly/@monthly/@weekly/@daily/@hourly
  std::string timeZone;  // IANA name; "" = UTC
};

struct NewDataTrigger {
  std::string gcsPrefix;
  int64_t pollIntervalSeconds = 600;
  int64_t minNewObjects = 1;
};

struct MetricTrigger {
  std::string prometheusUrl;
  std::string query;
  std::optional<double> below;
  std::optional<double> above;
  int64_t forSeconds = 0;
  int64_t pollIntervalSeconds = 300;
};

struct Triggers {
  std::optional<ScheduleTrigger> schedule;
  std::optional<NewDataTrigger> newData;
  std::optional<MetricTrigger> metric;
};

struct TrainingRunTemplate {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  TrainingRunSpec spec;
};

struct RetrainingPolicySpec {
  TrainingRunTemplate templ;  // manifest field `template`
  Triggers triggers;
  bool warmStart = false;
  ConcurrencyPolicy concurrencyPolicy = ConcurrencyPolicy::Forbid;
  std::optional<int64_t> startingDeadlineSeconds;
  int32_t successfulRunsHistoryLimit = 3;
  int32_t failedRunsHistoryLimit = 1;
  bool suspend = false;
};

struct TriggerRecord {
  std::string time;
  TriggerReason reason = TriggerReason::Schedule;
};

struct DataWatermark {
  std::string updated;
  int64_t objects = 0;
};

struct RetrainingPolicyStatus {
  int64_t observedGeneration = 0;
  std::vector<std::string> active;  // names of running TrainingRuns (manifest: [{name: ...}])
  std::optional<TriggerRecord> lastTrigger;
  std::string lastScheduleTime;
  std::string nextScheduleTime;
  std::string lastSuccessfulRun;
  std::optional<DataWatermark> dataWatermark;
  std::vector<Condition> conditions;
};

struct RetrainingPolicy {
  ObjectMeta metadata;
  RetrainingPolicySpec spec;
  RetrainingPolicyStatus status;
};

RetrainingPolicy decodeRetrainingPolicy(const nlohmann::json& object);
RetrainingPolicyStatus decodeRetrainingPolicyStatus(const nlohmann::json& value, const std::string& path);
nlohmann::json encodeRetrainingPolicy(const RetrainingPolicy& policy);
nlohmann::json encodeRetrainingPolicyStatus(const RetrainingPolicyStatus& status);

}  // namespace vto::crd
