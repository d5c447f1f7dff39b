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
};

// How a running job can be made to fail, the way Vertex reports each.
enum class FailureClass { Preemption, Stockout, UserError, InternalError };
// Throws ApiError(400) naming the accepted values.
FailureClass parseFailureClass(const std::string& name);

struct CheckpointWrite {
  std::string bucket;
  std::string object;
  std::string content;
  std::string jobName;  // the job whose training code writes it
  int step = 0;
};

struct ListResult {
  nlohmann::json jobs = nlohmann::json::array();
  std::string nextPageToken;
};

class JobStore {
 public:
  JobStore(const Clock& clock, SimulationSettings settings);

  // `resource` is validated and canonical; returns it with the output-only fields set.
  nlohmann::json create(const vto::Location& where, vertex::JobKind kind, nlohmann::json resource);
  nlohmann::json get(const std::string& name) const;
  // `readMask`: the fields each job keeps (paths of lowerCamelCase names); empty: every field.
  ListResult list(const vto::Location& where, vertex::JobKind kind, const std::string& filter, int pageSize,
                  const std::string& pageToken, const std::vector<std::vector<std::string>>& readMask = {}) const;
  void cancel(const std::string& name);
  nlohmann::json remove(const std::string& name);  // the delete Operation
  nlohmann::json operation(const std::string& name) const;
  void fail(const std::string& name, FailureClass failure);
  // The training code of `name` crashed at `step` (e.g. it could not write a checkpoint): the job
  // fails as Vertex reports a replica exiting non-zero, with `reason` appended. A job that the same
  // tick already finished as Succeeded never got past that step, so it fails too.
  void crash(const std::string& name, int step, const std::string& reason);
  nlohmann::json trace(const std::string& name) const;
  // How many jobs are in each state ({"JOB_STATE_RUNNING": 12, ...}): lets a bench tell the
  // emulator's own lag (a slow tick) from an operator's.
  nlohmann::json countByState() const;

  // Moves every job to clock.now(); returns the checkpoints written by steps that completed.
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
  };
  struct PendingDelete {
    nlohmann::json operation;
    std::string jobName;
  };

  Job& find(const std::string& name);
  const Job& find(const std::string& name) const;
  void setState(Job& job, vertex::JobState state, Clock::time_point at);
  void finish(Job& job, vertex::JobState state, Clock::time_point at, std::optional<std::pair<int, std::string>> error);
  void advanceCustom(Job& job, Clock::time_point now, std::vector<CheckpointWrite>& writes);
  void advanceTuning(Job& job, Clock::time_point now);

  const Clock& clock_;
  SimulationSettings settings_;
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
