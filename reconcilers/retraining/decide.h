#pragma once
// The RetrainingPolicy reconciler's decisions as one pure function: decidePolicy(PolicyObserved) ->
// PolicyPlan, in the same observe -> decide -> act shape as the TrainingRun reconciler:
//
//   observe  the policy and its runs from the informer caches, the newest reading of its polled
//            triggers (TriggerPoller, off the reconcile workers), the tenancy rules, the clock;
//   decide   (this header: no I/O, no clock; tested as tables) the runs to create and delete, the
//            status, the Events, the state annotations, when to come back;
//   act      carries it out: one status write, Events from one place.
//
// Run names come from the trigger (`<policy>-<unix seconds of its nominal time>`), never from the wall
// clock, so a crash between creating a run and writing status cannot make a second run. Status is
// rebuilt every pass; only the watermarks (crd::PolicyHistory) are carried, as one value, each the
// newer of what status and the runs' annotations say, so deleting history never replays a trigger.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "controller/event.h"
#include "crd/retraining_policy.h"
#include "governance/tenancy.h"
#include "reconcilers/retraining/metric_trigger.h"
#include "reconcilers/retraining/new_data_trigger.h"

namespace vto::reconcilers {

// On a run created for a manual request: the annotation value it answers (the request's watermark).
inline constexpr const char* kRetrainRequestAnnotation = "vto.dev/retrain-request";
// On the policy: the schedule and suspension its missed-slot baseline was taken under, and since when
// (a JSON object, see ScheduleState). Written by the operator; status has no field for it.
inline constexpr const char* kScheduleStateAnnotation = "vto.dev/schedule-state";
// On a finished run once status.counts includes it: runs finish in any order and are observed late,
// so no time watermark can tell which were counted.
inline constexpr const char* kCountedAnnotation = "vto.dev/counted";
// On the policy: the newData trigger's overlap window and quiet-period state (DataState) and the
// metric trigger's health (MetricHealth), JSON objects written by the operator.
inline constexpr const char* kDataStateAnnotation = "vto.dev/data-state";
inline constexpr const char* kMetricHealthAnnotation = "vto.dev/metric-health";
// On a run created by newData, beside crd::kDataWatermarkAnnotation (its timeCreated): the name of
// the newest object it folded in, so the (timeCreated, name) watermark can be carried forward.
inline constexpr const char* kDataWatermarkNameAnnotation = "vto.dev/data-watermark-name";
// On the policy, written by the user: move the promotion alias to this version (a rollback or a
// forced promotion), recorded as Manual.
inline constexpr const char* kPromoteVersionAnnotation = "vto.dev/promote-version";
// Beyond this many missed slots `missedRuns: Latest` raises TooManyMissedSchedules (CronJob's 100).
inline constexpr int64_t kTooManyMissed = 100;
// Missed slots are counted one by one up to here; more are reported as this many.
inline constexpr int64_t kMissedCountCap = 1000;

// The condition types of a RetrainingPolicy, in the order status lists them.
// Reconciling and Stalled are kstatus's, derived last (policyHealth): Ready is True when the policy is
// valid and its triggers answer; Stalled when nothing moves without an edit (an invalid spec, a name
// conflict); Reconciling stays False, as a policy's work ends with each pass (its runs report their own).
enum class PolicyCondition { Valid, Ready, TriggersHealthy, Suspended, Reconciling, Stalled };
const char* policyConditionName(PolicyCondition type);

// Every reason vto writes into a policy's conditions and the Events that go with them.
enum class PolicyReason {
  Valid, InvalidSpec, UnknownTimeZone, TenantPolicyViolation, Reconciled, RunNameConflict, Healthy,
  DataPollFailed, MetricQueryFailed, MetricQueryAmbiguous, Suspended, NotSuspended,
};
const char* policyReasonName(PolicyReason reason);

// What the baseline of missed slots depends on besides lastScheduleTime: the schedule and suspension
// last seen, and since when they hold (the last schedule change or unsuspension).
struct ScheduleState {
  std::string cron;
  std::string timeZone;
  bool suspended = false;
  std::optional<Clock::time_point> since;
  bool operator==(const ScheduleState&) const = default;
};
std::optional<ScheduleState> parseScheduleState(const std::string& text);  // nullopt when unreadable
std::string formatScheduleState(const ScheduleState& state);

// What a pass needs to know of one run the policy controls, read leniently: a run a user edited must
// not stop the policy.
struct ChildRun {
  std::string name;
  std::optional<crd::Phase> phase;  // nullopt while the run has no status yet
  bool deleting = false;
  std::optional<Clock::time_point> created;
  std::optional<Clock::time_point> completed;
  std::optional<Clock::time_point> triggerTime;
  std::optional<crd::TriggerReason> triggerReason;
  std::string retrainRequest;
  std::optional<DataPosition> dataWatermark;  // on runs of the newData trigger
  std::string baseOutputDirectory;
  bool counted = false;
  std::string resourceVersion;  // the version read, which the counted mark's patch is conditional on
  bool registersModel = false;                // spec.model is set
  std::optional<crd::RegisteredModel> model;  // status.model, once ModelRegistered is True
  std::optional<Usd> costUsd;            // status.cost.estimatedUsd, when it reads as dollars

  bool succeeded() const { return phase == crd::Phase::Succeeded; }
  // Over for the policy: finished, or Invalid (it will not run until someone edits it).
  bool ended() const { return crd::isFinished(phase) || phase == crd::Phase::Invalid; }
  bool unsuccessful() const { return ended() && !succeeded(); }
  bool active() const { return !ended() && !deleting; }
  // Succeeded with a model still to register: kept through history pruning until it is done.
  bool registering() const { return succeeded() && registersModel && !model; }
  // Invalid runs have no completion time; their creation stands in.
  std::optional<Clock::time_point> endedAt() const { return completed ? completed : created; }
};

// One model version as promotion judges it.
struct VersionMetric {
  std::string versionId;
  std::optional<double> metric;  // its value of spec.promotion.metric, if its evaluation has it
  std::string run;               // the policy's run that registered it, if known
  std::string artifactUri;
};

// What the Model Registry says, read by observe only when promotion has something to decide
// (promotionWork): who holds the alias, and the version a promote-version request names.
struct PromotionReading {
  std::string model;                       // projects/P/locations/L/models/M
  std::optional<VersionMetric> holder;     // nullopt: no version holds the alias (or no model yet)
  std::optional<VersionMetric> requested;  // nullopt: the requested version does not exist
  std::optional<std::string> failure;      // the registry could not be read (not retryable)
};

struct PolicyObserved {
  Clock::time_point now{};
  crd::ObjectMeta metadata;                   // always decoded
  std::optional<crd::RetrainingPolicy> policy;  // nullopt: it does not decode (decodeError says why)
  std::string decodeError;
  crd::RetrainingPolicyStatus status;  // as stored ({} when unreadable)
  bool statusStored = false;
  std::vector<ChildRun> children;  // the TrainingRuns this policy controls
  // The state vto keeps in annotations; nullopt when absent or unreadable.
  std::optional<ScheduleState> scheduleState;
  std::optional<DataState> dataState;
  std::optional<MetricHealth> metricHealth;
  // The newest readings of the polled triggers (TriggerPoller) that match the policy as it is now.
  std::optional<DataPoll> dataPoll;
  std::optional<MetricEval> metricEval;
  // The tenancy rules refuse the template or the data prefix (then nothing is polled either).
  std::optional<governance::TenancyViolation> tenancyViolation;
  std::optional<PromotionReading> promotion;
};

// What promotion has to decide this pass, from the policy and its runs alone (observe reads the
// registry only when there is something): the oldest registered version not compared yet, and a
// promote-version request not handled yet.
struct PromotionWork {
  const ChildRun* candidate = nullptr;
  std::string request;  // the vto.dev/promote-version value to act on
  bool any() const { return candidate != nullptr || !request.empty(); }
};
PromotionWork promotionWork(const PolicyObserved& observed);
// The policy's run that registered this version of `model` (projects/P/locations/L/models/M), if it
// is still there.
const ChildRun* runOfVersion(const PolicyObserved& observed, const std::string& model, const std::string& versionId);
// A registered version's value of a metric, if its evaluation had it.
std::optional<double> metricOf(const crd::RegisteredModel& model, const std::string& metric);

// Reads the policy object and its runs as decide needs them (pure: the tests' way in too). Runs not
// controlled by the policy are left out.
PolicyObserved readPolicy(const nlohmann::json& policy, const std::vector<nlohmann::json>& runs, Clock::time_point now);

// One run a trigger asks for.
struct Firing {
  crd::TriggerReason reason = crd::TriggerReason::Schedule;
  Clock::time_point nominal;  // names the run; VTO_TRIGGER_TIME
  // Added to the run: the watermark it carries; those in crd::runEnvAnnotations() also become env of
  // its jobs (user env may not set VTO_* variables, so the env travels as annotations).
  std::map<std::string, std::string> annotations;
};

struct RunToCreate {
  nlohmann::json run;  // the whole TrainingRun
  Firing firing;
};

struct RunToDelete {
  std::string name;
  std::string why;  // for the SuccessfulDelete Event
};

// A trigger's fate, for vto_retrainingpolicy_triggers_total: skipped_active | skipped_cooldown |
// skipped_budget |
// missed_deadline | suspended from decide; created | deduplicated from act.
struct TriggerOutcome {
  crd::TriggerReason reason = crd::TriggerReason::Schedule;
  std::string outcome;
};

// Why each polled trigger fails this pass, if it does (TriggersHealthy, the trigger health metric).
struct TriggerHealth {
  struct Problem {
    PolicyReason reason;
    std::string message;
  };
  std::optional<Problem> data;
  std::optional<Problem> metric;
};

// The alias onto this version: "-alias" on the version that holds it first (when another does), then
// "alias" here, so that the move works whether Vertex moves an alias implicitly or refuses to.
struct MoveAlias {
  std::string versionName;  // projects/P/locations/L/models/M@versionId
  std::string alias;
  crd::PromotionResult result = crd::PromotionResult::Promoted;
  std::string fromVersionName;  // the holder, M@versionId; empty: none (or it is "default", which only moves)
};

struct PolicyPlan {
  bool invalid = false;  // the policy could not be decoded, validated or allowed: no runs
  std::vector<RunToCreate> create;        // oldest trigger first
  crd::RetrainingPolicyStatus status;     // act writes it when it differs from what is stored
  std::vector<std::string> markCounted;   // runs to annotate kCountedAnnotation after the status write
  std::vector<RunToDelete> remove;        // replaced runs and history beyond the limits, last
  // New values of the state annotations, when they change.
  std::optional<ScheduleState> scheduleState;
  std::optional<DataState> dataState;
  std::optional<MetricHealth> metricHealth;
  std::vector<controller::Event> events;
  std::vector<TriggerOutcome> outcomes;
  TriggerHealth health;
  Clock::duration requeueAfter = Clock::duration::zero();  // zero: nothing is due on a timer
  // Before the status write, which records it as done.
  std::optional<MoveAlias> moveAlias;
  std::optional<crd::PromotionResult> promotion;  // a decision was made (vto_model_promotions_total)
  // The pass fails after its writes (the user has been told): the work queue backs off.
  std::optional<std::string> failure;
};

PolicyPlan decidePolicy(const PolicyObserved& observed);

// After act's mergeVersionAliases failed: nothing moved; lastPromotion says Failed and why, the
// watermarks stay, and the pass is retried with backoff. Pure.
PolicyPlan afterPromotionFailed(const PolicyObserved& observed, PolicyPlan plan, const std::string& error);

// What act found when it created the plan's runs, in plan order.
enum class CreateOutcome { Created, Deduplicated, NameConflict };
// The plan once its runs were created: the Events that say so, a run name held by another owner as
// Ready=False RunNameConflict (and not active), the outcomes for the metrics. Pure.
PolicyPlan afterCreates(const PolicyObserved& observed, PolicyPlan plan, const std::vector<CreateOutcome>& outcomes);

// The TrainingRun a firing creates from the policy's template (name, owner, label, the trigger's
// annotations, baseOutputDirectory "<template's>/<run name>"). `warmStartFrom` empty: no warm start.
nlohmann::json runFromTemplate(const crd::RetrainingPolicy& policy, const Firing& firing,
                               const std::string& warmStartFrom);
// "<policy>-<unix seconds>".
std::string runNameFor(const std::string& policy, Clock::time_point nominal);

}  // namespace vto::reconcilers
