#pragma once
// The TrainingRun kind (vto.dev/v1beta1; v1alpha1 is the same, deprecated) as C++ types. Field names and defaults follow
// docs/API.md; member initialisers are the defaults, so a decoded spec is always complete.
// Durations are whole seconds.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/money.h"
#include "crd/enum_names.h"
#include "crd/model.h"
#include "crd/object_meta.h"
#include "crd/raw_pool.h"  // readRawPool: what a raw workerPoolSpecs entry asks for

namespace vto::crd {

inline constexpr const char* kTrainingRunKind = "TrainingRun";

enum class Framework { TensorFlow, PyTorch, Jax, XGBoost, SKLearn, Other };
enum class Strategy { None, Mirrored, MultiWorkerMirrored, ParameterServer, PyTorchDDP, TPU };
enum class SchedulingStrategy { Standard, Spot, FlexStart };
// Why an attempt failed, as vto classifies its job's error (the first six); AnyFailure is only for
// spec.checkpointing.resumeOn, where it means every class.
enum class FailureClass { Preemption, Stockout, InternalError, UserError, Timeout, Unknown, AnyFailure };
enum class SearchAlgorithm { Bayesian, Grid, Random };
enum class MetricGoal { Maximize, Minimize };
enum class ParameterScale { Unspecified, Linear, Log, ReverseLog };
enum class DeletionPolicy { Cancel, Orphan };
enum class Phase { Pending, Submitted, Queued, Running, Resuming, Succeeded, Failed, Cancelling, Cancelled, Suspended, Invalid };

const EnumNames<Framework>& frameworkNames();
const EnumNames<Strategy>& strategyNames();
const EnumNames<SchedulingStrategy>& schedulingStrategyNames();
const EnumNames<FailureClass>& failureClassNames();  // every class: status.attempts[].failureClass
const EnumNames<FailureClass>& resumeOnNames();      // what spec.checkpointing.resumeOn may name
const EnumNames<SearchAlgorithm>& searchAlgorithmNames();
const EnumNames<MetricGoal>& metricGoalNames();
const EnumNames<ParameterScale>& parameterScaleNames();
const EnumNames<DeletionPolicy>& deletionPolicyNames();
const EnumNames<Phase>& phaseNames();

struct EnvVar {
  std::string name;
  std::string value;
  bool operator==(const EnvVar&) const = default;
};

struct ContainerTrainer {
  std::string imageUri;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
};

struct PythonPackageTrainer {
  std::string executorImageUri;
  std::vector<std::string> packageUris;
  std::string pythonModule;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
};

// Exactly one of the two is set in a valid spec (validation says so; decoding accepts any).
struct Trainer {
  std::optional<ContainerTrainer> container;
  std::optional<PythonPackageTrainer> pythonPackage;
};

struct Resources {
  std::string machineType;
  std::string acceleratorType;  // "" = none; Vertex AcceleratorType names (NVIDIA_TESLA_T4, TPU_V3, ...)
  int32_t acceleratorCount = 0;  // 0 = none
  std::string tpuTopology;
  std::string bootDiskType;
  int32_t bootDiskSizeGb = 0;  // 0 = Vertex's default (100)
};

struct ReplicaPool {
  int32_t replicaCount = 1;
  std::string machineType;
};

struct ReductionServer {
  int32_t replicaCount = 1;
  std::string machineType;
  std::string imageUri;  // "" = kDefaultReductionServerImage
};

inline constexpr const char* kDefaultReductionServerImage =
    "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest";

struct Distribution {
  Strategy strategy = Strategy::None;
  int32_t workerCount = 1;  // machines in total: one primary + (workerCount-1) workers
  std::optional<ReplicaPool> parameterServers;
  std::optional<ReplicaPool> evaluator;
  std::optional<ReductionServer> reductionServer;
};

struct Scheduling {
  std::optional<int64_t> timeoutSeconds;
  bool restartJobOnWorkerRestart = false;
  SchedulingStrategy strategy = SchedulingStrategy::Standard;
  std::optional<int64_t> maxWaitSeconds;
  bool disableRetries = false;
};

struct Checkpointing {
  bool resumeOnFailure = true;
  int32_t maxResumes = 3;
  int64_t resumeBackoffSeconds = 60;  // doubles each resume, capped at kMaxResumeBackoffSeconds
  std::vector<FailureClass> resumeOn = {FailureClass::Preemption, FailureClass::Stockout, FailureClass::InternalError};
  std::string directory;  // "" = "<baseOutputDirectory>/checkpoints" (see checkpointDirectory())
  std::optional<int64_t> totalSteps;  // the step of the last checkpoint: status.progress's percent and ETA
};

inline constexpr int64_t kMaxResumeBackoffSeconds = 3600;

struct DoubleRange {
  double min = 0;
  double max = 0;
};
struct IntegerRange {
  int64_t min = 0;
  int64_t max = 0;
};

struct TuningParameter {
  std::string parameterId;
  std::optional<DoubleRange> doubleRange;    // manifest field `double`
  std::optional<IntegerRange> integerRange;  // manifest field `integer`
  std::optional<std::vector<double>> discrete;         // manifest field `discrete.values`
  std::optional<std::vector<std::string>> categorical;  // manifest field `categorical.values`
  ParameterScale scale = ParameterScale::Unspecified;
};

struct TuningMetric {
  std::string metricId;
  MetricGoal goal = MetricGoal::Maximize;
};

struct HyperparameterTuning {
  int32_t maxTrialCount = 0;
  int32_t parallelTrialCount = 1;
  int32_t maxFailedTrialCount = 0;  // 0 = Vertex's default
  SearchAlgorithm algorithm = SearchAlgorithm::Bayesian;
  std::vector<TuningMetric> metrics;
  std::vector<TuningParameter> parameters;
};

// spec.capacity.fallbacks[i] (crd/placement.h): where else the run may go when Vertex has no capacity.
// resources and scheduling hold the fields as written (decoded and checked like the spec's), merged
// over the spec's own by crd::specAt.
struct Fallback {
  std::optional<std::string> location;
  nlohmann::json resources = nullptr;
  nlohmann::json scheduling = nullptr;
};

// spec.capacity: capacity failover (API.md "Capacity failover").
// The contract's bounds: shorter waits or longer give-ups turn one object into a loop of creates
// that eats the project's shared per-minute create budget.
inline constexpr int64_t kMinMaxQueueSeconds = 300;       // maxQueueTime: 0 (never) or at least 5m
inline constexpr int64_t kDefaultMaxQueueSeconds = 1800;  // when fallbacks exist
inline constexpr int64_t kMinBlockForSeconds = 60;
inline constexpr int64_t kMaxGiveUpAfterSeconds = 30 * 86400;
inline constexpr int32_t kMaxFailovers = 100;

struct Capacity {
  std::vector<Fallback> fallbacks;
  // A job QUEUED/PENDING this long is a stockout; 0: never. Unset: kDefaultMaxQueueSeconds when
  // fallbacks exist (Vertex holds a job QUEUED, without an error, while the project lacks quota).
  int64_t maxQueueSeconds = 0;
  int64_t blockForSeconds = 1800;      // a placement that had no capacity is skipped this long
  int64_t giveUpAfterSeconds = 86400;  // no placement had capacity this long: the run fails
  int32_t maxFailovers = 20;           // capacity moves per run; one more: the run fails
};

struct TrainingRunSpec {
  std::string project;
  std::string location;
  std::string displayName;  // "" = "<namespace>-<name>" (see displayNameOf())
  Framework framework = Framework::Other;
  std::optional<Trainer> trainer;
  std::optional<Resources> resources;
  std::optional<Distribution> distribution;
  nlohmann::json workerPoolSpecs = nlohmann::json::array();  // raw Vertex WorkerPoolSpec objects
  std::string baseOutputDirectory;
  std::string serviceAccount;
  std::string network;
  std::vector<std::string> reservedIpRanges;
  bool enableWebAccess = false;
  bool enableDashboardAccess = false;
  std::string tensorboard;
  std::string encryptionKmsKeyName;
  std::map<std::string, std::string> labels;
  Scheduling scheduling;
  Checkpointing checkpointing;
  std::optional<HyperparameterTuning> hyperparameterTuning;
  bool suspend = false;
  DeletionPolicy deletionPolicy = DeletionPolicy::Cancel;
  std::optional<int64_t> ttlSecondsAfterFinished;
  std::optional<Capacity> capacity;
  std::optional<ModelSpec> model;  // register the model when the run succeeds
  std::string maxCostUsd;          // "" = no limit; else dollars ("250", "99.50"): the job is cancelled at it
  // A job started outside vto that becomes the run's first attempt (projects/P/locations/L/customJobs/ID
  // or hyperparameterTuningJobs/ID, in the run's project and location); "" = vto creates the first job.
  std::string adoptJob;
};

// metav1.Condition.
struct Condition {
  std::string type;
  std::string status;  // "True" | "False" | "Unknown"
  std::string reason;
  std::string message;
  std::optional<Clock::time_point> lastTransitionTime;  // whole seconds
  int64_t observedGeneration = 0;
  bool operator==(const Condition&) const = default;
};

// Status times are time points, written as RFC 3339 only when encoded. Times vto takes from Vertex or
// its own clock are kept to whole seconds (metav1.Time), so a pass that sees nothing new writes nothing.

struct JobRef {
  std::string name;  // projects/P/locations/L/customJobs/ID
  std::string id;    // the numeric ID alone, for the printer column
  std::string kind;  // CustomJob | HyperparameterTuningJob
  std::string state;  // JOB_STATE_*
  std::string consoleUrl;
  std::optional<Clock::time_point> createTime, startTime, endTime;
  std::map<std::string, std::string> webAccessUris;
  bool operator==(const JobRef&) const = default;
};

struct Attempt {
  int32_t attempt = 0;
  std::optional<int32_t> placement;  // with spec.capacity: the placement it was created on
  std::string location;              // with spec.capacity: where its job runs (from the job's name)
  std::string jobName;
  std::string state;
  std::optional<Clock::time_point> startTime, endTime;
  std::optional<FailureClass> failureClass;
  std::string message;
  std::string resumedFrom;
  // A failed attempt's (not a preemption's, not a capacity failure's): the newest lines of the failing
  // replica's log, read once after the failure (reconcilers/jobs/log_tail.h), or why they could not be
  // read. At most kMaxLogTailBytes. The tenant's data: shown to the user, never in vto's own log.
  std::string logTail;
  // What the attempt cost (governance/cost.h), nullopt while unpriced; its hours beside, for status.cost.
  std::optional<Usd> costUsd;  // whole cents
  double acceleratorHours = 0, replicaHours = 0;
  bool operator==(const Attempt&) const = default;
};

struct CheckpointRef {
  std::string uri;
  std::optional<Clock::time_point> updateTime;  // as GCS gave it (its fraction kept)
  bool operator==(const CheckpointRef&) const = default;
};

struct BestTrial {
  std::string id;
  nlohmann::json parameters = nlohmann::json::object();  // parameterId -> value (any JSON)
  std::map<std::string, double> metrics;
  bool operator==(const BestTrial&) const = default;
};

inline constexpr size_t kMaxAttemptsInStatus = 20;
inline constexpr size_t kMaxLogTailBytes = 4096;

// status.placement: where the current attempt runs (with spec.capacity).
struct PlacementRef {
  int32_t index = 0;
  std::string location;
  std::string machineType;
  std::string acceleratorType;
  int32_t acceleratorCount = 0;
  std::string strategy;
  bool operator==(const PlacementRef&) const = default;
};

// A placement skipped for now because Vertex had no capacity there.
struct BlockedPlacement {
  int32_t index = 0;
  std::string location;
  std::string reason;  // Stockout | QuotaExceeded | QueueTimeout
  std::optional<Clock::time_point> until;
  std::string message;
  bool operator==(const BlockedPlacement&) const = default;
};

// status.capacity: what capacity failover remembers.
struct CapacityHistory {
  std::vector<BlockedPlacement> blocked;
  std::optional<Clock::time_point> waitingSince;  // every placement is blocked since then
  std::optional<Clock::time_point> failingSince;  // the first capacity failure since a job last ran
  int32_t failovers = 0;                          // capacity moves so far (spec.capacity.maxFailovers)
  bool operator==(const CapacityHistory&) const = default;
};

// What status carries from pass to pass because Vertex cannot tell it again cheaply: the attempts
// and what they left. Everything else in status is rebuilt from what a pass observes.
struct RunHistory {
  std::vector<Attempt> attempts;  // the newest kMaxAttemptsInStatus, oldest first
  int32_t attemptCount = 0;       // all attempts so far (the Attempts printer column)
  int32_t resumes = 0;
  std::optional<CheckpointRef> lastCheckpoint;  // the newest checkpoint any listing found
  std::optional<BestTrial> bestTrial;           // from the last job that reported one
  std::optional<Clock::time_point> startTime;   // the first pass that saw the run
  std::optional<CapacityHistory> capacity;      // with spec.capacity
  std::optional<RegisteredModel> model;         // with spec.model: the version the success became
  bool operator==(const RunHistory&) const = default;
};

// status.cost: what the run's attempts cost at list prices (API.md "Cost and budgets"), recomputed
// only with the status writes that happen anyway; hourlyUsd makes the live figure derivable between.
struct RunCost {
  Usd estimatedUsd;             // all attempts, whole cents
  double acceleratorHours = 0;  // count x hours, all pools and attempts
  double replicaHours = 0;
  std::optional<Usd> hourlyUsd;  // while a job runs, whole cents
  std::string priceCatalog;              // the price table's date, or "custom:<sha256 prefix>"
  std::optional<Clock::time_point> updateTime;
  bool operator==(const RunCost&) const = default;
};

// status.progress: how far the run is, read from the step in its newest checkpoint's name (ckpt-N).
// Rebuilt every pass from status.lastCheckpoint, the current attempt and spec.checkpointing.totalSteps.
struct Progress {
  int64_t step = 0;
  std::optional<int64_t> totalSteps;
  std::optional<int32_t> percent;              // with totalSteps
  std::optional<Clock::time_point> eta;        // while running, with totalSteps and this attempt's rate
  std::optional<double> secondsPerStep;        // this attempt's rate (from its start to its newest checkpoint)
  bool operator==(const Progress&) const = default;
};

struct TrainingRunStatus {
  int64_t observedGeneration = 0;
  std::optional<Phase> phase;
  std::string message;
  std::vector<Condition> conditions;
  std::optional<JobRef> job;
  std::optional<Progress> progress;
  std::optional<PlacementRef> placement;  // with spec.capacity
  RunHistory history;
  std::optional<Clock::time_point> completionTime;
  std::optional<RunCost> cost;  // nullopt: nothing priced yet, or a price is missing (a condition says which)
  bool operator==(const TrainingRunStatus&) const = default;
};

// Succeeded, Failed or Cancelled: the run has ended and nothing is left to follow. (Invalid is not:
// it waits for an edit of the spec.)
bool isFinished(std::optional<Phase> phase);

struct TrainingRun {
  ObjectMeta metadata;
  TrainingRunSpec spec;
  TrainingRunStatus status;
};

// Strict decoding (see strict_json.h): throws DecodeError naming the field path.
TrainingRun decodeTrainingRun(const nlohmann::json& object);
TrainingRunSpec decodeTrainingRunSpec(const nlohmann::json& value, const std::string& path);
TrainingRunStatus decodeTrainingRunStatus(const nlohmann::json& value, const std::string& path);
// Encoding writes every field, defaults included, with the manifest's field names.
nlohmann::json encodeTrainingRun(const TrainingRun& run);
nlohmann::json encodeTrainingRunSpec(const TrainingRunSpec& spec);
nlohmann::json encodeTrainingRunStatus(const TrainingRunStatus& status);
nlohmann::json encodeCondition(const Condition& condition);
Condition decodeCondition(const nlohmann::json& value, const std::string& path);

// Defaults that depend on other fields.
std::string displayNameOf(const TrainingRun& run);          // spec.displayName or "<namespace>-<name>"
std::string checkpointDirectoryOf(const TrainingRunSpec& spec);  // checkpointing.directory or "<base>/checkpoints"
// Whether the run uses TPUs (strategy TPU or a TPU_* accelerator).
bool usesTpu(const TrainingRunSpec& spec);

}  // namespace vto::crd
