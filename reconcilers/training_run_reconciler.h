#pragma once
// The TrainingRun reconciler: one TrainingRun becomes one Vertex job per attempt, created exactly once
// whatever crashes, followed to the end, cancelled on deletion or suspension, and reported back as
// status, conditions and Events. Level-based: each pass starts from the cached object and what Vertex
// says now; only the attempt history (which Vertex cannot tell us cheaply) is carried in status.
#include <string>

#include "base/clock.h"
#include "controller/event_recorder.h"
#include "controller/kube_client.h"
#include "controller/object_cache.h"
#include "controller/reconciler.h"
#include "crd/render.h"
#include "crd/training_run.h"
#include "metrics/trainingrun_metrics.h"
#include "reconcilers/checkpoints.h"
#include "reconcilers/job_cache.h"
#include "vertex/gcs_client.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

inline constexpr const char* kFinalizer = "vto.dev/finalizer";

// The TrainingRun collection on the API server.
const controller::Resource& trainingRunResource();

struct TrainingRunReconcilerOptions {
  crd::Placement defaults;  // project/location for runs that name none (--default-project/-location)
  // Safety net between the JobPoller's notifications; the poller normally wakes a run much sooner.
  Clock::duration resyncPeriod = std::chrono::minutes(5);
  // How soon to look again while a job is being cancelled.
  Clock::duration cancelPollPeriod = std::chrono::seconds(2);
  // How often a running run's newest checkpoint is looked up (status.lastCheckpoint, checkpoint age).
  Clock::duration checkpointPollPeriod = std::chrono::seconds(60);
};

class TrainingRunReconciler final : public controller::Reconciler {
 public:
  // `metrics` may be null.
  TrainingRunReconciler(const controller::ObjectCache& runs, controller::KubeClient& kube,
                        vertex::VertexClient& vertex, vertex::GcsClient& gcs, JobCache& jobs,
                        controller::EventRecorder& events, const Clock& clock, TrainingRunReconcilerOptions options,
                        metrics::TrainingRunMetrics* metrics = nullptr);

  controller::Result reconcile(const controller::ObjectKey& key) override;

 private:
  struct Pass;
  controller::Result finalize(Pass& pass);
  controller::Result markInvalid(Pass& pass, const std::string& message);
  controller::Result suspend(Pass& pass);
  controller::Result finished(Pass& pass);
  void ensureFinalizer(Pass& pass);
  // The current attempt's job: known from status, else found by its labels (adopted), else none.
  std::optional<vertex::Job> findJob(Pass& pass);
  vertex::Job createJob(Pass& pass);
  std::optional<vertex::Job> observe(const std::string& jobName);
  void cancel(const std::string& jobName);
  void applyJobState(Pass& pass, const vertex::Job& job);
  // After a FAILED/EXPIRED attempt: fail the run, wait out the resume backoff (a Result), or start the
  // next attempt from the latest checkpoint (the new job is returned through `job`).
  std::optional<controller::Result> afterFailure(Pass& pass, vertex::Job& job);
  // The next attempt, resuming from the newest checkpoint (or from scratch when there is none).
  vertex::Job startNextAttempt(Pass& pass, const std::string& why);
  std::optional<Checkpoint> newestCheckpoint(const Pass& pass);
  void refreshCheckpoint(Pass& pass);
  void writeStatus(Pass& pass);
  void transitionEvent(Pass& pass);

  const controller::ObjectCache& runs_;
  controller::KubeClient& kube_;
  vertex::VertexClient& vertex_;
  vertex::GcsClient& gcs_;
  JobCache& jobs_;
  controller::EventRecorder& events_;
  const Clock& clock_;
  TrainingRunReconcilerOptions options_;
  metrics::TrainingRunMetrics* metrics_;
};

// https://console.cloud.google.com/vertex-ai/locations/L/training/ID/cpu?project=P for a job name.
std::string consoleUrl(const std::string& jobName);

}  // namespace vto::reconcilers
