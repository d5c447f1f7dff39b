#pragma once
// Where vto polls Vertex: a (project, location, job kind) that holds jobs of unfinished runs. Where a
// job runs is read from its name (projects/P/locations/L/customJobs/ID), never recomputed from the
// spec: the spec says where the *next* job goes, and a job stays where it was created.
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/gcp_names.h"
#include "controller/object_key.h"
#include "crd/training_run.h"
#include "vertex/job_kind.h"

namespace vto::reconcilers {

struct PollTarget {
  Location where;
  vertex::JobKind kind = vertex::JobKind::Custom;
  auto operator<=>(const PollTarget& other) const = default;
  // projects/P/locations/L/customJobs/: the prefix of every job name in it.
  std::string jobPrefix() const;
};

// The target of the job named `jobName`; nullopt when it is not a job name (status is writable by
// others, so a name from status is parsed, never trusted).
std::optional<PollTarget> pollTargetOfJob(const std::string& jobName);

// Whether `jobName`, read from status (which others can write), names a job where the run's own spec
// puts its jobs: a Vertex job of the spec's kind, in the run's project (spec.project, immutable, or
// `defaults`) at one of its placements' locations. A name that fails this steers no call.
// Vertex may write the project's number instead of its ID into the names it returns: such a name
// fails here and is only trusted where vto observed the job with this run's vto-run-uid label.
bool isInTheRunsPlace(const crd::TrainingRunSpec& spec, const Location& defaults, const std::string& jobName);

// The job a run follows now: its newest attempt's, when status records one and the run has not
// finished ("" otherwise). An Invalid run's job is followed too: it may still run on Vertex.
std::string followedJobOf(const crd::TrainingRunStatus& status);

// Which poll targets the unfinished TrainingRuns' jobs are in, kept up to date from informer events
// (each event decodes that one run), so that a poll never walks or decodes the whole fleet.
class PollTargets {
 public:
  // `defaults`: where a run that names no project or location puts its jobs (isInTheRunsPlace).
  explicit PollTargets(Location defaults = {}) : defaults_(std::move(defaults)) {}
  // The run as the informer now holds it, decoded (null: gone, or it does not decode). A job that is
  // not where the run puts its jobs is not polled (a name in Vertex's project-number form is: only
  // its label can tell, and the reconciler checks it). Returns whether that made a new target (no run
  // was polled there before): the caller polls it at once instead of at the next refresh.
  bool update(const controller::ObjectKey& key, const crd::TrainingRun* decoded);
  // Targets by key (their job-name prefix).
  std::map<std::string, PollTarget> current() const;
  // The runs whose job (or first job) is at `prefix`: woken when it is first listed after a start.
  std::vector<controller::ObjectKey> runsAt(const std::string& prefix) const;

 private:
  Location defaults_;
  mutable std::mutex mutex_;
  std::map<controller::ObjectKey, PollTarget> byRun_;
  std::map<PollTarget, int> runs_;  // unfinished runs per target
};

}  // namespace vto::reconcilers
