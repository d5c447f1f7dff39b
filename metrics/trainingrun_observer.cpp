#include "metrics/trainingrun_observer.h"

#include <prometheus/metric_family.h>

#include <set>

namespace vto::metrics {
namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Waits for capacity range from seconds (on-demand CPUs) to a day (Spot A100s, FlexStart).
prometheus::Histogram::BucketBoundaries queueBuckets() {
  return {1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400};
}
prometheus::Histogram::BucketBoundaries durationBuckets() {
  return {10, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800};
}

}  // namespace

bool TrainingRunObserver::isTerminal(const std::string& phase) {
  return phase == "Succeeded" || phase == "Failed" || phase == "Cancelled" || phase == "Invalid";
}

TrainingRunObserver::TrainingRunObserver(const Clock& clock, std::vector<std::string> phases)
    : clock_(clock),
      phases_(std::move(phases)),
      registry_(std::make_shared<prometheus::Registry>()),
      runs_(prometheus::BuildGauge()
                .Name("vto_trainingruns")
                .Help("TrainingRuns in each phase now, by namespace")
                .Register(*registry_)),
      waiting_(prometheus::BuildGauge()
                   .Name("vto_trainingruns_waiting_for_capacity")
                   .Help("TrainingRuns waiting now because every placement they may use has no capacity, by namespace")
                   .Register(*registry_)),
      waitingForKueue_(prometheus::BuildGauge()
                           .Name("vto_trainingruns_waiting_for_kueue")
                           .Help("TrainingRuns waiting now for Kueue to admit their Workload (queue-name label), by "
                                 "namespace")
                           .Register(*registry_)),
      kueueWaitSeconds_(prometheus::BuildHistogram()
                            .Name("vto_trainingrun_kueue_wait_seconds")
                            .Help("Time a TrainingRun waited for Kueue's admission, each wait (before its first job "
                                  "and after each eviction), by namespace")
                            .Register(*registry_)),
      queueSeconds_(prometheus::BuildHistogram()
                        .Name("vto_trainingrun_queue_seconds")
                        .Help("Time from a TrainingRun's creation to its first job running")
                        .Register(*registry_)),
      durationSeconds_(prometheus::BuildHistogram()
                           .Name("vto_trainingrun_duration_seconds")
                           .Help("Time from a TrainingRun's creation to its completion, by outcome")
                           .Register(*registry_)),
      finished_(prometheus::BuildCounter()
                    .Name("vto_trainingruns_finished_total")
                    .Help("TrainingRuns that reached a final phase, by framework and outcome")
                    .Register(*registry_)),
      attemptFailures_(prometheus::BuildCounter()
                           .Name("vto_trainingrun_attempt_failures_total")
                           .Help("TrainingRun attempts whose Vertex job failed, by failure class")
                           .Register(*registry_)),
      acceleratorSeconds_(prometheus::BuildCounter()
                              .Name("vto_trainingrun_accelerator_seconds_total")
                              .Help("Accelerator time held by running TrainingRun jobs (count x replicas x seconds)")
                              .Register(*registry_)),
      machineSeconds_(prometheus::BuildCounter()
                          .Name("vto_trainingrun_machine_seconds_total")
                          .Help("Machine time held by running TrainingRun jobs (replicas x seconds), by machine type")
                          .Register(*registry_)),
      costUsd_(prometheus::BuildCounter()
                   .Name("vto_trainingrun_cost_usd_total")
                   .Help("Estimated list-price cost of running TrainingRun jobs in USD (status.cost.hourlyUsd x time)")
                   .Register(*registry_)),
      progress_(prometheus::BuildGauge()
                    .Name("vto_trainingrun_progress_ratio")
                    .Help("How far each unfinished TrainingRun is, 0 to 1: the step of its newest checkpoint over "
                          "spec.checkpointing.totalSteps (status.progress)")
                    .Register(*registry_)),
      eta_(prometheus::BuildGauge()
               .Name("vto_trainingrun_eta_timestamp_seconds")
               .Help("When each running TrainingRun should reach totalSteps at this attempt's rate, in Unix seconds "
                     "(status.progress.eta)")
               .Register(*registry_)) {}

void TrainingRunObserver::accrueLocked(Record& record, Clock::time_point now) const {
  if (record.run.phase == "Running" && now > record.accountedUntil && active_) {
    double held = seconds(now - record.accountedUntil);
    const auto& run = record.run;
    for (const auto& pool : run.pools) {
      if (pool.replicas <= 0) continue;
      if (!pool.machineType.empty()) {
        machineSeconds_
            .Add({{"namespace", run.ns}, {"machine_type", pool.machineType}, {"scheduling", run.scheduling}})
            .Increment(held * pool.replicas);
      }
      if (!pool.acceleratorType.empty() && pool.acceleratorCount > 0) {
        acceleratorSeconds_
            .Add({{"namespace", run.ns}, {"accelerator_type", pool.acceleratorType}, {"scheduling", run.scheduling}})
            .Increment(held * pool.replicas * pool.acceleratorCount);
      }
    }
    if (run.hourlyUsd && *run.hourlyUsd > 0) {
      costUsd_.Add({{"namespace", run.ns}, {"accelerator_type", run.acceleratorType}, {"scheduling", run.scheduling}})
          .Increment(held / 3600.0 * *run.hourlyUsd);
    }
  }
  record.accountedUntil = std::max(record.accountedUntil, now);
}

bool TrainingRunObserver::hasPools(const std::string& uid, int64_t generation) const {
  std::lock_guard lock(mutex_);
  auto found = records_.find(uid);
  return found != records_.end() && found->second.run.poolsRead && found->second.run.generation == generation;
}

void TrainingRunObserver::observe(RunSnapshot run) {
  std::lock_guard lock(mutex_);
  auto now = clock_.now();
  auto [it, isNew] = records_.try_emplace(run.uid);
  auto& record = it->second;
  if (!isNew && !run.poolsRead && record.run.poolsRead && record.run.generation == run.generation &&
      run.phase != "Invalid") {
    run.pools = record.run.pools;  // the same spec: the same pools
    run.acceleratorType = record.run.acceleratorType;
    run.poolsRead = true;
  }
  if (isNew) {
    // The first sight (a start-up list included) is a baseline: what happened before is not ours
    // to count, so only transitions seen from here on add to counters.
    record.run = run;
    record.sawRunning = run.phase != "Pending" && run.phase != "Submitted" && run.phase != "Queued" &&
                        run.phase != "Invalid";
    record.finished = isTerminal(run.phase);
    record.lastFailedAttempt = run.failedAttempts.empty() ? 0 : run.failedAttempts.rbegin()->first;
    record.accountedUntil = now;
    if (run.waitingForKueue && !isTerminal(run.phase)) record.kueueWaitingSince = now;
    gaugeStale_ = true;
    return;
  }
  // Time held so far was held under the previous shape (phase, machines).
  accrueLocked(record, now);
  record.run = run;

  if (active_) {
    // A job that ran and ended between two looks still has attempt 1's startTime.
    if (!record.sawRunning && (run.phase == "Running" || run.firstRunning)) {
      auto started = run.firstRunning.value_or(now);
      if (run.created && started >= *run.created) {
        queueSeconds_
            .Add({{"namespace", run.ns}, {"scheduling", run.scheduling}, {"accelerator_type", run.acceleratorType}},
                 queueBuckets())
            .Observe(seconds(started - *run.created));
      }
    }
    for (const auto& [attempt, failureClass] : run.failedAttempts) {
      if (attempt > record.lastFailedAttempt) attemptFailures_.Add({{"failure_class", failureClass}}).Increment();
    }
    if (isTerminal(run.phase) && !record.finished) {
      finished_.Add({{"namespace", run.ns}, {"framework", run.framework}, {"outcome", run.phase}}).Increment();
      if (run.phase != "Invalid" && run.created) {
        auto end = run.completed.value_or(now);
        if (end >= *run.created) {
          durationSeconds_.Add({{"namespace", run.ns}, {"outcome", run.phase}}, durationBuckets())
              .Observe(seconds(end - *run.created));
        }
      }
    }
  }
  // A wait for Kueue ends when it admits (the job follows in the same pass), or the run ends waiting.
  bool waitsForKueue = run.waitingForKueue && !isTerminal(run.phase);
  if (waitsForKueue && !record.kueueWaitingSince) {
    record.kueueWaitingSince = now;
  } else if (!waitsForKueue && record.kueueWaitingSince) {
    if (active_) {
      kueueWaitSeconds_.Add({{"namespace", run.ns}}, queueBuckets()).Observe(seconds(now - *record.kueueWaitingSince));
    }
    record.kueueWaitingSince.reset();
  }
  if (run.phase == "Running" || run.firstRunning) record.sawRunning = true;
  record.finished = isTerminal(run.phase);  // a run edited out of Invalid may finish again
  if (!run.failedAttempts.empty()) record.lastFailedAttempt = std::max(record.lastFailedAttempt, run.failedAttempts.rbegin()->first);
  gaugeStale_ = true;
}

void TrainingRunObserver::forget(const std::string& uid) {
  std::lock_guard lock(mutex_);
  auto now = clock_.now();
  auto it = records_.find(uid);
  if (it == records_.end()) return;
  accrueLocked(it->second, now);
  records_.erase(it);
  gaugeStale_ = true;
}

void TrainingRunObserver::accrue() const {
  std::lock_guard lock(mutex_);
  auto now = clock_.now();
  for (auto& [uid, record] : records_) accrueLocked(record, now);
}

void TrainingRunObserver::setActive(bool active) {
  std::lock_guard lock(mutex_);
  auto now = clock_.now();
  // Time before becoming leader was the previous leader's to count.
  for (auto& [uid, record] : records_) record.accountedUntil = std::max(record.accountedUntil, now);
  active_ = active;
  gaugeStale_ = true;
}

std::vector<prometheus::MetricFamily> TrainingRunObserver::Collect() const {
  {
    std::lock_guard lock(mutex_);
    auto now = clock_.now();
    for (auto& [uid, record] : records_) accrueLocked(record, now);
    if (gaugeStale_) recomputeGaugeLocked();
  }
  return registry_->Collect();
}

void TrainingRunObserver::setPerRunLocked(prometheus::Family<prometheus::Gauge>& family,
                                          std::map<std::string, prometheus::Gauge*>& gauges,
                                          const std::map<std::string, std::pair<const RunSnapshot*, double>>& values) const {
  for (auto it = gauges.begin(); it != gauges.end();) {
    if (values.count(it->first) == 0) {
      family.Remove(it->second);
      it = gauges.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [uid, value] : values) {
    auto& gauge = gauges[uid];
    if (gauge == nullptr) gauge = &family.Add({{"namespace", value.first->ns}, {"name", value.first->name}});
    gauge->Set(value.second);
  }
}

void TrainingRunObserver::setPerNamespaceLocked(prometheus::Family<prometheus::Gauge>& family,
                                                std::map<std::string, prometheus::Gauge*>& gauges,
                                                const std::set<std::string>& namespaces,
                                                const std::map<std::string, int>& counts) const {
  for (const auto& ns : namespaces) {
    auto& gauge = gauges[ns];
    if (gauge == nullptr) gauge = &family.Add({{"namespace", ns}});
    auto count = counts.find(ns);
    gauge->Set(count == counts.end() ? 0 : count->second);
  }
  for (auto it = gauges.begin(); it != gauges.end();) {
    if (namespaces.count(it->first) == 0) {
      family.Remove(it->second);
      it = gauges.erase(it);
    } else {
      ++it;
    }
  }
}

void TrainingRunObserver::recomputeGaugeLocked() const {
  gaugeStale_ = false;
  std::map<std::pair<std::string, std::string>, int> counts;
  std::map<std::string, int> waiting, waitingForKueue;
  std::set<std::string> namespaces;
  if (active_) {
    for (const auto& [uid, record] : records_) {
      namespaces.insert(record.run.ns);
      ++counts[{record.run.ns, record.run.phase}];
      if (record.run.waitingForCapacity) ++waiting[record.run.ns];
      if (record.run.waitingForKueue && !isTerminal(record.run.phase)) ++waitingForKueue[record.run.ns];
    }
  }
  setPerNamespaceLocked(waiting_, waitingGauges_, namespaces, waiting);
  setPerNamespaceLocked(waitingForKueue_, kueueWaitingGauges_, namespaces, waitingForKueue);
  // Per run, only while it is not finished: the number of series follows the active runs.
  std::map<std::string, std::pair<const RunSnapshot*, double>> progress, eta;
  if (active_) {
    for (const auto& [uid, record] : records_) {
      if (isTerminal(record.run.phase)) continue;
      if (record.run.progressRatio) progress[uid] = {&record.run, *record.run.progressRatio};
      if (record.run.eta) {
        eta[uid] = {&record.run, std::chrono::duration<double>(record.run.eta->time_since_epoch()).count()};
      }
    }
  }
  setPerRunLocked(progress_, progressGauges_, progress);
  setPerRunLocked(eta_, etaGauges_, eta);
  // Every phase of a namespace that has runs (0 included, so graphs drop to zero); none for others.
  for (const auto& ns : namespaces) {
    for (const auto& phase : phases_) {
      auto key = std::make_pair(ns, phase);
      auto& gauge = gauges_[key];
      if (gauge == nullptr) gauge = &runs_.Add({{"namespace", ns}, {"phase", phase}});
      auto count = counts.find(key);
      gauge->Set(count == counts.end() ? 0 : count->second);
    }
  }
  for (auto it = gauges_.begin(); it != gauges_.end();) {
    if (namespaces.count(it->first.first) == 0) {
      runs_.Remove(it->second);
      it = gauges_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace vto::metrics
