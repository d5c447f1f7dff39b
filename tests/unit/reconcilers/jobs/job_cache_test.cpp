// The job cache's queries that the poller runs every poll.
#include "reconcilers/jobs/job_cache.h"

#include <gtest/gtest.h>

#include "base/rfc3339.h"

namespace vto::reconcilers {
namespace {

const std::string kPrefix = "projects/p/locations/us-central1/customJobs/";
const auto kRead = parseRfc3339("2026-12-07T10:00:00Z");

vertex::Job job(const std::string& id, vertex::JobState state) {
  vertex::Job j;
  j.name = kPrefix + id;
  j.state = state;
  j.updateTime = kRead;
  return j;
}

std::vector<std::string> namesOf(const std::vector<CachedJob>& jobs) {
  std::vector<std::string> names;
  for (const auto& j : jobs) names.push_back(j.name);
  return names;
}

TEST(JobCache, APollOfChangesRereadsOnlyTheUnfinishedJobsRunsAdopted) {
  JobCache cache;  // no ownership: every job is trusted
  cache.put(job("1", vertex::JobState::Running), kRead);
  cache.put(job("2", vertex::JobState::Running), kRead);  // adopted, running
  cache.put(job("3", vertex::JobState::Succeeded), kRead);  // adopted, ended
  cache.put(job("4", vertex::JobState::Running), kRead + std::chrono::seconds(10));  // adopted, read since
  cache.adopt(kPrefix + "2", "uid-2");
  cache.adopt(kPrefix + "3", "uid-3");
  cache.adopt(kPrefix + "4", "uid-4");
  cache.adopt("projects/p/locations/europe-west1/customJobs/9", "uid-9");  // another place, not cached
  auto before = kRead + std::chrono::seconds(5);
  EXPECT_EQ(namesOf(cache.unfinishedAdoptedReadBefore(kPrefix, before)), std::vector<std::string>{kPrefix + "2"});
  EXPECT_EQ(namesOf(cache.unfinishedReadBefore(kPrefix, before)), (std::vector<std::string>{kPrefix + "1", kPrefix + "2"}))
      << "what a full list did not confirm: every unfinished job read before, adopted or not";
  EXPECT_TRUE(cache.unfinishedAdoptedReadBefore("projects/p/locations/asia-east1/customJobs/", before).empty());
}

}  // namespace
}  // namespace vto::reconcilers
