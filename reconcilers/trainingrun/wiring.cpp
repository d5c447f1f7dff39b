#include "reconcilers/trainingrun/wiring.h"

#include "base/json_fields.h"
#include "reconcilers/trainingrun/snapshot.h"

#include <set>

namespace vto::reconcilers {

namespace {
TrainingRunReconcilerOptions withOwnWrites(TrainingRunReconcilerOptions options, controller::OwnWrites& ownWrites,
                                           controller::OwnWrites& workloadWrites, const LogTailPoller& logTails) {
  options.ownWrites = &ownWrites;
  options.workloadWrites = &workloadWrites;
  options.logTails = &logTails;
  return options;
}

// A tail is read only for a job that is the run's: one this controller observed, made by this
// operator, with the run's uid.
LogTailOptions withJobs(LogTailOptions options, const JobCache& jobs) {
  options.jobs = &jobs;
  return options;
}

// Two reads at once, at most one per namespace: one namespace's failures (a flood of them, or reads
// that Cloud Logging answers slowly) never hold both threads, nor do any number of such namespaces.
controller::PollingSourceOptions logTailPollingOptions(const LogTailPoller& logTails) {
  controller::PollingSourceOptions options;
  options.workers = 2;
  options.groupOf = [&logTails](const std::string& target) { return logTails.namespaceOf(target); };
  options.maxPerGroup = 1;
  // And namespaces whose reads are slow or failing (or not yet seen) share one of them.
  options.maxUntrustedWorkers = 1;
  return options;
}
}  // namespace

TrainingRunController::TrainingRunController(const controller::ObjectCache& runs, TrainingRunDeps deps,
                                             TrainingRunReconcilerOptions options, JobPollerOptions pollerOptions,
                                             LogTailOptions logTailOptions)
    : runs_(runs),
      observer_(deps.observer),
      targets_(options.defaults),
      logTails_(deps.logging, deps.clock,
                [this](const std::string& uid) {
                  if (auto key = runs_.keyByUid(uid)) enqueueLowPriority_(*key);
                },
                withJobs(logTailOptions, jobs_)),
      // Each read waits on Cloud Logging (up to its timeout): a few at once, none on a reconcile worker.
      logTailPolling_(
          deps.clock, [this] { return logTails_.targets(); },
          [this](const std::string& target) { return logTails_.poll(target); },
          logTailPollingOptions(logTails_)),
      reconciler_(std::make_unique<TrainingRunReconciler>(runs, deps.kube, deps.vertex, deps.gcs, jobs_, deps.events,
                                                          deps.clock,
                                                          withOwnWrites(std::move(options), ownWrites_, workloadWrites_, logTails_),
                                                          deps.metrics)),
      pollerOptions_(pollerOptions),
      poller_(deps.vertex, jobs_, deps.clock, [this](const auto& name, const auto& labels) { wakeTheRunOf(name, labels); }, pollerOptions),
      polling_(
          deps.clock,
          [this] {
            std::set<std::string> keys;
            for (const auto& [key, target] : targets_.current()) keys.insert(key);
            for (auto& prefix : jobs_.unfinishedPrefixes()) keys.insert(std::move(prefix));
            // Until listed once since the start: where a capped rule's jobs may run with no live run
            // following them (the ledger must count them before any run is admitted under that cap).
            for (const auto& source : reconciler_->accelerators().sources()) {
              auto prefix = source.target.jobPrefix();
              if (!jobs_.listed(prefix)) keys.insert(std::move(prefix));
            }
            return std::vector<std::string>(keys.begin(), keys.end());
          },
          [this](const std::string& key) {
            // A target is its job-name prefix: projects/P/locations/L/customJobs/.
            auto target = pollTargetOfJob(key + "0");
            if (!target) return pollerOptions_.interval;
            bool first = !jobs_.listed(key);
            auto next = poller_.poll(*target);
            // A cap's count may now be whole, and what runs of the same name left there is known:
            // the runs that waited for either look again.
            if (first && jobs_.listed(key)) {
              for (const auto& waiting : reconciler_->accelerators().waiting()) enqueue_(waiting);
              for (const auto& fresh : targets_.runsAt(key)) enqueue_(fresh);
            }
            return next;
          }) {
  // A job's change reaches the accelerator ledger (a job that ended frees its namespace's accelerators).
  jobs_.setListener([this](const std::string& name, const CachedJob* job) {
    for (const auto& waiting : reconciler_->accelerators().updateJob(name, job)) enqueue_(waiting);
    // A job yet to run that no poll saw (vto just made it, or a GET read it) is polled at the fast
    // interval from now on, not first at a slow poll up to --vertex-poll-interval away.
    if (job != nullptr && isStarting(job->state)) {
      if (auto target = pollTargetOfJob(name)) polling_.pollWithin(target->jobPrefix(), pollerOptions_.fastInterval);
    }
    // A budget hold kept after a lost create answer becomes the job's once a read shows it running.
    if (auto* budgets = reconciler_->budgets(); budgets != nullptr && job != nullptr && !vertex::isTerminal(job->state))
      budgets->jobSeen(labelOf(job->labels, crd::kRunUidLabel), name);
  });
  // A job imitating a run's: that run warns about it.
  jobs_.setImpostorListener([this](const std::string& uid) {
    if (auto key = runs_.keyByUid(uid)) enqueue_(*key);
  });
}

void TrainingRunController::wakeTheRunOf(const std::string& jobName, const std::map<std::string, std::string>& jobLabels) {
  auto uid = labelOf(jobLabels, crd::kRunUidLabel);
  if (uid.empty()) uid = jobs_.adopterOf(jobName);  // started outside vto, adopted by spec.adoptJob
  // A job that ended may need a resume (a create): that comes first. Progress only updates status.
  const auto& enqueue = jobs_.ended(jobName).value_or(true) ? enqueue_ : enqueueLowPriority_;
  if (auto key = runs_.keyByUid(uid)) {
    enqueue(*key);
    return;
  }
  // Made for an earlier run of a name that a run now there took over (adopted, or restored): that run.
  controller::ObjectKey key{labelOf(jobLabels, crd::kNamespaceLabel), labelOf(jobLabels, crd::kNameLabel)};
  if (!key.ns.empty() && !key.name.empty() && !runs_.uidAt(key).empty()) enqueue(key);
}

void TrainingRunController::onRunEvent(const nlohmann::json& run) {
  auto key = controller::keyOf(run);
  auto uid = metadataField(run, "uid");
  auto wake = [&](const std::vector<controller::ObjectKey>& keys) {
    for (const auto& waiting : keys) enqueue_(waiting);
  };
  if (runs_.uidAt(key) != uid) {  // gone, or replaced by a namesake
    targets_.update(key, nullptr);
    logTails_.update(uid, nullptr);
    wake(reconciler_->accelerators().update(uid, nullptr));
    if (auto* budgets = reconciler_->budgets()) budgets->forgetRun(uid);
    if (observer_ != nullptr) observer_->forget(uid);
    if (ownWrites_.consume(run)) return;
    enqueue_(key);
    return;
  }
  std::optional<crd::TrainingRun> decoded;
  try {
    decoded = crd::decodeTrainingRun(run);
  } catch (const std::exception&) {
    // Undecodable: the reconciler reports it Invalid; it has no job to poll and no machines.
  }
  const auto* decodedRun = decoded ? &*decoded : nullptr;
  if (targets_.update(key, decodedRun)) polling_.refreshNow();
  // Own writes too: the status write that records a failure is what makes its tail wanted.
  logTails_.update(uid, decodedRun);
  // Before the run is reconciled: admission must see every older run's claim.
  wake(reconciler_->accelerators().update(uid, decodedRun));
  // It will create nothing any more: what it held of a budget is free.
  if (auto* budgets = reconciler_->budgets(); budgets != nullptr && createsNoJob(decodedRun)) budgets->forgetRun(uid);
  if (observer_ != nullptr) {
    auto generation = run["metadata"].value("generation", int64_t{0});
    // A run that may fail over reads its machines each time: its placement can change, its generation not.
    bool readPools = !observer_->hasPools(uid, generation) || (decodedRun != nullptr && decodedRun->spec.capacity);
    observer_->observe(trainingRunSnapshot(run, decodedRun, readPools));
  }
  if (!ownWrites_.consume(run)) enqueue_(key);
}

void TrainingRunController::onWorkloadEvent(const nlohmann::json& workload, const controller::ObjectCache& workloads) {
  auto at = controller::keyOf(workload);
  bool gone = workloads.uidAt(at) != metadataField(workload, "uid");
  if (gone) workloadWrites_.forget(at);
  // Its controller, not its label, says whose it is: only a run of its own namespace is woken.
  auto key = runs_.keyByUid(controllerUidOf(workload));
  if (!key || key->ns != at.ns) return;
  // The echo of the run's own status write shows it nothing new, unless a pass waits for it.
  if (gone || !workloadWrites_.consume(workload)) enqueue_(*key);
}

void wireWorkloads(controller::Informer& workloads, TrainingRunController& controller) {
  workloads.addHandler([&controller, &workloads](const nlohmann::json& workload) {
    controller.onWorkloadEvent(workload, workloads.cache());
  });
}

controller::InformerOptions workloadInformerOptions(controller::InformerOptions base) {
  base.resource = workloadResource();
  base.labelSelector = kWorkloadRunUidLabel;  // vto's own Workloads only
  base.gatesReadiness = false;
  return base;
}

void wireTrainingRuns(controller::Manager& manager, controller::Informer& runs, TrainingRunController& controller,
                      int workers) {
  manager.addController("trainingrun", controller.reconciler(), workers);
  auto& queue = manager.queue("trainingrun");
  controller.setEnqueue([&queue](const controller::ObjectKey& key) { queue.add(key); },
                        [&queue](const controller::ObjectKey& key) { queue.addLowPriority(key); });
  runs.addHandler([&controller](const nlohmann::json& run) { controller.onRunEvent(run); });
  manager.addLoop([&controller](std::stop_token stop) { controller.polling().run(stop); });
  if (controller.logTails().enabled()) {
    manager.addLoop([&controller](std::stop_token stop) { controller.logTailPolling().run(stop); });
  }
}

}  // namespace vto::reconcilers
