#pragma once
// The TrainingRun reconciler: one TrainingRun becomes one Vertex job per attempt, created exactly once
// whatever crashes, followed to the end, cancelled on deletion or suspension, and reported back as
// status, conditions and Events. Each pass is observe -> decide -> act:
//   observe  reads: the run from the informer cache, its job from the JobCache (a GET when the entry
//            is missing or stale), the newest checkpoint when decide needs it or the schedule allows;
//   decide   is pure (training_run_decide.h);
//   act      carries out the Plan: finalizer, cancel, create (then the job name goes to status at
//            once), one status write when it changed, the Events, TTL deletion.
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "base/clock.h"
#include "controller/event_recorder.h"
#include "controller/kube_client.h"
#include "controller/object_cache.h"
#include "controller/own_writes.h"
#include "controller/reconciler.h"
#include "crd/render.h"
#include "crd/training_run.h"
#include "metrics/trainingrun_metrics.h"
#include "reconcilers/jobs/checkpoint_schedule.h"
#include "reconcilers/jobs/checkpoints.h"
#include "reconcilers/jobs/job_cache.h"
#include "reconcilers/jobs/log_tail.h"
#include "reconcilers/jobs/poll_targets.h"
#include "reconcilers/tenancy/accelerator_ledger.h"
#include "reconcilers/tenancy/namespace_labels.h"
#include "reconcilers/trainingrun/decide.h"
#include "vertex/gcs_client.h"
#include "vertex/model_registry.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

// The TrainingRun collection on the API server.
const controller::Resource& trainingRunResource();

struct TrainingRunReconcilerOptions {
  Location defaults;  // project/location for runs that name none (--default-project/-location)
  // Safety net between the poller's notifications; the poller normally wakes a run much sooner.
  Clock::duration resyncPeriod = std::chrono::minutes(5);
  // How soon to look again while a job is being cancelled.
  Clock::duration cancelPollPeriod = std::chrono::seconds(2);
  // How often a running run's newest checkpoint is looked up (status.lastCheckpoint, checkpoint age),
  // and how many such lists the whole operator makes per minute at most. Ten minutes: training code
  // checkpoints every few minutes to an hour, the stale-checkpoint alert fires at two hours, and a
  // resume lists afresh; at 1,000 runs a look every five minutes each cost more CPU than following
  // their jobs (docs/benchmarks.md).
  Clock::duration checkpointPollPeriod = std::chrono::minutes(10);
  int checkpointListsPerMinute = 200;
  // A cached job not read from Vertex for this long is read again by GET before decide sees it
  // (the poller's full lists normally refresh every unfinished job much sooner).
  Clock::duration jobStaleAfter = std::chrono::minutes(5);
  // With a poller running (vto run): for this long after the start, a job not cached yet is left to
  // its target's first full list rather than read by GET, so that a start with many runs costs a
  // few lists, not a GET per run. Bounded, so that a run no poll covers is never left waiting.
  Clock::duration awaitFirstPoll = Clock::duration::zero();
  // Tenant guardrails (vto run --config); empty: everything is allowed.
  governance::TenancyRules tenancy;
  // The list prices of status.cost (vto run --price-catalog); null: the built-in table.
  const governance::PriceCatalog* prices = nullptr;
  // Month-to-date spend of the budget rules (refreshed by its own loop); null: no budget is checked.
  BudgetLedger* budgets = nullptr;
  // How soon a run held by its budget looks again (vto run: --budget-poll-interval, as the spend is read).
  Clock::duration budgetRecheckPeriod = std::chrono::seconds(30);
  // How soon a run queued by its tenant's maxAccelerators looks again for free capacity.
  Clock::duration quotaRecheckPeriod = std::chrono::seconds(30);
  // Where the resourceVersions of this reconciler's own writes go, so that their watch events
  // enqueue nothing (controller::enqueueUnlessOwnWrite); null: every event reconciles.
  controller::OwnWrites* ownWrites = nullptr;
  // A fresh run takes over the unfinished job a run of the same namespace and name left (a re-apply
  // into a rebuilt cluster, a restore without status): vto run, whose poller lists every fresh run's
  // place once after the start (the run waits for that list). Off: every fresh run creates its job.
  bool adoptNamesakes = false;
  // Which Vertex jobs this operator made (cluster identity and ownership tag): only those are cached,
  // so followed, adopted, counted, read and cancelled; null: every job with vto's labels (unit tests).
  const JobOwnership* ownership = nullptr;
  // Where succeeded runs with spec.model register it; null: such runs say the operator cannot.
  vertex::ModelRegistry* registry = nullptr;
  // The failed attempts' log tails, read off the workers; null: no tails (the Failed Event is not held).
  const LogTailPoller* logTails = nullptr;
  // How long an upload asked for but not recorded (a crash in between) is waited for (DecideOptions).
  Clock::duration uploadGracePeriod = std::chrono::minutes(5);
  // Admission by Kueue (vto run --kueue): runs labelled kueue.x-k8s.io/queue-name get a Workload and
  // wait for its admission. `workloads` is the informer cache of vto's Workloads (null: none yet).
  bool kueue = false;
  const controller::ObjectCache* workloads = nullptr;
  // Whether that cache has synced since the start (null: it has). Until it has, for at most
  // awaitWorkloadSync after the start, a run whose Workload it does not hold waits.
  std::function<bool()> workloadsSynced{};
  Clock::duration awaitWorkloadSync = std::chrono::minutes(1);
  // Where this reconciler's status writes on Workloads are recorded until the cache shows them.
  controller::OwnWrites* workloadWrites = nullptr;
};

// Buckets whose listing succeeded lately (for any run): a new run in one of them needs no GCS
// request to show that its bucket exists and can be listed. Safe across workers.
class ListedBuckets {
 public:
  static constexpr auto kFreshFor = std::chrono::seconds(60);
  static constexpr size_t kMaxBuckets = 1024;
  bool recentlyListed(const std::string& bucket, Clock::time_point now) const;
  void listed(const std::string& bucket, Clock::time_point now);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Clock::time_point> listedAt_;
};

// Status writes that record a job this process has just created, held back so that other runs'
// creates go first (the pass ends with Result::catchUp: the run comes back at low priority). What a
// pass cannot observe again is held: the run's history (the attempt that names the job) and its
// phase (so the JobCreated Event stays the only one). Until the status is written, every pass of
// the run observes them as stored and rebuilds the rest, so the job is recorded from its create on.
// A crash loses what is held; the job's labels then find it again (a namesake's adoption, or the
// lookup by labels before any later create), as after a crash between a create and its status
// write. Held as the JSON text status would carry (a few hundred bytes a run: in a burst of
// thousands, decoded structs cost megabytes of peak RSS). Safe across workers.
class HeldStatuses {
 public:
  void hold(const controller::ObjectKey& key, const std::string& uid, const crd::TrainingRunStatus& status);
  // The phase and history held for the run; nothing for another run of the same name.
  std::optional<crd::TrainingRunStatus> heldFor(const controller::ObjectKey& key, const std::string& uid) const;
  void release(const controller::ObjectKey& key);
  size_t size() const;

 private:
  struct Held {
    std::string uid;
    std::string status;  // encoded: phase and history only
  };
  mutable std::mutex mutex_;
  std::map<controller::ObjectKey, Held> held_;
};

class TrainingRunReconciler final : public controller::Reconciler {
 public:
  // `metrics` may be null.
  TrainingRunReconciler(const controller::ObjectCache& runs, controller::KubeClient& kube,
                        vertex::VertexClient& vertex, vertex::GcsClient& gcs, JobCache& jobs,
                        controller::EventRecorder& events, const Clock& clock, TrainingRunReconcilerOptions options,
                        metrics::TrainingRunMetrics* metrics = nullptr);

  controller::Result reconcile(const controller::ObjectKey& key) override;

  // The accelerator claims under tenancy caps: the TrainingRun informer's handler keeps it current
  // (update() on every event, before the run is enqueued) and enqueues the runs it wakes.
  AcceleratorLedger& accelerators() { return accelerators_; }
  // The budgets' month-to-date spend, when rules have budgets (nullptr otherwise): its holds follow
  // job and run events as the ledger's claims do.
  BudgetLedger* budgets() { return options_.budgets; }

  const HeldStatuses& heldStatuses() const { return held_; }

  // The two halves around decide(), public for tests.
  Observed observe(const nlohmann::json& object);
  controller::Result act(const nlohmann::json& object, const Observed& observed, Plan plan);

 private:
  // The job named in status: cached while fresh, else a GET (404: deleted outside vto).
  std::optional<CachedJob> readJob(const std::string& jobName, const std::optional<PollTarget>& target,
                                   Observed& observed);
  // The job vto created for this run and attempt, found by its labels (oldest first, so that every
  // pass adopts the same one should two ever exist).
  std::optional<vertex::Job> findByLabels(const Observed& observed, const PollTarget& target, int attempt);
  void observeCheckpoint(Observed& observed);
  // A fresh run's namesake: the unfinished job a run of the same namespace and name left.
  void observeNamesake(Observed& observed);
  // Whether the run was restored without status: then the jobs of the runs it was, read from Vertex.
  bool observeRestored(Observed& observed);
  // spec.adoptJob before the run has a job: the job read, and whether it may be taken.
  void observeAdoption(Observed& observed);
  // Whether the run's spec is outside its tenancy rule: then nothing of it reaches Vertex.
  bool outsideItsRule(Observed& observed);
  // The tenancy rules and the run's namespace labels into `observed`, once a pass.
  void readTenancyRules(Observed& observed);
  // Why the run may not take spec.adoptJob, a job with `labels` (another run's or another cluster's;
  // `askOtherRuns`: or a job another run recorded or named first); nullopt when it may.
  std::optional<std::string> adoptionRefusal(const Observed& observed, const std::map<std::string, std::string>& labels,
                                             bool askOtherRuns) const;
  // act's create: adopts the attempt's job if one exists, else creates it (moving on to the next
  // placement when Vertex refuses a capped accelerator quota), and records it in the plan's status.
  Plan createPlannedJob(const Observed& observed, Plan plan);
  // Where the attempt's job may be: the create's target and, with spec.capacity, every placement's.
  std::vector<PollTarget> targetsOf(const Observed& observed, const CreateJob& create) const;
  // A succeeded run registering its model: its version by label, the upload in flight, the artifact
  // and metrics file, as far as the next step needs them.
  void observeRegistry(Observed& observed);
  // act's upload: status first (the journal), then models:upload, then its operation into status.
  Plan uploadPlannedModel(const Observed& observed, Plan plan, std::optional<nlohmann::json>& written,
                          const nlohmann::json& cached);
  // A run labelled kueue.x-k8s.io/queue-name: its Workload from the cache (and nothing for any other run).
  void observeWorkload(Observed& observed);
  // Before its Workload is created: the value of the WorkloadPriorityClass the run names.
  void observePriority(Observed& observed);
  // act's Workload create; a refusal is decided again (Kueue not installed, a name taken, ...).
  Plan createPlannedWorkload(const Observed& observed, Plan plan);
  // act's server-side apply on a Workload's status (Finished, an admission released), recorded as our own.
  void patchWorkloadStatus(const std::string& ns, const nlohmann::json& body);
  // Before attempt 1: one listing each of the output prefix and the checkpoint directory.
  void observeBuckets(Observed& observed);
  // The tenancy inputs: this run's namespace and, where a job may be created, the other runs'
  // accelerator claims (the ledger).
  void observeTenancy(Observed& observed);
  // Records in options_.ownWrites that a write conditional on `replaced` left the object as `written`.
  void rememberOwnWrite(const nlohmann::json& replaced, const nlohmann::json& written);
  // PUTs the status; returns the object as stored afterwards (its new resourceVersion).
  nlohmann::json writeStatus(const nlohmann::json& object, const crd::TrainingRunStatus& status);

  const controller::ObjectCache& runs_;
  controller::KubeClient& kube_;
  vertex::VertexClient& vertex_;
  vertex::GcsClient& gcs_;
  JobCache& jobs_;
  controller::EventRecorder& events_;
  const Clock& clock_;
  TrainingRunReconcilerOptions options_;
  DecideOptions decideOptions_;
  metrics::TrainingRunMetrics* metrics_;
  CheckpointSchedule checkpoints_;
  AcceleratorLedger accelerators_;
  NamespaceLabels namespaces_;
  ListedBuckets buckets_;
  HeldStatuses held_;
  Clock::time_point startedAt_;
};

}  // namespace vto::reconcilers
