#pragma once
// Vertex has no watch, so vto polls: one list call per project, location and job kind, filtered to
// vto's jobs that changed since the previous poll (labels.managed-by="vto" AND update_time>=T). What
// changed goes into the JobCache and the owning TrainingRun is enqueued, so Vertex reads grow with the
// number of jobs that changed, not with the number of runs.
#include <map>
#include <set>
#include <string>

#include "base/clock.h"
#include "reconcilers/job_cache.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

struct PollTarget {
  vertex::Location where;
  vertex::JobKind kind;
  auto operator<=>(const PollTarget& other) const {
    return std::tie(where.project, where.location, kind) <=> std::tie(other.where.project, other.where.location, other.kind);
  }
};

class JobPoller {
 public:
  JobPoller(vertex::VertexClient& vertex, JobCache& jobs);

  // One round over `targets`; returns the vto-run-uid labels of the jobs that changed. A target's
  // first poll lists all of vto's jobs there; later ones only those updated since the newest update
  // time seen (minus a margin for clock skew between Vertex's servers).
  std::set<std::string> pollOnce(const std::set<PollTarget>& targets);
  // Whether a job seen in the last round is still starting (queued or pending): poll faster then.
  bool anyStarting() const { return anyStarting_; }
  int listCalls() const { return listCalls_; }

 private:
  vertex::VertexClient& vertex_;
  JobCache& jobs_;
  std::map<PollTarget, Clock::time_point> watermark_;  // newest updateTime seen per target
  bool anyStarting_ = false;
  int listCalls_ = 0;
};

}  // namespace vto::reconcilers
