#pragma once
// The RetrainingPolicy reconciler: creates TrainingRuns from a policy's template when a trigger fires,
// exactly once per trigger whatever crashes, as the CronJob controller creates Jobs (the rules and
// their anchors: docs/retraining.md). One pass is observe -> decide -> act:
// - observe: the policy and its child runs from the informer caches, and the injected clock;
// - decide (pure, tested by tables): the runs to create and delete, the new status, the Events, and
//   when to come back (exactly at the next slot);
// - act: applies the plan; AlreadyExists on a run this policy controls counts as done.
// Run names come from the trigger (`<policy>-<unix seconds of its nominal time>`), never from the wall
// clock, so a crash between creating a run and writing status cannot make a second run. Watermarks
// (last schedule slot, handled manual request, last success) are carried forward in status and on
// the runs' annotations, so deleting history never replays a trigger.
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "controller/event.h"
#include "controller/event_recorder.h"
#include "controller/kube_client.h"
#include "controller/object_cache.h"
#include "controller/reconciler.h"
#include "crd/retraining_policy.h"
#include "metrics/retraining_metrics.h"
#include "crd/tenancy.h"
#include "reconcilers/metric_trigger.h"
#include "reconcilers/namespace_labels.h"
#include "reconcilers/new_data_trigger.h"
#include "vertex/gcs_client.h"
#include "vertex/prometheus_client.h"

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
// Beyond this many missed slots `missedRuns: Latest` raises TooManyMissedSchedules (CronJob's 100).
inline constexpr int64_t kTooManyMissed = 100;
// Missed slots are counted one by one up to here; more are reported as this many.
inline constexpr int64_t kMissedCountCap = 1000;

// The RetrainingPolicy collection on the API server.
const controller::Resource& retrainingPolicyResource();

// One run a trigger asks for. Schedule and Manual produce these; NewData and Metric will produce them
// the same way, with their own nominal time and annotations (e.g. crd::kDataWatermarkAnnotation).
struct Firing {
  crd::TriggerReason reason = crd::TriggerReason::Schedule;
  Clock::time_point nominal;  // names the run; VTO_TRIGGER_TIME
  // Added to the run: the watermark it carries; those in crd::runEnvAnnotations() also become env of
  // its jobs (user env may not set VTO_* variables, so the env travels as annotations).
  std::map<std::string, std::string> annotations;
};

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

struct RetrainingObserved {
  nlohmann::json policy;                 // as cached
  std::vector<nlohmann::json> children;  // TrainingRuns labelled with the policy's name, its namespace
  Clock::time_point now;
  std::optional<DataPoll> dataPoll;      // the newData trigger's poll, when one was due
  std::optional<MetricEval> metricEval;  // the metric trigger's query, when one was due
  // Set when the tenancy rules refuse the template or the data prefix (then nothing was polled).
  std::optional<crd::TenancyViolation> tenancyViolation;
};

struct RunToCreate {
  nlohmann::json run;  // the whole TrainingRun
  Firing firing;
};

struct RunToDelete {
  std::string name;
  std::string why;  // for the SuccessfulDelete Event
};

// A trigger's fate that decide knows (act adds created/deduplicated for the runs it creates).
struct TriggerOutcome {
  crd::TriggerReason reason = crd::TriggerReason::Schedule;
  std::string outcome;  // skipped_active | skipped_cooldown | missed_deadline | suspended
};

struct RetrainingPlan {
  bool invalid = false;  // the policy could not be decoded or validated: no runs
  std::vector<RunToCreate> create;  // oldest trigger first
  crd::RetrainingPolicyStatus status;        // act writes it when it differs from what is stored
  std::vector<std::string> markCounted;      // runs to annotate kCountedAnnotation after the status write
  std::vector<RunToDelete> remove;           // replaced runs and history beyond the limits, last
  std::optional<std::string> scheduleState;  // new value of kScheduleStateAnnotation, when it changes
  std::optional<std::string> dataState;      // new value of kDataStateAnnotation, when it changes
  std::optional<std::string> metricHealth;   // new value of kMetricHealthAnnotation, when it changes
  std::vector<controller::Event> events;
  std::vector<TriggerOutcome> outcomes;
  Clock::duration requeueAfter = Clock::duration::zero();  // zero: nothing is due on a timer
};

// Everything below is pure: the same observation gives the same plan.
RetrainingPlan decideRetraining(const RetrainingObserved& observed);

// The TrainingRun a firing creates from the policy's template (name, owner, label, the trigger's
// annotations, baseOutputDirectory "<template's>/<run name>"). `warmStartFrom` empty: no warm start.
nlohmann::json runFromTemplate(const crd::RetrainingPolicy& policy, const Firing& firing,
                               const std::string& warmStartFrom);
// "<policy>-<unix seconds>".
std::string runNameFor(const std::string& policy, Clock::time_point nominal);

// The outbound clients of the polled triggers; a null one leaves its trigger unhealthy ("not configured").
struct TriggerClients {
  vertex::GcsClient* gcs = nullptr;
  vertex::PrometheusClient* prometheus = nullptr;
};

// Tenancy (API.md "Tenancy rules"): a policy's template and its newData.gcsPrefix are checked before
// any run is created or any bucket listed. No rules: everything is allowed.
struct PolicyTenancy {
  crd::TenancyRules rules;
  crd::Placement defaults;  // the operator's --default-project and --default-location
};

class RetrainingPolicyReconciler final : public controller::Reconciler {
 public:
  // `runs` is the TrainingRun cache indexed by crd::kRetrainingPolicyLabel. `metrics` may be null.
  RetrainingPolicyReconciler(const controller::ObjectCache& policies, const controller::ObjectCache& runs,
                             controller::KubeClient& kube, controller::EventRecorder& events, const Clock& clock,
                             metrics::RetrainingMetrics* metrics = nullptr, TriggerClients clients = {},
                             PolicyTenancy tenancy = {});

  controller::Result reconcile(const controller::ObjectKey& key) override;

 private:
  void act(const nlohmann::json& policy, RetrainingPlan& plan);
  // Observe for the polled triggers: polls GCS and queries Prometheus when they are due. Reads the
  // policy afresh first, so a cache that lags behind the last status write cannot make a poll judge
  // against an old watermark. `policy` is `cached` decoded. Returns the policy the decision must use.
  nlohmann::json pollTriggers(const nlohmann::json& cached, crd::RetrainingPolicy policy,
                              RetrainingObserved& observed);
  std::string bearerToken(const std::string& ns, const crd::SecretKeyRef& ref);
  std::optional<crd::TenancyViolation> tenancyViolation(const crd::RetrainingPolicy& policy);
  void recordMetrics(const nlohmann::json& policy, const RetrainingPlan& plan);

  // Runs this process marked counted that its cache has not shown marked yet: observe lays the mark
  // over the cached run, so a pass that runs before the informer catches up does not count them twice.
  void overlayCounted(const controller::ObjectKey& policy, std::vector<nlohmann::json>& children);
  void rememberCounted(const controller::ObjectKey& policy, const std::vector<std::string>& names);

  const controller::ObjectCache& policies_;
  const controller::ObjectCache& runs_;
  controller::KubeClient& kube_;
  controller::EventRecorder& events_;
  const Clock& clock_;
  metrics::RetrainingMetrics* metrics_;
  TriggerClients clients_;
  PolicyTenancy tenancy_;
  NamespaceLabels namespaces_;
  std::mutex countedMutex_;
  std::map<controller::ObjectKey, std::set<std::string>> countedUnseen_;
};

}  // namespace vto::reconcilers
