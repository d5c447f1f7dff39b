#include "metrics/trainingrun_metrics.h"

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
                         .Register(registry)) {}

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
