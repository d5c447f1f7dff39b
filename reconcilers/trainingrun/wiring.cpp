#include "reconcilers/trainingrun/wiring.h"

#include "reconcilers/trainingrun/snapshot.h"

#include <set>

namespace vto::reconcilers {

namespace {
TrainingRunReconcilerOptions withOwnWrites(TrainingRunReconcilerOptions options, controller::OwnWrites& ownWrites,
                                           const LogTailPoller& logTails) {
  options.ownWrites = &ownWrites;
  options.logTails = &logTails;
  return options;
}

controller::PollingSourceOptions logTailPollingOptions() {
  controller::PollingSourceOptions options;
  options.workers = 2;
  options.maxPerGroup = 2;
  return options;
}
}  // namespace

TrainingRunController::TrainingRunController(const controller::ObjectCache& runs, TrainingRunDeps deps,
                                             TrainingRunReconcilerOptions options, JobPollerOptions pollerOptions,
                                             LogTailOptions logTailOptions)
    : runs_(runs),
      observer_(deps.observer),
      logTails_(deps.logging, deps.clock,
                [this](const std::string& uid) {
                  if (auto key = runs_.keyByUid(uid)) enqueue_(*key);
                },
                logTailOptions),
      // Each read waits on Cloud Logging (up to its timeout): a few at once, none on a reconcile worker.
      logTailPolling_(
          deps.clock, [this] { return logTails_.targets(); },
          [this](const std::string& target) { return logTails_.poll(target); },
          logTailPollingOptions()),
      reconciler_(std::make_unique<TrainingRunReconciler>(runs, deps.kube, deps.vertex, deps.gcs, jobs_, deps.events,
                                                          deps.clock,
                                                          withOwnWrites(std::move(options), ownWrites_, logTails_),
                                                          deps.metrics)),
      pollerOptions_(pollerOptions),
      poller_(deps.vertex, jobs_, deps.clock,
              [this](const std::string& uid) {
                if (auto key = runs_.keyByUid(uid)) enqueue_(*key);
              },
              pollerOptions),
      polling_(
          deps.clock,
          [this] {
            std::set<std::string> keys;
            for (const auto& [key, target] : targets_.current()) keys.insert(key);
            for (auto& prefix : jobs_.unfinishedPrefixes()) keys.insert(std::move(prefix));
            return std::vector<std::string>(keys.begin(), keys.end());
          },
          [this](const std::string& key) {
            // A target is its job-name prefix: projects/P/locations/L/customJobs/.
            auto target = pollTargetOfJob(key + "0");
            return target ? poller_.poll(*target) : pollerOptions_.interval;
          }) {
  // A job's change reaches the accelerator ledger (a job that ended frees its namespace's accelerators).
  jobs_.setListener([this](const std::string& name, const CachedJob* job) {
    for (const auto& waiting : reconciler_->accelerators().updateJob(name, job)) enqueue_(waiting);
  });
}

void TrainingRunController::onRunEvent(const nlohmann::json& run) {
  auto key = controller::keyOf(run);
  auto uid = run["metadata"].value("uid", "");
  auto wake = [&](const std::vector<controller::ObjectKey>& keys) {
    for (const auto& waiting : keys) enqueue_(waiting);
  };
  if (runs_.uidAt(key) != uid) {  // gone, or replaced by a namesake
    targets_.update(key, nullptr);
    logTails_.update(uid, nullptr);
    wake(reconciler_->accelerators().update(uid, nullptr));
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
  targets_.update(key, decodedRun);
  // Own writes too: the status write that records a failure is what makes its tail wanted.
  logTails_.update(uid, decodedRun);
  // Before the run is reconciled: admission must see every older run's claim.
  wake(reconciler_->accelerators().update(uid, decodedRun));
  if (observer_ != nullptr) {
    auto generation = run["metadata"].value("generation", int64_t{0});
    // A run that may fail over reads its machines each time: its placement can change, its generation not.
    bool readPools = !observer_->hasPools(uid, generation) || (decodedRun != nullptr && decodedRun->spec.capacity);
    observer_->observe(trainingRunSnapshot(run, decodedRun, readPools));
  }
  if (!ownWrites_.consume(run)) enqueue_(key);
}

void wireTrainingRuns(controller::Manager& manager, controller::Informer& runs, TrainingRunController& controller,
                      int workers) {
  manager.addController("trainingrun", controller.reconciler(), workers);
  auto& queue = manager.queue("trainingrun");
  controller.setEnqueue([&queue](const controller::ObjectKey& key) { queue.add(key); });
  runs.addHandler([&controller](const nlohmann::json& run) { controller.onRunEvent(run); });
  manager.addLoop([&controller](std::stop_token stop) { controller.polling().run(stop); });
  if (controller.logTails().enabled()) {
    manager.addLoop([&controller](std::stop_token stop) { controller.logTailPolling().run(stop); });
  }
}

}  // namespace vto::reconcilers
