#pragma once
// Everything `vto run` puts around the TrainingRun reconciler, as one object that the tests build
// too: the JobCache, Vertex polling (the poll targets, the JobPoller and its PollingSource), the
// accelerator ledger, the run metrics and the own-writes record, fed by one handler per run event.
// wireTrainingRuns() registers it with a controller::Manager.
#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "controller/informer.h"
#include "controller/manager.h"
#include "controller/object_cache.h"
#include "controller/own_writes.h"
#include "controller/polling_source.h"
#include "metrics/trainingrun_observer.h"
#include "reconcilers/jobs/job_cache.h"
#include "reconcilers/jobs/job_poller.h"
#include "reconcilers/jobs/poll_targets.h"
#include "reconcilers/trainingrun/reconciler.h"

namespace vto::reconcilers {

struct TrainingRunDeps {
  controller::KubeClient& kube;
  vertex::VertexClient& vertex;
  vertex::GcsClient& gcs;
  controller::EventRecorder& events;
  const Clock& clock;
  metrics::TrainingRunMetrics* metrics = nullptr;   // may be null
  metrics::TrainingRunObserver* observer = nullptr;  // may be null
  // Where failed attempts' log tails are read (the operator's credentials); null: no tails.
  vertex::LoggingClient* logging = nullptr;
};

class TrainingRunController {
 public:
  using Enqueue = std::function<void(const controller::ObjectKey& run)>;
  // `runs` is the TrainingRun informer's cache. `options.ownWrites` is set to this object's record.
  TrainingRunController(const controller::ObjectCache& runs, TrainingRunDeps deps, TrainingRunReconcilerOptions options,
                        JobPollerOptions pollerOptions = {}, LogTailOptions logTailOptions = {});

  // Where reconciles go (the controller's work queue); set before any event arrives. A run that only
  // follows its job's progress (a state that is not final, a log tail) comes back at low priority,
  // behind runs that may start work; without `enqueueLowPriority`, through `enqueue` too.
  void setEnqueue(Enqueue enqueue, Enqueue enqueueLowPriority = {}) {
    enqueue_ = std::move(enqueue);
    enqueueLowPriority_ = enqueueLowPriority ? std::move(enqueueLowPriority) : enqueue_;
  }
  // The informer handler for every event of a run: its poll target, its accelerator claim and its
  // metrics snapshot from one decode (the runs whose accelerators it frees are reconciled), then the
  // run itself, unless the event is the echo of this reconciler's own write.
  void onRunEvent(const nlohmann::json& run);
  // The informer handler for vto's Workloads (vto run --kueue): the run that controls one is
  // reconciled when Kueue admits, evicts or finishes it, or it is deleted (gone from `workloads`, the
  // informer's cache), not for the echo of its own status write.
  void onWorkloadEvent(const nlohmann::json& workload, const controller::ObjectCache& workloads);

  TrainingRunReconciler& reconciler() { return *reconciler_; }
  controller::OwnWrites& ownWrites() { return ownWrites_; }
  JobCache& jobs() { return jobs_; }
  JobPoller& poller() { return poller_; }
  controller::PollingSource& polling() { return polling_; }
  LogTailPoller& logTails() { return logTails_; }
  controller::PollingSource& logTailPolling() { return logTailPolling_; }

 private:
  // Wakes the run that follows a job whose state changed (its labels say which).
  void wakeTheRunOf(const std::string& jobName, const std::map<std::string, std::string>& jobLabels);

  const controller::ObjectCache& runs_;
  metrics::TrainingRunObserver* observer_;
  Enqueue enqueue_ = [](const controller::ObjectKey&) {};
  Enqueue enqueueLowPriority_ = [](const controller::ObjectKey&) {};
  controller::OwnWrites ownWrites_;
  controller::OwnWrites workloadWrites_;  // the reconciler's status writes on Workloads
  JobCache jobs_;
  PollTargets targets_;
  LogTailPoller logTails_;
  controller::PollingSource logTailPolling_;
  std::unique_ptr<TrainingRunReconciler> reconciler_;
  JobPollerOptions pollerOptions_;
  JobPoller poller_;
  controller::PollingSource polling_;
};

// The controller named "trainingrun" with `workers` reconcile workers, its handler on the informer,
// and Vertex polling (and, with a Logging client, the log tails' reads) as loops that run only on the leader.
void wireTrainingRuns(controller::Manager& manager, controller::Informer& runs, TrainingRunController& controller,
                      int workers);
// The Workload informer's handler (after wireTrainingRuns, which sets where reconciles go).
void wireWorkloads(controller::Informer& workloads, TrainingRunController& controller);
// The informer options of vto's Workloads (those labelled with a run's uid), from `base` (namespaces,
// idle limit). Kueue may be installed after vto: this informer does not hold back readiness.
controller::InformerOptions workloadInformerOptions(controller::InformerOptions base);

}  // namespace vto::reconcilers
