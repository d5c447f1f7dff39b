#pragma once
// The newest state of each Vertex job vto manages, as the poller or a direct GET last read it.
// Vertex has no watch, so this cache stands in for an informer: the reconciler reads jobs from
// here. It keeps per job only what decide() reads (no raw resource): memory stays flat per job.
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "governance/cost.h"
#include "reconcilers/jobs/ownership.h"
#include "vertex/vertex_client.h"

namespace vto::reconcilers {

// Why a Vertex call failed, for a condition on the runs it concerns (decide reports it).
struct VertexFailure {
  int httpStatus = 0;   // 0 for a failure without an HTTP answer
  std::string message;  // names the call and Vertex's error
  bool operator==(const VertexFailure&) const = default;
};

struct CachedJob {
  std::string name;  // projects/P/locations/L/customJobs/ID
  vertex::JobState state = vertex::JobState::Unspecified;
  std::optional<Clock::time_point> createTime, startTime, endTime, updateTime;
  std::optional<vertex::RpcStatus> error;
  std::map<std::string, std::string> labels;
  std::optional<vertex::Trial> bestTrial;
  std::map<std::string, std::string> webAccessUris;
  // A tuning job's trials as (startTime, endTime; nullopt while it runs), what its cost is made of.
  std::vector<std::pair<Clock::time_point, std::optional<Clock::time_point>>> trialSpans;
  Clock::time_point readAt{};  // when vto last read it from Vertex: an old entry is re-read by GET
  bool operator==(const CachedJob&) const;
};

CachedJob cachedJobOf(const vertex::Job& job, Clock::time_point readAt);
// What the cost model (governance::priceJob) needs of a job's times: its span, its trials', and whether it ended.
governance::JobTimes timesOf(const CachedJob& job);

class JobCache {
 public:
  // Told of every change (a new job, a new state or update time) and every erase, after the cache's
  // own lock is released: `job` null when it was erased. Set before any put.
  using Listener = std::function<void(const std::string& name, const CachedJob* job)>;
  void setListener(Listener listener) { listener_ = std::move(listener); }
  // Only jobs this operator made enter the cache (and so count, wake runs, and are followed, read
  // and cancelled): a job `ownership` does not trust is left out, and one that names a run
  // (vto-run-uid) is remembered as an impostor until that run has warned about it. Null: every job
  // is trusted (unit tests). Set before any put.
  void setOwnership(const JobOwnership* ownership) { ownership_ = ownership; }
  const JobOwnership* ownership() const { return ownership_; }
  // Whether `job` would be cached: made by this operator (or nothing checks), or adopted by a run.
  bool trusts(const vertex::Job& job) const;
  // A job started outside vto that run `runUid` took as its own (spec.adoptJob): cached and followed
  // from now on like vto's own. Bounded: past kMaxAdopted the oldest entries are forgotten (their runs
  // adopt them again on their next pass).
  void adopt(const std::string& jobName, const std::string& runUid);
  // The uid of the run that adopted `jobName`; "" when none did.
  std::string adopterOf(const std::string& jobName) const;
  // Told of each new impostor, with the uid of the run it imitates, so that run looks at it.
  using ImpostorListener = std::function<void(const std::string& runUid)>;
  void setImpostorListener(ImpostorListener listener) { impostorListener_ = std::move(listener); }
  // The impostors imitating run `uid` that it has not warned about yet; `reported` marks them told.
  std::vector<std::string> impostorsOf(const std::string& uid) const;
  void impostorsReported(const std::string& uid, const std::vector<std::string>& names);
  // Whether Vertex said job `name` has ended: false while it runs, nullopt when it is not cached.
  std::optional<bool> ended(const std::string& name) const;
  // The job-name prefixes (projects/P/locations/L/customJobs/) that hold unfinished cached jobs: they
  // stay polled until those jobs end, whatever became of their runs (an orphaned job still counts).
  std::vector<std::string> unfinishedPrefixes() const;

  std::optional<CachedJob> get(const std::string& jobName) const;
  // The unfinished jobs made for a run of this namespace and name, whatever its uid: what a run
  // re-created under that name (a GitOps re-apply into a rebuilt cluster, a restore without status)
  // adopts instead of starting a second job. Only places listed since the start are known.
  std::vector<CachedJob> unfinishedNamesakes(const std::string& ns, const std::string& name) const;
  // Stores `job` (one this operator made: else nothing, see setOwnership) as read at `readAt` unless the cache holds a read that started later (a GET that
  // raced with a newer list must not move the job back in time); returns whether it changed (state
  // or update time). A read of the same update still refreshes readAt.
  bool put(const vertex::Job& job, Clock::time_point readAt);
  void erase(const std::string& jobName);
  size_t size() const;
  // Unfinished jobs whose names start with `prefix` (e.g. projects/P/locations/L/customJobs/) that
  // were last read before `before`: what a full list did not confirm, or what no poll reached.
  std::vector<CachedJob> unfinishedReadBefore(const std::string& prefix, Clock::time_point before) const;
  // The same, of only the jobs runs adopted (spec.adoptJob): what a list of changes cannot bring, as
  // it filters on vto's labels. Walks the adopted jobs, not every job: a poll of changes must not
  // copy thousands of jobs only to keep none.
  std::vector<CachedJob> unfinishedAdoptedReadBefore(const std::string& prefix, Clock::time_point before) const;

  // Whether the last poll of the jobs under `prefix` (one poll target) failed, and how: the runs
  // there report it in a condition. Returns whether that changed.
  bool setPollFailure(const std::string& prefix, std::optional<VertexFailure> failure);
  std::optional<VertexFailure> pollFailure(const std::string& prefix) const;
  // Whether the jobs under `prefix` have had a full list since the start (so a job missing here is
  // not just one the poller has not brought yet).
  void markListed(const std::string& prefix);
  bool listed(const std::string& prefix) const;

 private:
  // Keeps unfinishedByPrefix_ as a job goes from unfinished (`before`) to `after`; with mutex_ held.
  void countUnfinished(const CachedJob& job, bool before, bool after);
  // Remembers an untrusted job that imitates a run; returns the run's uid when it is new.
  std::optional<std::string> recordImpostor(const vertex::Job& job);
  Listener listener_;
  ImpostorListener impostorListener_;
  const JobOwnership* ownership_ = nullptr;
  mutable std::mutex mutex_;
  struct Impostor {
    std::string uid;
    bool reported = false;
  };
  std::map<std::string, Impostor> impostors_;  // by job name; bounded
  std::map<std::string, CachedJob> jobs_;
  std::map<std::string, int> unfinishedByPrefix_;  // kept with jobs_, so listing prefixes never walks the jobs
  std::map<std::string, std::set<std::string>> unfinishedByNamesake_;  // "vto-namespace/vto-name" -> job names
  std::map<std::string, VertexFailure> pollFailures_;
  std::set<std::string> listed_;
  std::map<std::string, std::string> adopted_;  // job name -> the uid of the run that adopted it
};

}  // namespace vto::reconcilers
