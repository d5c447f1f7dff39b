#pragma once
// The emulator's jobs and their simulated lifecycle. Time comes only from the Clock: advance()
// moves every job to clock.now(), so unit tests move a fake clock and the binary calls it from a
// ticker. Errors are thrown as vertex::ApiError, exactly what the HTTP layer answers.
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "vertex/vertex_client.h"

namespace vto::emulator {

struct SimulationSettings {
  std::chrono::milliseconds queueTime{2000};  // QUEUED for the first half, PENDING for the second
  int steps = 5;                              // training steps per job (per trial for tuning jobs)
  std::chrono::milliseconds stepTime{1000};
  std::chrono::milliseconds cancelTime{500};  // CANCELLING -> CANCELLED
  bool modelArtifacts = true;  // a CustomJob that succeeds writes model files (model_artifacts.h)
  // A job placed where there is no capacity (mode fail) waits this long PENDING past its queue time
  // before it fails with the stockout error: Vertex tries to provision before it gives up.
  std::chrono::milliseconds stockoutWait{30000};
};

// How a running job can be made to fail, the way Vertex reports each.
// SpotStockout: a preempted Spot job as Google documents it may end, once Compute Engine gave up
// restarting its VMs: FAILED with the STOCKOUT error (code 8), after it ran.
enum class FailureClass { Preemption, Stockout, UserError, InternalError, SpotStockout };
// Throws ApiError(400) naming the accepted values.
FailureClass parseFailureClass(const std::string& name);

// An object the training code of a job writes to Cloud Storage: a checkpoint after each step, or one
// of the model files when it has run its last step.
struct CheckpointWrite {
  std::string bucket;
  std::string object;
  std::string content;
  std::string jobName;  // the job whose training code writes it
  int step = 0;
  bool modelFile = false;  // written before the job's checkpoints still waiting (Emulator's writers)
  // The last model file: once written (or given up on), the job becomes SUCCEEDED (artifactsWritten).
  bool completesJob = false;
};

// The project and location of a name the emulator gave (projects/P/locations/L/...). Unlike
// vertex::locationOf, which checks untrusted names strictly, it takes any project and location that a
// request path brought in.
vto::Location locationIn(const std::string& resourceName);

// Whether a job that has waited its queue time may start (capacity.h decides).
enum class StartDecision { Start, Fail, Hold };

// Something that happened to a job, for the parts of the emulator that follow the lifecycle (its
// logs, the accelerators it holds).
struct JobEvent {
  enum class Kind { Started, Step, TrialStarted, TrialStep, TrialEnded, Ended };
  JobEvent(Kind kind, const nlohmann::json& job, vertex::JobKind jobKind, Clock::time_point at)
      : kind(kind), job(job), jobKind(jobKind), at(at) {}
  Kind kind;
  const nlohmann::json& job;  // the job's resource, already in its new state
  vertex::JobKind jobKind;
  Clock::time_point at;
  int step = 0;        // Step, TrialStep: the step just completed; Started: the first step it will run
  int steps = 0;       // the steps of a job (of a trial for tuning jobs)
  int trial = 0;       // Trial*: the trial's id (1, 2, ...)
  // Ended: false when a job that had ended ends again (its checkpoint write failed after it succeeded).
  bool firstEnd = true;
  std::optional<FailureClass> failure;  // Ended by the control API's :fail
  std::string crash;                    // Ended because the training code crashed: why
  // Ended by :fail with "log": the entries the training code wrote last (at ERROR), instead of the
  // traceback a failure writes by default.
  std::vector<std::string> output;
};

// The emulator's other parts that the lifecycle consults and informs. Called with the store's lock
// held: implementations must not call back into the JobStore.
class LifecycleHooks {
 public:
  virtual ~LifecycleHooks() = default;
  // The job has waited its queue time; called again on later ticks while it answers Hold.
  virtual StartDecision beforeStart(const nlohmann::json& job, vertex::JobKind kind) = 0;
  // A job created over an accelerator quota, QUEUED until this admits it (its accelerators then count).
  virtual bool admit(const nlohmann::json& job, vertex::JobKind kind) = 0;
  virtual void onEvent(const JobEvent& event) = 0;
};

struct ListResult {
  nlohmann::json jobs = nlohmann::json::array();
  std::string nextPageToken;
};

class JobStore {
 public:
  // hooks may be null (no capacity limits, nothing follows the lifecycle).
  JobStore(const Clock& clock, SimulationSettings settings, LifecycleHooks* hooks = nullptr);

  // `resource` is validated and canonical; returns it with the output-only fields set. `overQuota`:
  // its accelerator quota is spent, so it stays QUEUED until LifecycleHooks::admit lets it in.
  nlohmann::json create(const vto::Location& where, vertex::JobKind kind, nlohmann::json resource,
                        bool overQuota = false);
  nlohmann::json get(const std::string& name) const;
  // `readMask`: the fields each job keeps (paths of lowerCamelCase names); empty: every field.
  ListResult list(const vto::Location& where, vertex::JobKind kind, const std::string& filter, int pageSize,
                  const std::string& pageToken, const std::vector<std::vector<std::string>>& readMask = {}) const;
  void cancel(const std::string& name);
  nlohmann::json remove(const std::string& name);  // the delete Operation
  nlohmann::json operation(const std::string& name) const;
  // `output`: what the failing code wrote last, one log entry each (none: the default traceback).
  void fail(const std::string& name, FailureClass failure, std::vector<std::string> output = {});
  // The training code of `name` crashed at `step` (e.g. it could not write a checkpoint; 0: at the
  // first step it ran): the job fails as Vertex reports a replica exiting non-zero, with `reason`
  // appended. A job that the same tick already finished as Succeeded never got past that step, so it
  // fails too.
  void crash(const std::string& name, int step, const std::string& reason);
  // The model files of a job that ran its last step are written (or could not be, for a reason other
  // than a missing bucket): it becomes SUCCEEDED, at the time its last step ended.
  void artifactsWritten(const std::string& name);
  nlohmann::json trace(const std::string& name) const;
  // How many jobs are in each state ({"JOB_STATE_RUNNING": 12, ...}): lets a bench tell the
  // emulator's own lag (a slow tick) from an operator's.
  nlohmann::json countByState() const;

  // Moves every job to clock.now(); returns the checkpoints written by steps that completed and the
  // model files of jobs that ran their last step.
  std::vector<CheckpointWrite> advance();

 private:
  struct Job {
    vertex::JobKind kind = vertex::JobKind::Custom;
    nlohmann::json resource;
    Clock::time_point created;
    int nextStep = 1;
    Clock::time_point nextStepAt;
    std::vector<int> stepsRun;
    std::string resumedFrom;
    std::optional<Clock::time_point> cancelRequested;
    std::string checkpointBucket, checkpointPrefix;  // empty: no baseOutputDirectory
    bool held = false;  // PENDING past its queue time: no capacity, mode hold
    bool overQuota = false;  // QUEUED until its accelerator quota admits it (LifecycleHooks::admit)
    // Ran its last step at succeededAt; SUCCEEDED once its model files are written.
    std::optional<Clock::time_point> succeededAt;
    Clock::time_point advancedTo;  // tuning jobs: the time of the previous advance, to log each trial step once
  };
  struct PendingDelete {
    nlohmann::json operation;
    std::string jobName;
  };

  Job& find(const std::string& name);
  const Job& find(const std::string& name) const;
  void setState(Job& job, vertex::JobState state, Clock::time_point at);
  // `failure` and `crash` say why a job failed, for its logs.
  void finish(Job& job, vertex::JobState state, Clock::time_point at, std::optional<std::pair<int, std::string>> error,
              std::optional<FailureClass> failure = std::nullopt, const std::string& crash = "",
              std::vector<std::string> output = {});
  void start(Job& job, Clock::time_point at);
  void advanceCustom(Job& job, Clock::time_point now, std::vector<CheckpointWrite>& writes);
  void advanceTuning(Job& job, Clock::time_point now);
  void notify(const Job& job, JobEvent::Kind kind, Clock::time_point at, int step = 0, int trial = 0);

  const Clock& clock_;
  SimulationSettings settings_;
  LifecycleHooks* hooks_;
  mutable std::mutex mutex_;
  std::map<std::string, Job> jobs_;  // by name
  std::vector<std::string> order_;   // names in creation order, for stable paging
  // Names in creation order by label (labelKey): a list filtered by a label (vto's exactly-once
  // check before every create) reads its candidates here, not every job under the one lock.
  std::map<std::string, std::vector<std::string>> byLabel_;
  std::map<std::string, PendingDelete> operations_;
  long long nextId_ = 1;
};

}  // namespace vto::emulator
