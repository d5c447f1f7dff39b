#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vto {

// The string at `field`, or "" when `object` is not an object or the field is absent or not a string.
// Manifests, tenancy files and server responses are read without trusting their types: `kind: null`
// must be a finding, not an exception thrown through a parser.
inline std::string stringField(const nlohmann::json& object, const char* field) {
  if (!object.is_object()) return "";
  auto it = object.find(field);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace vto
