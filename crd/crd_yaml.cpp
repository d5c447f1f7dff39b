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

std::string withCatalogRules(const std::string& crdYaml, const MachineCatalog& catalog) {
  size_t begin = crdYaml.find(kCatalogRulesBegin);
  size_t end = crdYaml.find(kCatalogRulesEnd, begin == std::string::npos ? 0 : begin);
  if (begin == std::string::npos || end == std::string::npos)
    throw std::runtime_error(std::string("the CRD has no '") + kCatalogRulesBegin + "' ... '" + kCatalogRulesEnd +
                             "' block under spec.resources.x-kubernetes-validations; add the two comment lines there");
  size_t lineStart = crdYaml.rfind('\n', begin);
  lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
  const std::string indent = crdYaml.substr(lineStart, begin - lineStart);
  size_t afterBeginLine = crdYaml.find('\n', begin) + 1;
  // JSON strings are YAML double-quoted scalars: CEL's quotes and backslashes survive unchanged.
  auto quoted = [](const std::string& text) { return nlohmann::json(text).dump(); };
  std::string block;
  for (const auto& r : catalog.celRules()) {
    block += indent + "- rule: " + quoted(r.rule) + "\n";
    block += indent + "  messageExpression: " + quoted(r.messageExpression) + "\n";
    block += indent + "  fieldPath: " + quoted(r.fieldPath) + "\n";
  }
  return crdYaml.substr(0, afterBeginLine) + block + indent + crdYaml.substr(end);
}

}  // namespace vto::crd
