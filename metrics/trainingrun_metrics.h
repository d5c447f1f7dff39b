#pragma once
// vto's own metrics about TrainingRuns (controller-runtime's names cover the runtime itself).
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <string>

namespace vto::metrics {

class TrainingRunMetrics {
 public:
  explicit TrainingRunMetrics(prometheus::Registry& registry);

  // vto_trainingrun_jobs_created_total{kind}
  void jobCreated(const std::string& kind);
  // vto_trainingrun_resumes_total{failure_class}: attempts started after a failure of that class.
  void resumed(const std::string& failureClass);
  // vto_trainingrun_capacity_failovers_total{namespace,from_location,to_location,accelerator_type,reason}:
  // attempts moved to another placement because the one before had no capacity.
  void capacityFailover(const std::string& ns, const std::string& fromLocation, const std::string& toLocation,
                        const std::string& acceleratorType, const std::string& reason);
  // vto_checkpoint_age_seconds{namespace,name}: how old the newest checkpoint of a running run is.
  void checkpointAge(const std::string& ns, const std::string& name, double seconds);
  // vto_model_versions_registered_total{namespace,model}: model versions TrainingRuns registered.
  void versionRegistered(const std::string& ns, const std::string& model);
  // vto_model_registration_failures_total{namespace,reason}: registration passes that failed
  // (ArtifactMissing, UploadFailed, PermissionDenied, TenantPolicyViolation); each is retried.
  void registrationFailed(const std::string& ns, const std::string& reason);
  // vto_trainingrun_kueue_evictions_total{namespace,reason}: running jobs cancelled because Kueue
  // evicted their run's Workload, by Kueue's reason (Preempted, ClusterQueueStopped, Deactivated, ...;
  // anything else Kueue may add: Other).
  void kueueEviction(const std::string& ns, const std::string& reason);
  // Drops a run's per-run series once it is no longer running.
  void forgetRun(const std::string& ns, const std::string& name);

 private:
  prometheus::Family<prometheus::Counter>& jobsCreated_;
  prometheus::Family<prometheus::Counter>& resumes_;
  prometheus::Family<prometheus::Counter>& failovers_;
  prometheus::Family<prometheus::Gauge>& checkpointAge_;
  prometheus::Family<prometheus::Counter>& versionsRegistered_;
  prometheus::Family<prometheus::Counter>& registrationFailures_;
  prometheus::Family<prometheus::Counter>& kueueEvictions_;
};

}  // namespace vto::metrics
