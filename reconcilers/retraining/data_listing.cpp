#include "reconcilers/retraining/data_listing.h"

#include "base/rfc3339.h"
#include "crd/timestamp.h"
#include "governance/tenancy.h"
#include "vertex/api_error.h"

namespace vto::reconcilers {

DataPoll pollNewData(vertex::GcsClient& gcs, const crd::NewDataTrigger& trigger,
                     const std::optional<crd::DataWatermark>& status, const DataState& state, const Clock& clock) {
  const auto started = clock.now();
  DataPoll poll{started, std::nullopt, ""};
  std::optional<DataPosition> watermark;
  if (status && status->timeCreated) watermark = DataPosition{*status->timeCreated, status->name};
  try {
    // A prefix is a directory: gs://shared/team-a lists team-a/, never team-ab/ (the same value the
    // tenancy rules checked).
    auto where = vertex::parseGcsUri(governance::directoryPrefix(trigger.gcsPrefix));
    const std::string what = "listing " + trigger.gcsPrefix;
    NewDataScan scan(!status || !status->lastPollTime, watermark, state);
    vertex::ListObjectsOptions options;
    options.fields = "items(name,generation,timeCreated,size),nextPageToken";
    options.maxResults = kDataListPageSize;
    options.matchGlob = trigger.matchGlob;
    vertex::PageTokenGuard tokens(what);
    std::string pageToken;
    for (int page = 1;; ++page) {
      auto result = gcs.listObjectsPage(where.bucket, where.object, pageToken, options);
      for (const auto& object : result.objects) {
        Clock::time_point created;
        try {
          created = parseRfc3339(object.timeCreated);
        } catch (const std::exception&) {
          continue;  // an object without a creation time cannot be ordered; GCS always sends one
        }
        scan.add(DataObject{object.name, object.generation, created, object.size});
      }
      if (result.nextPageToken.empty()) break;
      if (page >= kDataListMaxPages || clock.now() - started > kDataListTimeLimit) {
        poll.error = trigger.gcsPrefix + " holds more than " + std::to_string(page) +
                     " pages of objects, more than one poll may list; narrow gcsPrefix or matchGlob";
        return poll;
      }
      tokens.next(result.nextPageToken);
      pageToken = result.nextPageToken;
    }
    poll.scan = std::move(scan);
  } catch (const vertex::ApiError& e) {
    poll.error = "listing " + trigger.gcsPrefix + " failed (HTTP " + std::to_string(e.httpStatus()) + " " + e.status() +
                 "): " + e.message() + (e.httpStatus() == 403 ? "; give the operator's service account storage.objects.list on the bucket" : "");
  } catch (const std::exception& e) {
    poll.error = "listing " + trigger.gcsPrefix + " failed: " + e.what();
  }
  return poll;
}

}  // namespace vto::reconcilers
