#pragma once
// Decoding the proto3 JSON that Vertex (and the official clients) produce: enums arrive as names or
// numbers, int64 as strings or numbers, timestamps as RFC 3339 with any offset.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/json_fields.h"

namespace vto::vertex {

// google.cloud.aiplatform.v1.JobState, numbered as in job_state.proto.
enum class JobState {
  Unspecified = 0,
  Queued = 1,
  Pending = 2,
  Running = 3,
  Succeeded = 4,
  Failed = 5,
  Cancelling = 6,
  Cancelled = 7,
  Paused = 8,
  Expired = 9,
  Updating = 10,
  PartiallySucceeded = 11,
};

std::string_view jobStateName(JobState state);
std::optional<JobState> jobStateFromName(std::string_view name);
// Accepts "JOB_STATE_RUNNING" or 3; anything else (a state newer than this build) is Unspecified.
JobState jobStateFromJson(const nlohmann::json& value);
// SUCCEEDED, FAILED, CANCELLED, EXPIRED and PARTIALLY_SUCCEEDED: the job will not change again.
bool isTerminal(JobState state);

// The string values of the object at `field` (labels, webAccessUris); entries of another type are
// left out, and so is a `field` that is not an object.
std::map<std::string, std::string> stringMapField(const nlohmann::json& object, const char* field);

// Accepts "42" or 42; throws std::invalid_argument otherwise.
std::int64_t int64FromJson(const nlohmann::json& value);

}  // namespace vto::vertex
