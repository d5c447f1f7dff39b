#include "reconcilers/job_poller.h"

#include "crd/render.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {

namespace {
// Vertex's update times come from many servers; re-reading a few seconds of overlap costs little
// and never misses a change stamped slightly in the past.
constexpr auto kSkewMargin = std::chrono::seconds(5);
}  // namespace

JobPoller::JobPoller(vertex::VertexClient& vertex, JobCache& jobs) : vertex_(vertex), jobs_(jobs) {}

std::set<std::string> JobPoller::pollOnce(const std::set<PollTarget>& targets) {
  std::set<std::string> changed;
  bool starting = false;
  for (const auto& target : targets) {
    std::string filter = std::string("labels.") + crd::kManagedByLabel + "=\"" + crd::kManagedByValue + "\"";
    auto mark = watermark_.find(target);
    if (mark != watermark_.end()) {
      filter += " AND update_time>=\"" + vertex::formatTimestamp(mark->second - kSkewMargin) + "\"";
    }
    Clock::time_point newest = mark != watermark_.end() ? mark->second : Clock::time_point{};
    vertex::ListOptions options;
    options.filter = filter;
    options.pageSize = 500;
    do {
      auto page = vertex_.listJobs(target.where, target.kind, options);
      ++listCalls_;
      for (const auto& job : page.jobs) {
        if (job.updateTime && *job.updateTime > newest) newest = *job.updateTime;
        if (job.state == vertex::JobState::Queued || job.state == vertex::JobState::Pending) starting = true;
        if (!jobs_.put(job)) continue;
        auto uid = job.labels.find(crd::kRunUidLabel);
        if (uid != job.labels.end()) changed.insert(uid->second);
      }
      options.pageToken = page.nextPageToken;
    } while (!options.pageToken.empty());
    if (newest != Clock::time_point{}) watermark_[target] = newest;
  }
  anyStarting_ = starting;
  return changed;
}

}  // namespace vto::reconcilers
