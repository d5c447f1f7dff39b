#include "metrics/trainingrun_metrics.h"

#include <set>

namespace vto::metrics {

TrainingRunMetrics::TrainingRunMetrics(prometheus::Registry& registry)
    : jobsCreated_(prometheus::BuildCounter()
                       .Name("vto_trainingrun_jobs_created_total")
                       .Help("Vertex AI jobs created for TrainingRuns, by job kind")
                       .Register(registry)),
      resumes_(prometheus::BuildCounter()
                   .Name("vto_trainingrun_resumes_total")
                   .Help("TrainingRun attempts resumed from a checkpoint, by the failure class of the attempt before")
                   .Register(registry)),
      failovers_(prometheus::BuildCounter()
                     .Name("vto_trainingrun_capacity_failovers_total")
                     .Help("TrainingRun attempts moved to another placement because Vertex had no capacity where the "
                           "attempt before ran, by region pair, accelerator and reason")
                     .Register(registry)),
      checkpointAge_(prometheus::BuildGauge()
                         .Name("vto_checkpoint_age_seconds")
                         .Help("Age of the newest checkpoint of each running TrainingRun")
                         .Register(registry)),
      versionsRegistered_(prometheus::BuildCounter()
                              .Name("vto_model_versions_registered_total")
                              .Help("Model Registry versions registered by succeeded TrainingRuns, by model")
                              .Register(registry)),
      registrationFailures_(prometheus::BuildCounter()
                                .Name("vto_model_registration_failures_total")
                                .Help("Failed attempts to register a succeeded TrainingRun's model, by reason (each is retried)")
                                .Register(registry)),
      kueueEvictions_(prometheus::BuildCounter()
                          .Name("vto_trainingrun_kueue_evictions_total")
                          .Help("Running TrainingRun jobs cancelled because Kueue evicted the run's Workload, by "
                                "Kueue's reason")
                          .Register(registry)) {}

void TrainingRunMetrics::kueueEviction(const std::string& ns, const std::string& reason) {
  // Kueue v0.17.0's reasons (a Deactivated one may carry a cause); a label value from an object stays bounded.
  static const std::set<std::string> known = {
      "Preempted", "PodsReadyTimeout", "AdmissionCheck", "ClusterQueueStopped", "LocalQueueStopped", "NodeFailures",
      "Deactivated", "DeactivatedDueToRequeuingLimitExceeded", "DeactivatedDueToMaximumExecutionTimeExceeded",
      "DeactivatedDueToAdmissionCheck", "EvictedOnManagerCluster", "WorkloadSliceReplaced"};
  kueueEvictions_.Add({{"namespace", ns}, {"reason", known.contains(reason) ? reason : "Other"}}).Increment();
}

void TrainingRunMetrics::versionRegistered(const std::string& ns, const std::string& model) {
  versionsRegistered_.Add({{"namespace", ns}, {"model", model}}).Increment();
}

void TrainingRunMetrics::registrationFailed(const std::string& ns, const std::string& reason) {
  registrationFailures_.Add({{"namespace", ns}, {"reason", reason}}).Increment();
}

void TrainingRunMetrics::jobCreated(const std::string& kind) { jobsCreated_.Add({{"kind", kind}}).Increment(); }

void TrainingRunMetrics::resumed(const std::string& failureClass) {
  resumes_.Add({{"failure_class", failureClass}}).Increment();
}

void TrainingRunMetrics::capacityFailover(const std::string& ns, const std::string& fromLocation,
                                          const std::string& toLocation, const std::string& acceleratorType,
                                          const std::string& reason) {
  failovers_
      .Add({{"namespace", ns}, {"from_location", fromLocation}, {"to_location", toLocation},
            {"accelerator_type", acceleratorType}, {"reason", reason}})
      .Increment();
}

void TrainingRunMetrics::checkpointAge(const std::string& ns, const std::string& name, double seconds) {
  checkpointAge_.Add({{"namespace", ns}, {"name", name}}).Set(seconds);
}

void TrainingRunMetrics::forgetRun(const std::string& ns, const std::string& name) {
  auto& gauge = checkpointAge_.Add({{"namespace", ns}, {"name", name}});
  checkpointAge_.Remove(&gauge);
}

}  // namespace vto::metrics
