#include "vertex/json_codec.h"

#include <array>
#include <stdexcept>

#include "base/rfc3339.h"

namespace vto::vertex {
namespace {

constexpr std::array<std::string_view, 12> kJobStateNames = {
    "JOB_STATE_UNSPECIFIED", "JOB_STATE_QUEUED",    "JOB_STATE_PENDING",   "JOB_STATE_RUNNING",
    "JOB_STATE_SUCCEEDED",   "JOB_STATE_FAILED",    "JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED",
    "JOB_STATE_PAUSED",      "JOB_STATE_EXPIRED",   "JOB_STATE_UPDATING",  "JOB_STATE_PARTIALLY_SUCCEEDED",
};

}  // namespace

std::string_view jobStateName(JobState state) {
  auto index = static_cast<std::size_t>(state);
  return index < kJobStateNames.size() ? kJobStateNames[index] : kJobStateNames[0];
}

std::optional<JobState> jobStateFromName(std::string_view name) {
  for (std::size_t i = 0; i < kJobStateNames.size(); ++i) {
    if (kJobStateNames[i] == name) return static_cast<JobState>(i);
  }
  return std::nullopt;
}

JobState jobStateFromJson(const nlohmann::json& value) {
  if (value.is_string()) {
    if (auto state = jobStateFromName(value.get<std::string>())) return *state;
  } else if (value.is_number_integer()) {
    auto number = value.get<std::int64_t>();
    if (number >= 0 && number < static_cast<std::int64_t>(kJobStateNames.size())) {
      return static_cast<JobState>(number);
    }
  }
  // A state added to the API after this build (or garbage): unspecified, which the reconciler treats
  // as "not known yet" and polls again, instead of failing the whole decode.
  return JobState::Unspecified;
}

bool isTerminal(JobState state) {
  switch (state) {
    case JobState::Succeeded:
    case JobState::Failed:
    case JobState::Cancelled:
    case JobState::Expired:
    case JobState::PartiallySucceeded:
      return true;
    default:
      return false;
  }
}

std::map<std::string, std::string> stringMapField(const nlohmann::json& object, const char* field) {
  std::map<std::string, std::string> values;
  if (!object.is_object()) return values;
  auto it = object.find(field);
  if (it == object.end() || !it->is_object()) return values;
  for (const auto& [key, value] : it->items()) {
    if (value.is_string()) values[key] = value.get<std::string>();
  }
  return values;
}

std::int64_t int64FromJson(const nlohmann::json& value) {
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    std::size_t used = 0;
    try {
      auto number = std::stoll(text, &used);
      if (used == text.size()) return number;
    } catch (const std::exception&) {
    }
  }
  throw std::invalid_argument("expected an int64 as a number or a decimal string, got " + value.dump());
}

}  // namespace vto::vertex
