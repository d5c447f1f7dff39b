#pragma once
// The newData trigger's poll: lists `gcsPrefix` page by page through the GCS client and streams each
// page into a NewDataScan, so a prefix of any size costs counters and a few hundred names, never the
// whole listing. The listing asks only for the fields the trigger reads and lets the server apply
// matchGlob.
#include <chrono>
#include <optional>

#include "base/clock.h"
#include "crd/retraining_policy.h"
#include "reconcilers/retraining/new_data_trigger.h"
#include "vertex/gcs_client.h"

namespace vto::reconcilers {

// A listing that needs more pages or more time than this fails with a message that says to narrow
// gcsPrefix or matchGlob (kDataOverlapWindow must stay longer than the time cap).
inline constexpr int kDataListMaxPages = 1000;  // 1,000,000 objects at 1,000 a page
inline constexpr std::chrono::seconds kDataListTimeLimit{60};
inline constexpr int kDataListPageSize = 1000;
static_assert(kDataOverlapWindow > kDataListTimeLimit);

// Never throws: a failure is returned as DataPoll::error, which says what to do.
DataPoll pollNewData(vertex::GcsClient& gcs, const crd::NewDataTrigger& trigger,
                     const std::optional<crd::DataWatermark>& status, const DataState& state, const Clock& clock);

}  // namespace vto::reconcilers
