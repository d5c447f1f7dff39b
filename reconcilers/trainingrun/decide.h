#pragma once
// The TrainingRun reconciler's decisions as one pure function: decide(Observed) -> Plan.
//
//   observe (reads only: the run from the informer cache, its job from the JobCache or Vertex, the
//            newest checkpoint when it is needed, the clock)
//   -> decide (this header: no I/O, no clock, no randomness; tested as tables)
//   -> act    (the Plan's actions in a fixed order, one status write, the Events)
//
// Status is rebuilt from what was observed on every pass. Only the run's history (the attempts and
// what they left, crd::RunHistory) is carried, as one value; where a pass observes nothing new about
// the job (the run has settled, or Vertex cannot be read), the last view of it stands, as one
// explicit decision.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/gcp_names.h"
#include "controller/event.h"
#include "crd/render.h"
#include "crd/training_run.h"
#include "governance/price_catalog.h"
#include "governance/tenancy.h"
#include "reconcilers/jobs/checkpoints.h"
#include "reconcilers/jobs/job_cache.h"
#include "reconcilers/tenancy/budget_ledger.h"
#include "reconcilers/trainingrun/kueue.h"
#include "vertex/model_registry.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

inline constexpr const char* kFinalizer = "vto.dev/finalizer";

// The condition types of a TrainingRun, in the order status lists them.
// Ready, Reconciling and Stalled are kstatus's (healthOf): derived last, from the others and the phase.
enum class ConditionType {
  Valid, Ready, Submitted, Running, Succeeded, Failed, CheckpointsReadable, CostEstimated, ModelRegistered,
  Reconciling, Stalled
};
const char* conditionTypeName(ConditionType type);

// Every condition reason vto writes (condition.reason is one of these names).
enum class Reason {
  SpecValid, SpecInvalid, JobCreated, JobRejected, JobSubmitted, JobQueued, JobRunning, JobSucceeded,
  JobFailed, JobCancelling, JobCancelled, JobNotFound, JobNotOwned, NotFinished, NoFailure, Resuming,
  ResumeBudgetExhausted, Suspended, VertexError, TenantPolicyViolation, TenantQuotaExceeded,
  OutputBucketNotFound, CheckpointsListed, CheckpointsForbidden, CheckpointListFailed, WaitingForCapacity,
  CapacityUnavailable, Registering, VersionRegistered, ArtifactMissing, UploadFailed, PermissionDenied,
  Priced, PriceMissing, CostLimitReached, BudgetExceeded,
  RegistrationRefused, EvaluationNotImported, AdoptionRefused, WaitingForKueue, KueueUnavailable,
};
const char* reasonName(Reason reason);

// What Vertex said about the current attempt's job this pass.
struct VertexReading {
  // From the JobCache, a GET, or adopted by its labels when status does not name it yet (a crash
  // between create and the status write).
  std::optional<CachedJob> job;
  // The job status names is gone from Vertex (404): deleted outside vto.
  bool notFound = false;
  // The job status names was not created for this run (its vto-run-uid label is another's): status
  // was written by someone else. vto neither follows nor cancels it.
  bool notOwned = false;
  // A fresh run (no job recorded, attempt 1): the unfinished job an earlier run of the same namespace
  // and name left (a re-apply into a rebuilt cluster, a restore without status, a delete with
  // deletionPolicy Orphan): adopted instead of starting a second one.
  std::optional<CachedJob> namesake;
  // A run restored without its status (its metadata names the runs it was, crd::kRunUidsAnnotation):
  // the jobs this operator made for those runs of its namespace and name, oldest first. They are its
  // attempts again: a finished run stays finished, an unfinished job is followed, none starts twice.
  // The newest is `job` too.
  std::vector<CachedJob> restored;
  // spec.adoptJob, before the run has a job: the job, read and allowed (nobody else's), or why it may
  // not be taken (the job is left untouched either way).
  std::optional<CachedJob> adoptable;
  std::optional<std::string> adoptionRefused;
  // A fresh run's place has not been listed since the operator started: such a namesake would not
  // be known yet, so no job is created until it is (its job-name prefix).
  std::optional<std::string> placeUnlisted;
  // Vertex jobs that carry this run's labels but were not made by this operator (their ownership
  // tag does not verify), not yet warned about: ignored everywhere, named in a Warning.
  std::vector<std::string> impostors;
  // The job is not cached yet and its poll target's first full list (just after a start) will bring
  // it: look again shortly instead of reading it now (a cold start costs lists, not a GET per run).
  bool awaitingFirstPoll = false;
  // Polling the job's project/location fails (or a direct read of it did): a condition, not a stall.
  std::optional<VertexFailure> unavailable;
  // Vertex refused to create this attempt's job (4xx other than 429): decide fails the run.
  std::optional<VertexFailure> createRejected;
  // Vertex refused the create for an accelerator quota (429 naming custom_model_training_*): with
  // spec.capacity the placement has no capacity; its message.
  std::optional<std::string> createQuotaExceeded;
};

// The checkpoint directory, as this pass listed it (if it did).
struct CheckpointReading {
  bool listed = false;                     // a listing succeeded
  std::optional<Checkpoint> latest;        // its newest checkpoint
  std::optional<std::string> error;        // the listing failed: CheckpointsReadable=False
  bool forbidden = false;                  // ... with a 403 (a resume would start from scratch)
  std::optional<Clock::time_point> nextLookAt;  // when the rate and interval allow the next look
};

// The tenancy inputs (governance/tenancy.h, API.md "Tenancy rules"); null or empty rules: all allowed.
struct TenancyReading {
  const governance::TenancyRules* rules = nullptr;
  governance::NamespaceInfo ns;  // labels read only when a rule selects namespaces by label
  // The accelerator claims of the other runs, each with the index of the rule that governs it;
  // decide counts those under this run's rule against its maxAccelerators.
  std::vector<std::pair<size_t, governance::AcceleratorClaim>> otherClaims;
  // Capped rules whose places vto has not listed its unfinished jobs in since it started (a job of a
  // deleted run would be missing from otherClaims), each with what is still to be read: a run under
  // such a rule waits rather than be admitted against a count that may be short.
  std::map<size_t, std::string> unlistedCaps;
  // Month-to-date spend by rule index (budget rules only), read where a job may be created.
  std::map<size_t, RuleSpend> budgets;
};

// A succeeded run's model registration (spec.model), as observe read it: only while ModelRegistered
// is not True, so a registered run costs nothing more.
struct RegistryReading {
  bool read = false;  // observe looked (the pass that sees the success does not: it only says what comes)
  // The version of this run: found by its run label (modelVersionLabels), or made by the upload status
  // records.
  std::optional<vertex::ModelVersion> version;
  std::string versionRunUid;  // the uid of the run that made it (an earlier one, after a restore)
  // status.model.operation as Vertex says now, while it names one.
  std::optional<vertex::UploadOperation> upload;
  bool modelExists = false;      // the model has versions: an upload names it as parentModel
  bool artifactPresent = false;  // an object is under the artifact directory (read before an upload)
  // Once the version exists, with spec.model.evaluation: the evaluation this run imported, if any (its
  // metrics), else the metrics file (nullopt: there is none).
  std::optional<nlohmann::json> importedMetrics;
  std::optional<std::string> metricsFile;  // at most crd::kMaxMetricsFileBytes + 1 bytes of it
  std::string metricsFileRefused;          // non-empty: not read, and why (crd::metricsFileOf)
  // A read was refused or failed for good (403: PermissionDenied): no step is taken.
  std::optional<VertexFailure> failure;
};

// The newest log lines of failed attempts (reconcilers/jobs/log_tail.h), read off the workers by the
// LogTailPoller after the failure was written: decide records each once in status.attempts[].logTail.
struct LogTailReading {
  // The operator reads logs (vto run has a Logging client): a failure's Event waits for its tail.
  bool enabled = false;
  std::map<int32_t, std::string> read;  // by attempt number: tails read and not yet in status
};

// Admission by Kueue (kueue.h), for a run labelled kueue.x-k8s.io/queue-name only: nothing is read
// for any other run.
struct KueueReading {
  bool enabled = false;  // vto run --kueue: the operator follows Workloads
  // The run's Workload (workloadNameOf) as the informer caches it, when the run controls it.
  std::optional<WorkloadView> workload;
  std::shared_ptr<const nlohmann::json> workloadObject;  // the same, whole: a status write starts from it
  // A Workload of the run's Workload name exists that the run does not control: never used or replaced.
  std::optional<std::string> foreign;
  // Before a Workload is created: the value of the WorkloadPriorityClass the run names, or why it
  // cannot be read.
  std::optional<int32_t> priority;
  std::optional<std::string> priorityProblem;
  // Creating the Workload answered 404: Kueue's CRDs are not installed.
  bool notInstalled = false;
  // The API server refused the Workload (403, 422, ...): its answer.
  std::optional<std::string> refused;
  // The cached Workload is a version this operator's own status write replaced: the pass waits for
  // that write's echo (which wakes the run) instead of deciding on it and conflicting.
  bool behind = false;
  // The Workload informer has not synced since the start and holds no Workload for the run: one may
  // exist (an eviction to honour). The pass waits for the sync instead of deciding the run has none.
  bool unsynced = false;
};

struct Observed {
  Clock::time_point now{};
  crd::ObjectMeta metadata;             // always decoded
  std::optional<crd::TrainingRun> run;  // nullopt: the object does not decode (decodeError says why)
  std::string decodeError;
  crd::TrainingRunStatus status;  // as stored; {} when it does not decode
  bool statusStored = false;      // the object has a status at all
  // `status` carries the phase and history act held back after creating a job (HeldStatuses), not
  // yet written (statusStored is then false: this pass writes).
  bool statusHeld = false;
  bool hasFinalizer = false;
  Location defaults;  // --default-project / --default-location
  VertexReading vertex;
  CheckpointReading checkpoints;
  // Before attempt 1, the output bucket answered 404: its name. No job until it exists.
  std::optional<std::string> outputBucketMissing;
  TenancyReading tenancy;
  RegistryReading registry;
  LogTailReading logTails;
  KueueReading kueue;
  const governance::PriceCatalog* prices = nullptr;  // --price-catalog; null: the built-in table
};

// Whether observe must list checkpoints for decide: a resume or unsuspend creates an attempt from
// the newest one, and a job that just ended leaves its final one. (The periodic look while a job
// runs is asked of the CheckpointSchedule separately.)
bool checkpointRequired(const Observed& observed);
// Whether the run has ended and its status describes its spec: its job has nothing more to say.
bool ended(const Observed& observed);
// Whether an ended run still has work after its success: registering its model (spec.model) until
// ModelRegistered is True. Such a run is observed (the registry, not its job) until it is done.
bool workAfterSuccess(const Observed& observed);
// Ended with nothing left to do: a pass has nothing to observe.
bool settled(const Observed& observed);

struct CreateJob {
  int attempt = 0;
  std::string resumeFrom;  // "" = from scratch
  Location where;
  vertex::JobKind kind = vertex::JobKind::Custom;
  size_t placement = 0;  // crd::specAt(spec, placement) is what the job is rendered from
};

// What the budget gate let a job spend (its whole worst case, governance::reservationFor), counted against
// rule `rule` until the ledger's next refresh lists the job.
struct BudgetReservation {
  size_t rule = 0;
  Usd usd;
  // Under a Hold budget: the job's scheduling.timeout (a tuning job's, per trial), rendered whatever the
  // spec says, so that the job cannot run past what was reserved for it.
  std::optional<std::chrono::seconds> timeout;
  uint64_t seenGeneration = 0;  // the figures the check read (RuleSpend::generation)
  bool unconditionally = false;  // a Warn budget: created whatever changed since
};

// The room the accelerator cap let a job take: act reserves it in the ledger before the create, under
// one lock with every other admission (decide read the claims unlocked, so two runs failing over at
// once may both have seen the same room), and holds it until the job is in the JobCache.
struct AcceleratorReservation {
  size_t rule = 0;              // the capped rule that governs the placement
  governance::AcceleratorClaim claim;  // the run on that placement
  std::vector<bool> allowedBy;  // which rules' fields other than the namespace allow that placement
  int attempt = 0;
};

// A capacity failover, for vto_trainingrun_capacity_failovers_total.
struct Failover {
  std::string fromLocation, toLocation, acceleratorType, reason;
};

// A pass that fails after its writes: the user has been told (status, Events), and the work queue
// backs off (retry), or waits for the object to change (terminal: nothing retrying could fix).
struct PassFailure {
  bool terminal = false;
  std::string message;
};

// models:upload of a succeeded run's artifacts as a new version.
struct UploadModel {
  Location where;  // the model's project and region
  vertex::UploadModelRequest request;
};

// models.evaluations:import of the run's metrics file into its version.
struct ImportEvaluation {
  std::string versionName;  // model@versionId
  vertex::EvaluationImport evaluation;
};

struct Plan {
  bool addFinalizer = false;
  // The run's crd::kRunUidsAnnotation, to write with the finalizer (one patch) when it lacks its uid.
  std::optional<std::string> runUids;
  std::optional<std::string> cancelJob;  // job name
  std::optional<CreateJob> createJob;    // act records the job name in status (the journal; HeldStatuses)
  std::optional<BudgetReservation> budgetReservation;  // with createJob under a budget
  std::optional<AcceleratorReservation> acceleratorReservation;  // with createJob under a capped rule
  // act writes status (the upload journal, uploadStartTime) before the upload, its operation after.
  std::optional<UploadModel> uploadModel;
  std::optional<ImportEvaluation> importEvaluation;  // before the status write that says it was imported
  // Admission by Kueue: the run's Workload to delete (before a new one, or with the run), to create (its
  // body), to mark Finished once the run has ended, or whose admission to release after an eviction
  // once no job runs (the last two: server-side apply bodies for its status, kueue.h).
  std::optional<std::string> deleteWorkload;
  std::optional<nlohmann::json> createWorkload;
  std::optional<nlohmann::json> finishWorkload;
  std::optional<nlohmann::json> releaseAdmission;
  // The status to write; nullopt when it equals what is stored (no write).
  std::optional<crd::TrainingRunStatus> status;
  bool jobCreated = false;  // act created the attempt's job in this pass (recordCreatedJob, not adopted)
  std::vector<controller::Event> events;
  std::vector<std::string> impostorsWarned;  // the Events name them: the JobCache stops reporting them
  bool removeFinalizer = false;
  bool deleteRun = false;  // ttlSecondsAfterFinished has passed
  // How the pass ends: requeued after this long (zero: only when something changes), or failed.
  Clock::duration requeueAfter = Clock::duration::zero();
  std::optional<PassFailure> failure;
  // With a failure that is retried: no sooner than this (a refusal's Retry-After, the quota pacer's wait).
  std::optional<std::chrono::milliseconds> retryAfter;
  // For metrics: a resume was decided (its failure class), a capacity failover, the run finished.
  std::optional<crd::FailureClass> resumedAfter;
  std::optional<Failover> failover;
  bool finished = false;
  std::string registeredModel;  // a version of this model ID was registered (vto_model_versions_registered_total)
  std::optional<Reason> registrationFailed;  // vto_model_registration_failures_total
  std::string evictedBy;  // Kueue's eviction reason, when this pass cancels a job for it (vto_trainingrun_kueue_evictions_total)
};

struct DecideOptions {
  Clock::duration resyncPeriod = std::chrono::minutes(5);
  Clock::duration cancelPollPeriod = std::chrono::seconds(2);
  Clock::duration firstPollWait = std::chrono::seconds(5);
  // How soon a run queued by its tenant's maxAccelerators looks again (a finishing run also wakes it).
  Clock::duration quotaRecheckPeriod = std::chrono::seconds(30);
  // How soon a run held by its tenant's budget looks again (the spend is re-read about as often).
  Clock::duration budgetRecheckPeriod = std::chrono::seconds(30);
  // How often an upload in flight is looked at (Vertex finishes most in well under a minute).
  Clock::duration uploadPollPeriod = std::chrono::seconds(3);
  // After a crash between asking for an upload and recording its operation, how long to wait for
  // that upload's version to appear before uploading again (exactly one version per run, as long as
  // Vertex finishes an upload within this).
  Clock::duration uploadGracePeriod = std::chrono::minutes(5);
  // How long a Failed Event waits for its attempt's log tail after the failure was written; past it
  // the Event goes out without the tail, which follows in status (a slow Logging read, or a
  // neighbour's, delays no tenant's Event more than this).
  Clock::duration logTailWait = std::chrono::seconds(10);
  // The operator's cluster identity (vto run --cluster-id): the vto-cluster label of every model
  // version it uploads, as of every job; empty: none (unit tests).
  std::string clusterId;
};

Plan decide(const Observed& observed, const DecideOptions& options = {});

// kstatus's conditions (API.md "Health that GitOps tools and people can read"; the table is in
// docs/api.md), derived from what a pass decided: Ready is True only for a Succeeded run whose model,
// if it wants one, is registered; Reconciling is True while work is under way; Stalled is True when
// nothing moves without a change (Invalid, Failed, Cancelled, and the gates that wait for a person:
// BudgetExceeded under Hold, a missing output bucket).
struct HealthInput {
  std::optional<crd::Phase> phase;
  std::string message;                      // status.message
  std::vector<crd::Condition> conditions;   // the others, as this pass decided them
  bool modelWanted = false;                 // spec.model is set
  std::optional<crd::Condition> readyGate;  // Ready=False as a gate of this pass set it (its reason stays)
};
struct Health {
  crd::Condition ready, reconciling, stalled;  // type, status, reason, message
};
Health healthOf(const HealthInput& in);

// status.progress from status.lastCheckpoint (its step is the number in its name), the current
// attempt (its start, and the checkpoint it resumed from) and spec.checkpointing.totalSteps; nullopt
// before a checkpoint with a step exists. The rate is this attempt's: from its start to its newest
// checkpoint, over the steps it made; the ETA extrapolates it from that checkpoint, while running.
std::optional<crd::Progress> progressOf(const crd::TrainingRunSpec& spec, const crd::TrainingRunStatus& status);

// After act created the job `plan.createJob` asked for (or found it already there: `adopted`, after a
// crash between create and the status write): the status with the job's name and state, which act
// records (the journal that makes creation exactly once: held in memory until a catch-up pass writes
// it, for a job it created), and the JobCreated Event (the only
// Event of a submission: the job's first state is not announced separately).
Plan recordCreatedJob(const Observed& observed, Plan plan, const CachedJob& job, bool adopted);

// After act asked for the plan's upload: the status with its operation (the version follows from it),
// or, when Vertex refused it, ModelRegistered=False saying why (retried with backoff) and the journal
// cleared, written even when the status before the journal said the same, so that no pass, in this
// process or after a restart, waits the grace period for an upload that never started. `journaled` is
// the status act wrote before the call.
Plan recordUpload(const Observed& observed, const crd::TrainingRunStatus& journaled, Plan plan,
                  const std::optional<vertex::UploadOperation>& started, const std::optional<VertexFailure>& refused);
// Whether an upload answered with this HTTP status may still have started: a 5xx (the outcome is
// unknown) or a success whose body is not an operation. Its journal stays and the grace period covers
// it; any other answer (4xx) is a definite refusal.
bool uploadMayHaveStarted(int httpStatus);
// After act's evaluation import failed: ModelRegistered=False saying why, retried with backoff; or,
// when Vertex refused it for its content (400), ModelRegistered=True with reason EvaluationNotImported
// and the metrics kept in status (promotion reads them there), never retried.
Plan recordImportFailure(const Observed& observed, Plan plan, const VertexFailure& failure);

// The Model Registry name a run's spec.model registers into: projects/P/locations/L/models/M, in the
// run's project and spec.model.location (default: the run's own location, not a fallback's, so that
// every version of a model lives in one place).
Location modelLocationOf(const crd::TrainingRunSpec& spec, const Location& defaults);
std::string modelNameOf(const crd::TrainingRunSpec& spec, const Location& defaults);
// The displayName of the evaluation a run imports ("vto-<run uid>"): how a retry finds it.
std::string evaluationDisplayName(const std::string& runUid);
// The labels every version vto uploads carries beside spec.model.labels: vto-run-uid, and a key of the
// run's own (runVersionLabelKey), which a model's labels merged into every version cannot shadow.
std::map<std::string, std::string> modelVersionLabels(const crd::ObjectMeta& run, const std::string& clusterId);
// "vto-run-<uid>": the label key, set to "true", that marks the run's version.
std::string runVersionLabelKey(const std::string& runUid);
// The versionDescription vto uploads with: "TrainingRun NS/NAME (uid UID)". Vertex keeps it per
// version (labels it merges with the model's), so it tells a run's version apart.
std::string versionDescriptionOf(const crd::ObjectMeta& run);
// Of the versions listed by the run's label, the run's own: the one whose versionDescription names the
// run's uid, else the oldest (the version that made the model carries the model's labels, so a run that
// made it finds every version by its label: its own is the first). nullptr for none.
const vertex::ModelVersion* runVersionOf(const std::vector<vertex::ModelVersion>& listed, const std::string& runUid);
// The metricsSchemaUri of Google's evaluation schemas (classification, regression, forecasting) that
// names every one of `metrics`; "" when none does (Vertex refuses metrics its schema does not describe,
// so such metrics stay in status only).
std::string evaluationSchemaOf(const std::map<std::string, double>& metrics);
// ModelRegistered is False with reason RegistrationRefused for the spec as it is: Vertex refused the
// upload for what it asks (INVALID_ARGUMENT, FAILED_PRECONDITION), so nothing is retried until the spec
// changes.
bool registrationRefused(const crd::TrainingRunStatus& status, std::int64_t generation);

// The tenancy decision for an observed run (no rules: nothing governs it, nothing refused).
governance::TenancyDecision tenancyOf(const Observed& observed);

// https://console.cloud.google.com/vertex-ai/locations/L/training/ID/cpu?project=P for a job name.
std::string consoleUrl(const std::string& jobName);

}  // namespace vto::reconcilers
