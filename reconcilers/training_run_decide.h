#pragma once
// The TrainingRun reconciler's decisions as one pure function: decide(Observed) -> Plan.
//
//   observe (reads only: the run from the informer cache, its job from the JobCache or Vertex, the
//            newest checkpoint when it is needed, the clock)
//   -> decide (this header: no I/O, no clock, no randomness; tested as tables)
//   -> act    (the Plan's actions in a fixed order, one status write, the Events)
//
// Status is computed from what was observed plus the attempt history, the only thing carried from
// pass to pass (Vertex cannot tell it cheaply). Every later reconciler follows this shape.
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "controller/event.h"
#include "crd/render.h"
#include "crd/training_run.h"
#include "reconcilers/checkpoints.h"
#include "reconcilers/job_cache.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

inline constexpr const char* kFinalizer = "vto.dev/finalizer";

// The condition types of a TrainingRun, in the order status lists them.
enum class ConditionType { Valid, Ready, Submitted, Running, Succeeded, Failed };
const char* conditionTypeName(ConditionType type);

// Every condition reason vto writes (condition.reason is one of these names).
enum class Reason {
  SpecValid, SpecInvalid, JobCreated, JobRejected, JobSubmitted, JobQueued, JobRunning, JobSucceeded,
  JobFailed, JobCancelling, JobCancelled, JobNotFound, NotFinished, NoFailure, Resuming,
  ResumeBudgetExhausted, Suspended, VertexError,
};
const char* reasonName(Reason reason);

struct Observed {
  Clock::time_point now{};
  crd::ObjectMeta metadata;           // always decoded
  std::optional<crd::TrainingRun> run;  // nullopt: the object does not decode (decodeError says why)
  std::string decodeError;
  crd::TrainingRunStatus status;      // as stored; {} when it does not decode
  bool statusStored = false;          // the object has a status at all
  bool hasFinalizer = false;
  crd::Placement defaults;            // --default-project / --default-location
  // The current attempt's job: from the JobCache, a GET, or adopted by its labels when status does
  // not name it yet (a crash between create and the status write).
  std::optional<CachedJob> job;
  // The job status names is gone from Vertex (404): deleted outside vto.
  bool jobNotFound = false;
  // The job is not cached yet and its poll target's first full list (just after a start) will bring
  // it: look again shortly instead of reading it now (a cold start costs lists, not a GET per run).
  bool awaitingFirstPoll = false;
  // Vertex refused to create this attempt's job (4xx other than 429): decide fails the run.
  std::optional<VertexFailure> createRejected;
  // Polling this run's project/location fails (or a direct read of its job did): a condition, not a stall.
  std::optional<VertexFailure> vertexUnavailable;
  // The newest checkpoint, when observe looked (checkpointListed); a listing error is listed=false.
  std::optional<Checkpoint> checkpoint;
  bool checkpointListed = false;
  // When the next checkpoint look is allowed for this run (rate and interval); requeue then.
  std::optional<Clock::time_point> nextCheckpointAt;
};

// Whether observe must list checkpoints for decide: a resume or unsuspend creates an attempt from
// the newest one, and a job that just ended leaves its final one. (The periodic look while a job
// runs is asked of the CheckpointSchedule separately.)
bool checkpointRequired(const Observed& observed);

struct CreateJob {
  int attempt = 0;
  std::string resumeFrom;  // "" = from scratch
  vertex::Location where;
  vertex::JobKind kind = vertex::JobKind::Custom;
};

struct Plan {
  bool addFinalizer = false;
  std::optional<std::string> cancelJob;  // job name
  std::optional<CreateJob> createJob;    // act writes the job name to status at once (the journal)
  // The status to write; nullopt when it equals what is stored (no write).
  std::optional<crd::TrainingRunStatus> status;
  std::vector<controller::Event> events;
  bool removeFinalizer = false;
  bool deleteRun = false;  // ttlSecondsAfterFinished has passed
  Clock::duration requeueAfter = Clock::duration::zero();
  // Nothing retrying can fix until the object changes (controller::TerminalError).
  std::optional<std::string> terminal;
  // A read decide needed failed (the checkpoint listing for a resume): nothing is done, the pass is
  // retried with backoff. Never guessed: a resume from the wrong checkpoint loses work.
  std::optional<std::string> retry;
  // For metrics: a resume was decided (its failure class), the run finished.
  std::optional<std::string> resumedAfter;
  bool finished = false;
};

struct DecideOptions {
  Clock::duration resyncPeriod = std::chrono::minutes(5);
  Clock::duration cancelPollPeriod = std::chrono::seconds(2);
  Clock::duration firstPollWait = std::chrono::seconds(5);
};

Plan decide(const Observed& observed, const DecideOptions& options = {});

// After act created the job `plan.createJob` asked for (or found it already there: `adopted`, after a
// crash between create and the status write): the status with the job's name and state, which act
// writes at once (the journal that makes creation exactly once), and the JobCreated Event (the only
// Event of a submission: the job's first state is not announced separately).
Plan recordCreatedJob(const Observed& observed, Plan plan, const CachedJob& job, bool adopted);

// Where a run's jobs live and are polled; nullopt without a project or location.
struct PollTarget {
  vertex::Location where;
  vertex::JobKind kind = vertex::JobKind::Custom;
  auto operator<=>(const PollTarget& other) const {
    return std::tie(where.project, where.location, kind) <=> std::tie(other.where.project, other.where.location, other.kind);
  }
  bool operator==(const PollTarget& other) const { return (*this <=> other) == 0; }
  // projects/P/locations/L/customJobs/: the prefix of every job name in it.
  std::string jobPrefix() const;
};
std::optional<PollTarget> pollTargetOf(const crd::TrainingRunSpec& spec, const crd::Placement& defaults);
// Succeeded, Failed or Cancelled: nothing left to follow (Invalid waits for an edit, not for Vertex).
bool isFinishedPhase(std::optional<crd::Phase> phase);

// https://console.cloud.google.com/vertex-ai/locations/L/training/ID/cpu?project=P for a job name.
std::string consoleUrl(const std::string& jobName);

}  // namespace vto::reconcilers
