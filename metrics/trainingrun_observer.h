#pragma once
// TrainingRun metrics derived from the informer's cache, the way kube-state-metrics derives
// Deployment metrics: the informer hands every changed run to observe(), which keeps a small record
// per run (last phase, attempts counted, last time its running time was accounted) and turns
// transitions into counters and histograms. The only per-run series are a run's progress and ETA,
// and only while it is not finished, so their number is bounded by the active runs.
//
// Only the leader exports (setActive): a standby replica keeps its records current but adds nothing,
// so summing over replicas never counts a run twice. It is a Collectable with its own registry so
// that a scrape first accounts running jobs up to the clock's now, then reads the values.
#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"

namespace vto::metrics {

// The machines one attempt of a run occupies while its job runs (all trials of a tuning job).
struct MachinePool {
  std::string machineType;
  std::string acceleratorType;  // "" for none
  int acceleratorCount = 0;     // per machine
  int replicas = 0;
};

// What the metrics need from one TrainingRun; reconcilers/trainingrun_snapshot.h decodes it.
// Label values here are already bounded (enum names, validated machine and accelerator types).
struct RunSnapshot {
  std::string uid, ns, name;
  std::string phase = "Pending";          // "Pending" before the operator writes a status
  std::string framework = "other";
  std::string scheduling = "Standard";
  std::string acceleratorType = "none";   // of the training replicas
  std::vector<MachinePool> pools;
  // Whether pools and acceleratorType were derived from the spec of `generation` (rendering the job
  // is the costly part of a snapshot; observe() keeps the record's pools while the generation holds).
  bool poolsRead = false;
  int64_t generation = 0;
  std::optional<Clock::time_point> created;
  std::optional<Clock::time_point> firstRunning;  // attempt 1's job startTime
  std::optional<Clock::time_point> completed;
  std::map<int, std::string> failedAttempts;      // attempt number -> failure class
  bool waitingForCapacity = false;                // every placement of spec.capacity is blocked
  bool waitingForKueue = false;                   // Ready=False WaitingForKueue: no job until Kueue admits
  std::optional<double> hourlyUsd;                // status.cost.hourlyUsd: what the running job costs per hour
  std::optional<double> progressRatio;            // status.progress step / totalSteps, 0 to 1
  std::optional<Clock::time_point> eta;           // status.progress.eta
};

class TrainingRunObserver final : public prometheus::Collectable {
 public:
  // `phases`: every phase a run can be in (crd's names, from reconcilers::trainingRunPhases()), so
  // that a namespace's gauge shows 0 for the phases none of its runs is in.
  TrainingRunObserver(const Clock& clock, std::vector<std::string> phases);

  // A run as the cache holds it now.
  void observe(RunSnapshot run);
  // Whether the record of `uid` holds pools read from the spec of `generation` (a new snapshot may
  // then skip reading them).
  bool hasPools(const std::string& uid, int64_t generation) const;
  // A run left the cache (deleted): its running time up to now is accounted, its record dropped.
  void forget(const std::string& uid);
  // Accounts the running time of every running run up to now, so consumption grows while jobs run
  // rather than when they end. Collect() calls it.
  void accrue() const;
  // Leader: export. Standby: keep records only (and export no vto_trainingruns series).
  void setActive(bool active);

  std::vector<prometheus::MetricFamily> Collect() const override;

  static bool isTerminal(const std::string& phase);

 private:
  struct Record {
    RunSnapshot run;
    bool sawRunning = false;      // the queue time was observed (or the run was first seen past it)
    bool finished = false;        // counted in finished_total for its current terminal phase
    int lastFailedAttempt = 0;    // attempts up to this number are counted in attempt_failures_total
    Clock::time_point accountedUntil{};
    // Since when it waits for Kueue, as this process saw it (a run already waiting at the first sight:
    // from then, a lower bound).
    std::optional<Clock::time_point> kueueWaitingSince;
  };
  void accrueLocked(Record& record, Clock::time_point now) const;
  // The phase gauge is rebuilt at scrape time, not per observe: a rebuild walks every record, and
  // doing it per event made submitting N runs cost O(N^2).
  void recomputeGaugeLocked() const;
  // Sets one gauge per namespace that has runs (0 for those `counts` lacks) and removes the others'.
  void setPerNamespaceLocked(prometheus::Family<prometheus::Gauge>& family, std::map<std::string, prometheus::Gauge*>& gauges,
                             const std::set<std::string>& namespaces, const std::map<std::string, int>& counts) const;
  // Sets one gauge per run of `values` (by uid: namespace and name) and removes those of runs not in it.
  void setPerRunLocked(prometheus::Family<prometheus::Gauge>& family, std::map<std::string, prometheus::Gauge*>& gauges,
                       const std::map<std::string, std::pair<const RunSnapshot*, double>>& values) const;

  const Clock& clock_;
  const std::vector<std::string> phases_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& runs_;
  prometheus::Family<prometheus::Gauge>& waiting_;
  prometheus::Family<prometheus::Gauge>& waitingForKueue_;
  prometheus::Family<prometheus::Histogram>& kueueWaitSeconds_;
  prometheus::Family<prometheus::Histogram>& queueSeconds_;
  prometheus::Family<prometheus::Histogram>& durationSeconds_;
  prometheus::Family<prometheus::Counter>& finished_;
  prometheus::Family<prometheus::Counter>& attemptFailures_;
  prometheus::Family<prometheus::Counter>& acceleratorSeconds_;
  prometheus::Family<prometheus::Counter>& machineSeconds_;
  prometheus::Family<prometheus::Counter>& costUsd_;
  prometheus::Family<prometheus::Gauge>& progress_;
  prometheus::Family<prometheus::Gauge>& eta_;

  mutable std::mutex mutex_;
  bool active_ = false;
  mutable std::map<std::string, Record> records_;  // by uid; accounting at scrape time moves accountedUntil
  mutable std::map<std::pair<std::string, std::string>, prometheus::Gauge*> gauges_;  // (namespace, phase)
  mutable std::map<std::string, prometheus::Gauge*> waitingGauges_;                   // by namespace
  mutable std::map<std::string, prometheus::Gauge*> kueueWaitingGauges_;              // by namespace
  mutable std::map<std::string, prometheus::Gauge*> progressGauges_, etaGauges_;      // by uid
  mutable bool gaugeStale_ = false;
};

}  // namespace vto::metrics
