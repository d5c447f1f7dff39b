#pragma once
// Manifests arrive as YAML (one or many documents) or JSON; everything downstream works on JSON.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vto::crd {

// Parses every YAML document in `text` (JSON is YAML too) and converts it to JSON. Plain scalars get
// the YAML 1.2 core types (null, true/false, integers, floats); quoted scalars stay strings. Empty
// documents are skipped. Throws std::runtime_error with the line number on a syntax error.
std::vector<nlohmann::json> parseYamlDocuments(const std::string& text);

}  // namespace vto::crd
