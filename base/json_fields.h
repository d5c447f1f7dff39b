#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/rfc3339.h"

namespace vto {

// Manifests, tenancy files, status and server responses are read without trusting their types:
// `kind: null` must be a finding, not an exception thrown through a parser.

// The string at `field`, or "" when `object` is not an object or the field is absent or not a string.
inline std::string stringField(const nlohmann::json& object, const char* field) {
  if (!object.is_object()) return "";
  auto it = object.find(field);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The string at metadata.`field` (name, namespace, uid...), or "" as stringField.
inline std::string metadataField(const nlohmann::json& object, const char* field) {
  if (!object.is_object()) return "";
  auto metadata = object.find("metadata");
  return metadata == object.end() ? "" : stringField(*metadata, field);
}

// The RFC 3339 time at `field`, or nullopt when it is absent, not a string or malformed (a bad time is
// as good as none: the rest of the document still decodes).
inline std::optional<Clock::time_point> timeField(const nlohmann::json& object, const char* field) {
  return parseRfc3339OrNone(stringField(object, field));
}

}  // namespace vto
