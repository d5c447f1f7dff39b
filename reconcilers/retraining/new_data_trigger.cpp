#include "reconcilers/retraining/new_data_trigger.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "base/json_fields.h"
#include "base/rfc3339.h"
#include "crd/timestamp.h"

namespace vto::reconcilers {

using nlohmann::json;
using TimePoint = Clock::time_point;

namespace {

bool thresholdsMet(const crd::NewDataTrigger& trigger, int64_t objects, int64_t bytes) {
  return objects >= std::max<int64_t>(1, trigger.minNewObjects) && bytes >= trigger.minNewBytes;
}

}  // namespace

std::optional<DataState> parseDataState(const std::string& text) {
  auto value = json::parse(text, nullptr, false);
  if (!value.is_object()) return std::nullopt;
  DataState state;
  if (auto time = timeField(value, "watermarkTime")) {
    state.watermark = DataPosition{*time, stringField(value, "watermarkName")};
  }
  state.overlapSince = timeField(value, "overlapSince");
  state.lastGrowth = timeField(value, "lastGrowth");
  if (value.contains("pollError") && value["pollError"].is_string()) state.pollError = value["pollError"];
  for (const auto& entry : value.value("remembered", json::array())) {
    if (entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_string() &&
        state.remembered.size() < kDataOverlapMaxObjects) {
      state.remembered.emplace(entry[0].get<std::string>(), entry[1].get<std::string>());
    }
  }
  return state;
}

std::string formatDataState(const DataState& state) {
  json value = json::object();
  if (state.watermark) {
    value["watermarkTime"] = rfc3339Exact(state.watermark->timeCreated);
    value["watermarkName"] = state.watermark->name;
  }
  if (state.overlapSince) value["overlapSince"] = rfc3339Exact(*state.overlapSince);
  if (state.lastGrowth) value["lastGrowth"] = rfc3339Exact(*state.lastGrowth);
  if (!state.pollError.empty()) value["pollError"] = state.pollError;
  json remembered = json::array();
  for (const auto& [name, generation] : state.remembered) remembered.push_back({name, generation});
  value["remembered"] = remembered;
  return value.dump();
}

NewDataScan::NewDataScan(bool firstPoll, std::optional<DataPosition> watermark, const DataState& state)
    : firstPoll_(firstPoll), watermark_(std::move(watermark)) {
  if (state.watermark == watermark_ && watermark_) {
    overlapSince_ = state.overlapSince;
    remembered_ = state.remembered;
  }
}

bool NewDataScan::isNew(const DataObject& object) const {
  if (firstPoll_) return false;
  if (!watermark_) return true;
  if (DataPosition{object.timeCreated, object.name} > *watermark_) return true;
  // Created just before the watermark yet not seen when it was set: a listing missed it.
  return overlapSince_ && object.timeCreated > *overlapSince_ &&
         !remembered_.count({object.name, object.generation});
}

void NewDataScan::add(const DataObject& object) {
  ++listed_;
  DataPosition position{object.timeCreated, object.name};
  if (!newestListed_ || position > *newestListed_) newestListed_ = position;
  if (isNew(object)) {
    ++pendingObjects_;
    pendingBytes_ += std::max<int64_t>(0, object.size);
    if (!newestPending_ || position > *newestPending_) newestPending_ = position;
  }
  newest_.emplace(object.timeCreated, object.name, object.generation);
  if (newest_.size() > kDataOverlapMaxObjects) {
    newestDropped_ = std::max(newestDropped_.value_or(TimePoint::min()), std::get<0>(*newest_.begin()));
    newest_.erase(newest_.begin());
  }
}

DataState NewDataScan::stateAfter(const DataPosition& watermark, std::optional<TimePoint> lastGrowth) const {
  DataState state;
  state.watermark = watermark;
  state.lastGrowth = lastGrowth;
  TimePoint since = watermark.timeCreated - kDataOverlapWindow;
  if (newestDropped_) since = std::max(since, *newestDropped_);
  std::vector<std::tuple<TimePoint, std::string, std::string>> kept;
  for (const auto& entry : newest_) {
    const auto& [time, name, generation] = entry;
    if (time > since && DataPosition{time, name} <= watermark) kept.push_back(entry);
  }
  // Newest first until the names fill their budget; what does not fit moves the window's start.
  std::sort(kept.begin(), kept.end(), std::greater<>());
  size_t bytes = 0;
  for (const auto& [time, name, generation] : kept) {
    bytes += name.size() + generation.size();
    if (bytes > kDataOverlapMaxNameBytes) {
      since = std::max(since, time);
      break;
    }
  }
  for (const auto& [time, name, generation] : kept) {
    if (time > since) state.remembered.emplace(name, generation);
  }
  state.overlapSince = since;
  return state;
}

TimePoint nextDataPoll(const crd::NewDataTrigger& trigger, const std::optional<crd::DataWatermark>& status,
                       const DataState& state, TimePoint now) {
  if (!status || !status->lastPollTime) return now;
  TimePoint next = *status->lastPollTime + std::max<Clock::duration>(trigger.pollInterval, std::chrono::seconds(1));
  // Enough data waits only for the quiet period: look again as soon as it may have passed.
  if (thresholdsMet(trigger, status->pendingObjects, status->pendingBytes) && state.lastGrowth) {
    TimePoint quiet = *state.lastGrowth + trigger.quietPeriod;
    if (quiet > *status->lastPollTime) next = std::min(next, quiet);
  }
  return next;
}

NewDataDecision decideNewData(const crd::NewDataTrigger& trigger, const std::optional<crd::DataWatermark>& status,
                              const DataState& state, const std::optional<DataPoll>& poll, TimePoint now) {
  NewDataDecision decision;
  decision.status = status.value_or(crd::DataWatermark{});
  decision.state = state;
  if (poll) {
    auto& out = decision.status;
    out.lastPollTime = poll->at;
    if (!poll->scan) {
      decision.pollError = poll->error;
    } else {
      const auto& scan = *poll->scan;
      bool first = !status || !status->lastPollTime;
      if (first) {
        // Data that was there before the policy never fires.
        out.pendingObjects = 0;
        out.pendingBytes = 0;
        if (scan.newestListed()) {
          out.timeCreated = scan.newestListed()->timeCreated;
          out.name = scan.newestListed()->name;
          decision.state = scan.stateAfter(*scan.newestListed(), std::nullopt);
        } else {
          decision.state = DataState{};
        }
      } else {
        bool changed = scan.pendingObjects() != out.pendingObjects || scan.pendingBytes() != out.pendingBytes;
        out.pendingObjects = scan.pendingObjects();
        out.pendingBytes = scan.pendingBytes();
        if (out.pendingObjects == 0) {
          decision.state.lastGrowth.reset();
        } else if (changed || !decision.state.lastGrowth) {
          decision.state.lastGrowth = poll->at;
        }
        bool quiet = trigger.quietPeriod.count() <= 0 || now - *decision.state.lastGrowth >= trigger.quietPeriod;
        if (out.pendingObjects > 0 && thresholdsMet(trigger, out.pendingObjects, out.pendingBytes) && quiet) {
          decision.fire = scan.newestPending();
        }
      }
    }
  }
  decision.nextPoll = nextDataPoll(trigger, decision.status, decision.state, now);
  return decision;
}

void afterFiring(NewDataDecision& decision, const DataPoll& poll) {
  if (!decision.fire || !poll.scan) return;
  auto& out = decision.status;
  DataPosition watermark = *decision.fire;
  if (out.timeCreated && DataPosition{*out.timeCreated, out.name} > watermark) {
    watermark = {*out.timeCreated, out.name};  // an object the overlap window found is older
  }
  out.timeCreated = watermark.timeCreated;
  out.name = watermark.name;
  out.pendingObjects = 0;
  out.pendingBytes = 0;
  decision.state = poll.scan->stateAfter(watermark, std::nullopt);
}

}  // namespace vto::reconcilers
