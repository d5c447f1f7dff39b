#include "crd/api_server_checks.h"

#include <set>
#include <string>

#include "crd/embedded.h"
#include "crd/strict_json.h"
#include "crd/yaml_json.h"

namespace vto::crd {
namespace {

using nlohmann::json;

// The openAPIV3Schema of each kind's served version, read once from the compiled-in CRDs.
const json& schemaOf(const std::string& kind) {
  static const json schemas = [] {
    json out = json::object();
    for (auto text : {embedded::trainingRunCrdYaml, embedded::retrainingPolicyCrdYaml}) {
      auto crd = parseYamlDocuments(std::string(text)).at(0);
      out[crd["spec"]["names"]["kind"].get<std::string>()] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    }
    return out;
  }();
  static const json none;
  return schemas.contains(kind) ? schemas[kind] : none;
}

// The API server counts characters (code points), not bytes.
size_t characters(const std::string& text) {
  size_t count = 0;
  for (unsigned char c : text) count += (c & 0xC0) != 0x80;
  return count;
}

void walk(const json& value, const json& schema, const std::string& path, std::vector<Finding>& out) {
  if (!schema.is_object()) return;
  auto limit = [&](const char* key) -> std::optional<size_t> {
    if (auto it = schema.find(key); it != schema.end() && it->is_number_unsigned()) return it->get<size_t>();
    return std::nullopt;
  };
  if (value.is_string()) {
    if (auto max = limit("maxLength"); max && characters(value.get<std::string>()) > *max) {
      out.push_back({Severity::Error, path,
                     "is " + std::to_string(characters(value.get<std::string>())) +
                         " characters long; the API server refuses more than " + std::to_string(*max) +
                         " (maxLength in the CRD): shorten it"});
    }
  } else if (value.is_array()) {
    if (auto max = limit("maxItems"); max && value.size() > *max) {
      out.push_back({Severity::Error, path,
                     "has " + std::to_string(value.size()) + " items; the API server refuses more than " +
                         std::to_string(*max) + " (maxItems in the CRD): remove some"});
    }
    if (auto items = schema.find("items"); items != schema.end()) {
      for (size_t i = 0; i < value.size(); ++i) walk(value[i], *items, indexPath(path, i), out);
    }
  } else if (value.is_object()) {
    if (auto max = limit("maxProperties"); max && value.size() > *max) {
      out.push_back({Severity::Error, path,
                     "has " + std::to_string(value.size()) + " entries; the API server refuses more than " +
                         std::to_string(*max) + " (maxProperties in the CRD): remove some"});
    }
    auto properties = schema.find("properties");
    auto additional = schema.find("additionalProperties");
    for (const auto& [key, item] : value.items()) {
      if (properties != schema.end() && properties->contains(key)) {
        walk(item, (*properties)[key], joinPath(path, key), out);
      } else if (additional != schema.end() && additional->is_object()) {
        walk(item, *additional, joinPath(path, key), out);
      }
    }
  }
}

// metav1.ObjectMeta's fields: anything else is refused by strict field validation.
const std::set<std::string>& objectMetaFields() {
  static const std::set<std::string> fields = {
      "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
      "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
      "ownerReferences", "finalizers", "managedFields"};
  return fields;
}

}  // namespace

std::vector<Finding> apiServerFindings(const json& object) {
  std::vector<Finding> out;
  if (!object.is_object() || !object.contains("kind") || !object["kind"].is_string()) return out;
  const json& schema = schemaOf(object["kind"].get<std::string>());
  if (schema.is_null()) return out;
  if (auto metadata = object.find("metadata"); metadata != object.end() && metadata->is_object()) {
    for (const auto& [key, value] : metadata->items()) {
      if (!objectMetaFields().count(key)) {
        out.push_back({Severity::Error, "metadata." + key,
                       "unknown field; the API server refuses it (metadata has name, namespace, labels, "
                       "annotations, ...): check the spelling or move it under labels or annotations"});
      }
    }
  }
  walk(object, schema, "", out);
  return out;
}

}  // namespace vto::crd
