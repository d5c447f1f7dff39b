#include "crd/placement.h"

#include <algorithm>

#include "base/json_fields.h"
#include "crd/accelerators.h"
#include "crd/strict_json.h"

namespace vto::crd {

using nlohmann::json;

size_t placementCount(const TrainingRunSpec& spec) { return 1 + (spec.capacity ? spec.capacity->fallbacks.size() : 0); }

std::string placementPath(size_t index) {
  return index == 0 ? "spec" : indexPath("spec.capacity.fallbacks", index - 1);
}

TrainingRunSpec specAt(const TrainingRunSpec& spec, size_t index) {
  if (index == 0) return spec;
  if (!spec.capacity || index > spec.capacity->fallbacks.size()) {
    throw DecodeError(placementPath(index), "there is no such fallback");
  }
  const auto& fallback = spec.capacity->fallbacks[index - 1];
  json merged = encodeTrainingRunSpec(spec);
  merged.erase("capacity");  // a placement is one place; it has no fallbacks of its own
  merged.erase("adoptJob");  // the adopted job is placement 0's first attempt, never a fallback's
  if (fallback.location) merged["location"] = *fallback.location;
  if (fallback.resources.is_object()) {
    if (!merged["resources"].is_object()) merged["resources"] = json::object();
    merged["resources"].merge_patch(fallback.resources);
  }
  if (fallback.scheduling.is_object()) {
    auto& scheduling = merged["scheduling"];
    scheduling.merge_patch(fallback.scheduling);
    // Only FlexStart waits: a fallback to another strategy does not inherit the spec's wait.
    if (stringField(scheduling, "strategy") != "FlexStart" && !fallback.scheduling.contains("maxWaitDuration")) {
      scheduling.erase("maxWaitDuration");
    }
  }
  try {
    return decodeTrainingRunSpec(merged, "spec");
  } catch (const DecodeError& e) {
    throw DecodeError(placementPath(index), "merged over the spec, it does not make a valid spec: " + std::string(e.what()));
  }
}

bool anyPlacementWantsAccelerators(const TrainingRunSpec& spec) {
  for (size_t i = 0; i < placementCount(spec); ++i) {
    try {
      if (acceleratorsOf(specAt(spec, i)) > 0) return true;
    } catch (const DecodeError&) {
      return true;
    }
  }
  return false;
}

std::vector<Finding> validatePlacements(const TrainingRunSpec& spec, const std::string& path,
                                        const std::vector<Finding>& own) {
  std::vector<Finding> findings;
  if (!spec.capacity) return findings;
  auto known = [&](const Finding& f) {
    return std::any_of(own.begin(), own.end(), [&](const Finding& o) { return o.path == f.path && o.message == f.message; });
  };
  const auto& fallbacks = spec.capacity->fallbacks;
  for (size_t i = 0; i < fallbacks.size(); ++i) {
    std::string at = indexPath(path + ".capacity.fallbacks", i);
    const auto& fallback = fallbacks[i];
    if (!fallback.location && !fallback.resources.is_object() && !fallback.scheduling.is_object()) {
      findings.push_back({Severity::Error, at, "an empty fallback is the spec itself; give it a location, resources or scheduling, or remove it"});
      continue;
    }
    TrainingRunSpec resolved;
    try {
      resolved = specAt(spec, i + 1);
    } catch (const DecodeError& e) {
      findings.push_back({Severity::Error, at, e.message()});
      continue;
    }
    for (auto& finding : validateTrainingRunSpec(resolved, path)) {
      if (known(finding)) continue;  // the spec's own problem, reported for it
      // "spec.resources.acceleratorType" -> "spec.capacity.fallbacks[1].resources.acceleratorType"
      finding.path = at + finding.path.substr(std::min(finding.path.size(), path.size()));
      findings.push_back(std::move(finding));
    }
  }
  return findings;
}

}  // namespace vto::crd
