#include "reconcilers/tenancy/job_spend.h"

#include <cstdio>
#include <exception>
#include <stdexcept>

#include "reconcilers/jobs/job_cache.h"
#include "vertex/gcs_client.h"
#include "vertex/json_codec.h"

namespace vto::reconcilers {

std::string labelIs(const char* key, const std::string& value) {
  return std::string("labels.") + key + "=\"" + value + "\"";
}

std::string hasLabel(const char* key) { return std::string("labels.") + key + ":*"; }

std::string createdInMonth(const std::string& month, bool bounded) {
  int year = 0, number = 0;
  char tail = 0;
  if (month.size() != 7 || std::sscanf(month.c_str(), "%4d-%2d%c", &year, &number, &tail) != 2 || number < 1 ||
      number > 12 || year < 1970)
    throw std::invalid_argument("\"" + month.substr(0, 16) + "\" is not a month (YYYY-MM, e.g. 2026-12)");
  std::string filter = "create_time>=\"" + month + "-01T00:00:00Z\"";
  if (bounded) {
    char next[32];
    std::snprintf(next, sizeof next, "%04d-%02d-01T00:00:00Z", number == 12 ? year + 1 : year, number == 12 ? 1 : number + 1);
    filter += std::string(" AND create_time<\"") + next + "\"";
  }
  return filter;
}

std::string unfinished() {
  std::string filter;
  for (auto state : {vertex::JobState::Succeeded, vertex::JobState::Failed, vertex::JobState::Cancelled,
                     vertex::JobState::Expired, vertex::JobState::PartiallySucceeded})
    filter += std::string(filter.empty() ? "" : " AND ") + "state!=\"" + std::string(vertex::jobStateName(state)) + "\"";
  return filter;
}

governance::JobPricing costOfJob(const vertex::Job& job, const governance::PriceCatalog& prices, Clock::time_point now) {
  std::string location;
  try {
    location = vertex::locationOf(job.name).location;
  } catch (const std::exception& e) {
    return {std::nullopt, std::string("a location (") + e.what() + ")"};
  }
  return governance::priceJob(prices, governance::shapeOfJob(job.raw, location), timesOf(cachedJobOf(job, now)), now);
}

void readJobSpend(vertex::VertexClient& vertex, const Location& place, vertex::JobKind kind, const std::string& filter,
                  const JobOwnership* ownership, const governance::PriceCatalog& prices, Clock::time_point now,
                  const std::function<void(const vertex::Job& job, const governance::JobPricing& pricing)>& each) {
  vertex::ListOptions options;
  options.filter = filter;
  options.pageSize = 100;
  vertex::PageTokenGuard tokens("listing " + std::string(vertex::collectionName(kind)) + " of " + place.parent());
  do {
    auto page = vertex.listJobs(place, kind, options);
    for (const auto& job : page.jobs) {
      if (ownership != nullptr && !ownership->trusts(job.labels, job.createTime)) continue;
      each(job, costOfJob(job, prices, now));
    }
    if (!page.nextPageToken.empty()) tokens.next(page.nextPageToken);  // a token sent twice would loop forever
    options.pageToken = page.nextPageToken;
  } while (!options.pageToken.empty());
}

}  // namespace vto::reconcilers
