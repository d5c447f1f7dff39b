#include "crd/crd_yaml.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "crd/embedded.h"

namespace vto::crd {

std::string trainingRunCrdYaml() { return std::string(embedded::trainingRunCrdYaml); }

std::string customResourceDefinitionsYaml() {
  std::string out(embedded::trainingRunCrdYaml);
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "---\n";
  out += embedded::retrainingPolicyCrdYaml;
  return out;
}

namespace {
// `crdYaml` with the block between `beginMarker` and `endMarker` replaced by `rules`, indented like
// the BEGIN marker.
std::string withRulesBlockAt(const std::string& crdYaml, size_t from, const std::string& beginMarker,
                             const std::string& endMarker, const std::vector<CelRule>& rules, size_t& next) {
  size_t begin = crdYaml.find(beginMarker, from);
  size_t end = crdYaml.find(endMarker, begin == std::string::npos ? 0 : begin);
  if (begin == std::string::npos || end == std::string::npos)
    throw std::runtime_error("the CRD has no '" + beginMarker + "' ... '" + endMarker +
                             "' block in an x-kubernetes-validations list; add the two comment lines there");
  size_t lineStart = crdYaml.rfind('\n', begin);
  lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
  const std::string indent = crdYaml.substr(lineStart, begin - lineStart);
  size_t afterBeginLine = crdYaml.find('\n', begin) + 1;
  // JSON strings are YAML double-quoted scalars: CEL's quotes and backslashes survive unchanged.
  auto quoted = [](const std::string& text) { return nlohmann::json(text).dump(); };
  std::string block;
  for (const auto& r : rules) {
    block += indent + "- rule: " + quoted(r.rule) + "\n";
    block += indent + "  messageExpression: " + quoted(r.messageExpression) + "\n";
    block += indent + "  fieldPath: " + quoted(r.fieldPath) + "\n";
  }
  next = afterBeginLine + block.size() + indent.size() + endMarker.size();
  return crdYaml.substr(0, afterBeginLine) + block + indent + crdYaml.substr(end);
}

// The same in every block: each served version of the CRD has its own copy of the schema.
std::string withRulesBlock(const std::string& crdYaml, const std::string& beginMarker, const std::string& endMarker,
                           const std::vector<CelRule>& rules) {
  size_t next = 0;
  auto out = withRulesBlockAt(crdYaml, 0, beginMarker, endMarker, rules, next);
  while (out.find(beginMarker, next) != std::string::npos) out = withRulesBlockAt(out, next, beginMarker, endMarker, rules, next);
  return out;
}
}  // namespace

std::string withCatalogRules(const std::string& crdYaml, const MachineCatalog& catalog) {
  auto onResources = withRulesBlock(crdYaml, kCatalogRulesBegin, kCatalogRulesEnd, catalog.celRules());
  return withRulesBlock(onResources, kFallbackCatalogRulesBegin, kFallbackCatalogRulesEnd, catalog.fallbackCelRules());
}

}  // namespace vto::crd
