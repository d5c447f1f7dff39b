#pragma once
// The newData trigger's pure logic (rule 7 of docs/retraining.md). A poll streams a prefix's listing
// through a NewDataScan, which keeps counts and a bounded set of the newest objects, never the whole
// listing; decideNewData turns the scan and the carried state into a firing, or none.
//
// An object is new when (timeCreated, name) is past the watermark. `updated` is never read: any
// metadata edit moves it. GCS lists lexicographically, so an object created while a listing runs can
// be missed by it although a newer one is listed; the objects of the last kDataOverlapWindow before
// the watermark are remembered by (name, generation), and an unremembered one there is new.
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "crd/retraining_policy.h"

namespace vto::reconcilers {

// Longer than a listing may take (kDataListTimeLimit) so an object created during one is covered.
inline constexpr std::chrono::seconds kDataOverlapWindow{120};
// The most objects remembered in the overlap window; beyond it the window shrinks to the newest.
inline constexpr size_t kDataOverlapMaxObjects = 200;
// The most bytes of object names remembered (they live in an annotation, limited to 256 KiB in all).
inline constexpr size_t kDataOverlapMaxNameBytes = 32 * 1024;

// One listed object, as the trigger needs it.
struct DataObject {
  std::string name;
  std::string generation;
  Clock::time_point timeCreated;
  int64_t size = 0;
};

// A place in the (timeCreated, name) order.
struct DataPosition {
  Clock::time_point timeCreated;
  std::string name;
  auto operator<=>(const DataPosition&) const = default;
};

// What the trigger carries between polls besides status.dataWatermark (the annotation
// vto.dev/data-state): the overlap window and when the pending set last grew.
struct DataState {
  std::optional<DataPosition> watermark;  // the position `remembered` belongs to
  // Objects created after `overlapSince` and at or before the watermark that are in `remembered`
  // were already seen; others created in that interval are new.
  std::optional<Clock::time_point> overlapSince;
  std::set<std::pair<std::string, std::string>> remembered;  // (name, generation)
  // The operator's clock when a poll last found more pending data than the poll before (quietPeriod
  // counts from here, so GCS's clock and the operator's never need to agree).
  std::optional<Clock::time_point> lastGrowth;
  std::string pollError;  // the last poll's failure, "" when it worked (TriggersHealthy)
  bool operator==(const DataState&) const = default;
};
std::optional<DataState> parseDataState(const std::string& text);  // nullopt when unreadable
std::string formatDataState(const DataState& state);

// Streams one listing. Memory: counters, the newest positions, and at most kDataOverlapMaxObjects
// objects.
class NewDataScan {
 public:
  // `firstPoll`: nothing is pending (the watermark becomes the newest object). Else `watermark`
  // nullopt means the prefix was empty so far: every object is new. `state` counts only when its
  // watermark is `watermark` (after a restart from a run's annotations it may not be).
  NewDataScan(bool firstPoll, std::optional<DataPosition> watermark, const DataState& state);
  void add(const DataObject& object);

  int64_t listed() const { return listed_; }
  int64_t pendingObjects() const { return pendingObjects_; }
  int64_t pendingBytes() const { return pendingBytes_; }
  const std::optional<DataPosition>& newestListed() const { return newestListed_; }
  const std::optional<DataPosition>& newestPending() const { return newestPending_; }
  // The state after folding everything listed up to `watermark`: the objects listed in the
  // kDataOverlapWindow before it are remembered.
  DataState stateAfter(const DataPosition& watermark, std::optional<Clock::time_point> lastGrowth) const;

 private:
  bool isNew(const DataObject& object) const;

  bool firstPoll_;
  std::optional<DataPosition> watermark_;
  std::optional<Clock::time_point> overlapSince_;
  std::set<std::pair<std::string, std::string>> remembered_;
  int64_t listed_ = 0;
  int64_t pendingObjects_ = 0;
  int64_t pendingBytes_ = 0;
  std::optional<DataPosition> newestListed_;
  std::optional<DataPosition> newestPending_;
  // The newest listed objects, oldest first by timeCreated, at most kDataOverlapMaxObjects.
  std::set<std::tuple<Clock::time_point, std::string, std::string>> newest_;
  std::optional<Clock::time_point> newestDropped_;  // the newest time that fell out of newest_
};

// What one poll found: a finished scan, or why there is none.
struct DataPoll {
  Clock::time_point at;
  std::optional<NewDataScan> scan;
  std::string error;  // set when scan is empty
};

struct NewDataDecision {
  crd::DataWatermark status;  // the new status.dataWatermark
  DataState state;
  // Set when the pending data should start a run now (concurrency and cooldown permitting): the
  // newest included object, which names the run and becomes the watermark once the run exists.
  std::optional<DataPosition> fire;
  std::optional<std::string> pollError;  // the poll failed: TriggersHealthy=False, DataPollFailed
  Clock::time_point nextPoll;            // when the next poll is due
};

// When a poll is due, from what status says (the first poll is due at once).
Clock::time_point nextDataPoll(const crd::NewDataTrigger& trigger, const std::optional<crd::DataWatermark>& status,
                               const DataState& state, Clock::time_point now);

// Pure. `poll` nullopt: no poll this pass; status and state are kept. The watermark and pending
// counts change only on a poll; a firing leaves the watermark where it is (the caller moves it with
// afterFiring once the run is planned).
NewDataDecision decideNewData(const crd::NewDataTrigger& trigger, const std::optional<crd::DataWatermark>& status,
                              const DataState& state, const std::optional<DataPoll>& poll, Clock::time_point now);

// Moves the watermark past everything the firing folded in.
void afterFiring(NewDataDecision& decision, const DataPoll& poll);

}  // namespace vto::reconcilers
