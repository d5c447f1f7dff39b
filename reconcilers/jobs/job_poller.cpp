#include "reconcilers/jobs/job_poller.h"

#include "base/rfc3339.h"
#include "crd/render.h"
#include "vertex/api_error.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {

namespace {
// Vertex's update times come from many servers; re-reading a few seconds of overlap costs little.
constexpr auto kSkewMargin = std::chrono::seconds(5);

std::string managedFilter() { return std::string("labels.") + crd::kManagedByLabel + "=\"" + crd::kManagedByValue + "\""; }

// vto's jobs that have not ended: the full list.
std::string unfinishedFilter() {
  std::string filter = managedFilter();
  for (auto state : {vertex::JobState::Succeeded, vertex::JobState::PartiallySucceeded, vertex::JobState::Failed,
                     vertex::JobState::Cancelled, vertex::JobState::Expired}) {
    filter += " AND state!=\"" + std::string(vertex::jobStateName(state)) + "\"";
  }
  return filter;
}
}  // namespace

JobPoller::JobPoller(vertex::VertexClient& vertex, JobCache& jobs, const Clock& clock, Wake wake, JobPollerOptions options)
    : vertex_(vertex), jobs_(jobs), clock_(clock), wake_(std::move(wake)), options_(options) {}

bool isStarting(vertex::JobState state) { return state == vertex::JobState::Queued || state == vertex::JobState::Pending; }

void JobPoller::see(const vertex::Job& job, Clock::time_point now, TargetState& state) {
  // A job this operator did not make moves nothing here (its update time could hold the watermark
  // ahead, a pending one the fast polls on): the cache only remembers it as an impostor.
  if (!jobs_.trusts(job)) {
    jobs_.put(job, now);
    return;
  }
  if (job.updateTime && *job.updateTime > state.watermark) state.watermark = *job.updateTime;
  if (isStarting(job.state)) {
    state.starting.insert(job.name);
  } else {
    state.starting.erase(job.name);
  }
  if (jobs_.put(job, now)) {
    wake_(job.name, job.labels);
  }
}

void JobPoller::wakeAll(const std::string& prefix) {
  for (const auto& job : jobs_.unfinishedReadBefore(prefix, Clock::time_point::max())) {
    wake_(job.name, job.labels);
  }
}

Clock::duration JobPoller::poll(const PollTarget& target) {
  auto now = clock_.now();
  auto prefix = target.jobPrefix();
  TargetState state;
  {
    std::lock_guard lock(mutex_);
    state = states_[target];
  }
  // Until a job of this target has been seen there is no Vertex time to list changes from: vto's own
  // clock may be minutes off Vertex's, so list the unfinished jobs instead (few, while none is known).
  bool full = state.watermark == Clock::time_point{} || now - state.lastFullList >= options_.fullListInterval;
  try {
    vertex::ListOptions options;
    options.pageSize = options_.pageSize;
    options.readMask = vertex::decodedJobFields(target.kind);  // what the job cache keeps, not the specs
    if (full) {
      options.filter = unfinishedFilter();
      state.starting.clear();  // rebuilt from the truth
    } else {
      auto since = state.watermark - kSkewMargin;
      options.filter = managedFilter() + " AND update_time>=\"" + rfc3339Millis(since) + "\"";
    }
    do {
      auto page = vertex_.listJobs(target.where, target.kind, options);
      {
        std::lock_guard lock(mutex_);
        ++listCalls_;
      }
      for (const auto& job : page.jobs) see(job, now, state);
      options.pageToken = page.nextPageToken;
    } while (!options.pageToken.empty());
    // Cached as unfinished but not in the full list: it ended (or went) in an update the changes list
    // missed. Read each one directly; and at every poll the jobs runs adopted (spec.adoptJob), which
    // carry none of vto's labels that the lists filter on.
    auto stales = full ? jobs_.unfinishedReadBefore(prefix, now) : jobs_.unfinishedAdoptedReadBefore(prefix, now);
    for (const auto& stale : stales) {
      {
        std::lock_guard lock(mutex_);
        ++getCalls_;
      }
      try {
        see(vertex_.getJob(stale.name), now, state);
      } catch (const vertex::ApiError& e) {
        if (!e.isNotFound()) throw;
        jobs_.erase(stale.name);  // deleted outside vto: the run's own GET finds out and says so
        state.starting.erase(stale.name);
        wake_(stale.name, stale.labels);
      }
    }
    if (full) {
      state.lastFullList = now;
      jobs_.markListed(prefix);
    }
  } catch (const std::exception& e) {
    int status = 0;
    if (const auto* api = dynamic_cast<const vertex::ApiError*>(&e)) status = api->httpStatus();
    VertexFailure failure{status, "polling Vertex AI jobs in " + target.where.parent() + ": " + e.what()};
    if (jobs_.setPollFailure(prefix, failure)) wakeAll(prefix);
    std::lock_guard lock(mutex_);
    states_[target].starting = state.starting;
    throw;
  }
  if (jobs_.setPollFailure(prefix, std::nullopt)) wakeAll(prefix);
  std::lock_guard lock(mutex_);
  states_[target] = state;
  return state.starting.empty() ? options_.interval : options_.fastInterval;
}

int JobPoller::listCalls() const {
  std::lock_guard lock(mutex_);
  return listCalls_;
}

int JobPoller::getCalls() const {
  std::lock_guard lock(mutex_);
  return getCalls_;
}

}  // namespace vto::reconcilers
