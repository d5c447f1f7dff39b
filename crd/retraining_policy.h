#pragma once
// The RetrainingPolicy kind (vto.dev/v1beta1; v1alpha1 is the same, deprecated): creates TrainingRuns from a template when a trigger
// fires, as a CronJob creates Jobs. The contract is the RetrainingPolicy section of API.md; the rules
// behind it are docs/retraining.md. Member initialisers are the defaults. Times are time points (RFC
// 3339 on the wire, crd/timestamp.h); durations are std::chrono::seconds (Go style on the wire,
// crd/duration.h).
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/money.h"
#include "crd/training_run.h"

namespace vto::crd {

inline constexpr const char* kRetrainingPolicyKind = "RetrainingPolicy";
// Label on every TrainingRun a policy creates; its value is the policy's name.
inline constexpr const char* kRetrainingPolicyLabel = "vto.dev/retraining-policy";
// Annotations on every created TrainingRun: why it was created (a TriggerReason name) and the
// trigger's nominal time (RFC 3339, the time its name's unix seconds come from).
inline constexpr const char* kTriggerReasonAnnotation = "vto.dev/trigger-reason";
inline constexpr const char* kTriggerTimeAnnotation = "vto.dev/trigger-time";
// Annotation on the policy that requests a manual retrain: any new value is one request.
inline constexpr const char* kRetrainRequestedAnnotation = "vto.dev/retrain-requested";
// Run names are "<policy>-<unix seconds>": 52 + 1 + 10 digits stays within the 63 of a label value.
inline constexpr size_t kMaxPolicyNameLength = 52;
// The shortest pollInterval a trigger may have (refused at apply below it).
inline constexpr std::chrono::seconds kMinPollInterval{10};

enum class ConcurrencyPolicy { Allow, Forbid, Replace };
enum class MissedRunsPolicy { Latest, Skip, All };
enum class TriggerReason { Schedule, Manual, NewData, Metric };
const EnumNames<ConcurrencyPolicy>& concurrencyPolicyNames();
const EnumNames<MissedRunsPolicy>& missedRunsPolicyNames();
const EnumNames<TriggerReason>& triggerReasonNames();

struct ScheduleTrigger {
  std::string cron;      // 5 fields, or @yearly/@annually/@monthly/@weekly/@daily/@midnight/@hourly
  std::string timeZone;  // IANA name; "" = UTC
  std::chrono::seconds jitter{0};  // 0 = none; else a fixed offset in [0, jitter) hashed from the uid
};

struct NewDataTrigger {
  std::string gcsPrefix;  // gs://BUCKET/PREFIX
  std::string matchGlob;  // "" = every object; passed to the GCS list call
  std::chrono::seconds pollInterval{600};
  int64_t minNewObjects = 1;
  int64_t minNewBytes = 0;
  std::chrono::seconds quietPeriod{0};  // fire only after no new object arrived for this long
};

struct SecretKeyRef {
  std::string name;
  std::string key;
};

struct MetricTrigger {
  std::string prometheusUrl;
  std::string query;
  std::optional<double> below;  // exactly one of below / above (validation says so)
  std::optional<double> above;
  std::chrono::seconds forDuration{0};  // manifest field `for`
  std::chrono::seconds pollInterval{60};
  int32_t maxConsecutiveErrors = 4;
  std::optional<SecretKeyRef> bearerTokenSecret;
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
  Triggers triggers;          // none = only the manual annotation starts runs
  MissedRunsPolicy missedRuns = MissedRunsPolicy::Latest;
  int32_t maxCatchUpRuns = 10;  // for MissedRunsPolicy::All
  std::optional<int64_t> startingDeadlineSeconds;
  ConcurrencyPolicy concurrencyPolicy = ConcurrencyPolicy::Forbid;
  int32_t maxActiveRuns = 1;  // cap for ConcurrencyPolicy::Allow
  std::chrono::seconds cooldown{0};  // least time between runs started by NewData or Metric
  bool warmStart = false;
  int32_t successfulRunsHistoryLimit = 3;
  int32_t failedRunsHistoryLimit = 1;
  bool suspend = false;
  std::optional<PromotionSpec> promotion;  // promote the better registered version (needs template.spec.model)
  // Once the runs this policy created this month (UTC) have cost this many US dollars ("50", "99.50"),
  // triggers create no runs until the next month; "" = no budget.
  std::string budgetMonthlyUsd;
};

struct TriggerRecord {
  Clock::time_point time;
  TriggerReason reason = TriggerReason::Schedule;
  bool operator==(const TriggerRecord&) const = default;
};

// The newest run that succeeded; kept after the run itself is deleted (warm start, rule 10).
struct SuccessfulRun {
  std::string name;
  std::optional<Clock::time_point> completionTime;
  std::string modelUri;  // "<that run's baseOutputDirectory>/model/"
  bool operator==(const SuccessfulRun&) const = default;
};

struct RunCounts {
  int64_t succeeded = 0;
  int64_t failed = 0;
  bool operator==(const RunCounts&) const = default;
};

// What the newData trigger has seen: objects past (timeCreated, name) are new.
struct DataWatermark {
  std::optional<Clock::time_point> timeCreated;
  std::string name;
  int64_t pendingObjects = 0;
  int64_t pendingBytes = 0;
  std::optional<Clock::time_point> lastPollTime;
  bool operator==(const DataWatermark&) const = default;
};

struct MetricStatus {
  std::optional<double> lastValue;  // absent when the last evaluation gave no data
  std::optional<Clock::time_point> lastEvalTime;
  std::optional<Clock::time_point> breachingSince;
  int32_t consecutiveErrors = 0;
  bool operator==(const MetricStatus&) const = default;
};

// What the runs a policy created in `month` (UTC) cost: those that ended and were counted (kept
// here, so deleting them changes nothing) plus the estimates of those still in the cluster uncounted.
struct PolicySpend {
  std::string month;       // "2026-12"
  Usd endedUsd;      // carried: counted runs created in `month`
  Usd estimatedUsd;  // endedUsd + the uncounted runs' status.cost.estimatedUsd
  bool operator==(const PolicySpend&) const = default;
};

// The newest trigger that created no run because the policy's budget was spent.
struct SkippedTrigger {
  Clock::time_point time;  // the trigger's nominal time
  TriggerReason reason = TriggerReason::Schedule;
  std::string skipReason = "BudgetExceeded";
  std::string message;     // with the figures
  bool operator==(const SkippedTrigger&) const = default;
};

// What status carries from pass to pass (docs/retraining.md, rule 2): where each trigger stands and
// what the runs left, which deleting history must never make vto forget. Everything else in status is
// rebuilt from what a pass observes.
struct PolicyHistory {
  std::optional<TriggerRecord> lastTrigger;
  std::optional<Clock::time_point> lastScheduleTime;  // nominal slot of the last scheduled run
  std::optional<Clock::time_point> lastSuccessfulTime;
  std::optional<SuccessfulRun> lastSuccessfulRun;
  std::string lastHandledRetrainRequest;
  int64_t missedSchedules = 0;
  RunCounts counts;
  std::optional<DataWatermark> dataWatermark;
  std::optional<MetricStatus> metric;
  std::optional<Champion> champion;             // with spec.promotion: who holds the alias
  std::optional<PromotionRecord> lastPromotion;  // with spec.promotion: the last decision
  std::string lastHandledPromoteRequest;         // the vto.dev/promote-version value last acted on
  std::string lastComparedVersion;               // the newest version promotion has compared
  std::optional<PolicySpend> spend;               // with spec.budget, or once a run reported a cost
  std::optional<SkippedTrigger> lastSkippedTrigger;
  bool operator==(const PolicyHistory&) const = default;
};

struct RetrainingPolicyStatus {
  int64_t observedGeneration = 0;
  std::vector<std::string> active;  // names of running TrainingRuns (manifest: [{name: ...}])
  std::optional<Clock::time_point> nextScheduleTime;  // jittered
  PolicyHistory history;
  std::vector<Condition> conditions;
  bool operator==(const RetrainingPolicyStatus&) const = default;
};

struct RetrainingPolicy {
  ObjectMeta metadata;
  RetrainingPolicySpec spec;
  RetrainingPolicyStatus status;
};

// Strict decoding (see strict_json.h): throws DecodeError naming the field path.
RetrainingPolicy decodeRetrainingPolicy(const nlohmann::json& object);
RetrainingPolicySpec decodeRetrainingPolicySpec(const nlohmann::json& value, const std::string& path);
RetrainingPolicyStatus decodeRetrainingPolicyStatus(const nlohmann::json& value, const std::string& path);
// Encoding writes every spec field, defaults included, with the manifest's field names.
nlohmann::json encodeRetrainingPolicy(const RetrainingPolicy& policy);
nlohmann::json encodeRetrainingPolicySpec(const RetrainingPolicySpec& spec);
nlohmann::json encodeRetrainingPolicyStatus(const RetrainingPolicyStatus& status);

}  // namespace vto::crd
