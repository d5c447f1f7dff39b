#pragma once
// Vertex has no watch, so vto polls, per poll target (project, location, job kind), what a
// controller::PollingSource schedules:
// - a changes list: vto's jobs (labels.managed-by="vto") updated since the newest update time seen,
//   less a margin: Vertex reads grow with the jobs that changed, not with the runs;
// - every fullListInterval, a full (paged) list of vto's unfinished jobs, and a direct GET of every
//   cached unfinished job that list did not confirm. Update times are not a reliable order (a list
//   is only eventually consistent; an update can be stamped behind the watermark), so the changes
//   list alone can miss an update for good; the full list is the level-based repair.
// What changed goes into the JobCache and the owning run is woken through `wake` (by its uid). A
// target whose list fails is recorded in the JobCache (its runs show it in a condition) and backed
// off by the PollingSource alone: other targets go on.
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "reconcilers/jobs/job_cache.h"
#include "reconcilers/jobs/poll_targets.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

struct JobPollerOptions {
  Clock::duration interval = std::chrono::seconds(30);     // --vertex-poll-interval
  Clock::duration fastInterval = std::chrono::seconds(5);  // while a job there is queued or pending
  Clock::duration fullListInterval = std::chrono::minutes(2);
  int pageSize = 500;
};

// Whether a job in `state` has yet to run (queued or pending): its target is polled every fastInterval.
bool isStarting(vertex::JobState state);

class JobPoller {
 public:
  // Told of a job that changed (its name and labels): the run that follows it looks again.
  using Wake = std::function<void(const std::string& jobName, const std::map<std::string, std::string>& jobLabels)>;
  JobPoller(vertex::VertexClient& vertex, JobCache& jobs, const Clock& clock, Wake wake, JobPollerOptions options = {});

  // One poll of `target`; returns how long until its next one. Throws when Vertex fails (after
  // recording the failure for the target's runs), so that the PollingSource backs it off.
  Clock::duration poll(const PollTarget& target);
  int listCalls() const;
  int getCalls() const;

 private:
  struct TargetState {
    Clock::time_point watermark{};  // newest updateTime seen
    Clock::time_point lastFullList{};
    std::set<std::string> starting;  // jobs last seen queued or pending
  };
  void see(const vertex::Job& job, Clock::time_point now, TargetState& state);
  void wakeAll(const std::string& prefix);  // every run with an unfinished cached job under prefix

  vertex::VertexClient& vertex_;
  JobCache& jobs_;
  const Clock& clock_;
  Wake wake_;
  JobPollerOptions options_;
  mutable std::mutex mutex_;
  std::map<PollTarget, TargetState> states_;
  int listCalls_ = 0, getCalls_ = 0;
};

}  // namespace vto::reconcilers
