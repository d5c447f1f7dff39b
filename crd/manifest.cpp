#include "crd/manifest.h"

#include "crd/retraining_policy.h"
#include "crd/strict_json.h"
#include "crd/training_run.h"
#include "crd/yaml_json.h"

namespace vto::crd {

std::string ManifestDocument::kind() const {
  auto it = object.find("kind");
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string ManifestDocument::name() const {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  auto name = meta->find("name");
  return name != meta->end() && name->is_string() ? name->get<std::string>() : "";
}

std::string ManifestDocument::label() const {
  std::string k = kind(), n = name();
  std::string out = "document " + std::to_string(number);
  if (!k.empty() || !n.empty()) out += " (" + (k.empty() ? "?" : k) + "/" + (n.empty() ? "?" : n) + ")";
  return out;
}

std::vector<ManifestDocument> parseManifests(const std::string& text) {
  std::vector<ManifestDocument> out;
  for (auto& object : parseYamlDocuments(text)) out.push_back({out.size() + 1, std::move(object)});
  return out;
}

std::vector<Finding> lintDocument(const ManifestDocument& document) {
  try {
    if (!document.object.is_object()) return {{Severity::Error, "(document)", "must be a Kubernetes object with apiVersion, kind, metadata and spec"}};
    std::vector<Finding> findings;
    std::string kind = document.kind();
    if (kind == kTrainingRunKind) findings = validate(decodeTrainingRun(document.object));
    else if (kind == kRetrainingPolicyKind) findings = validate(decodeRetrainingPolicy(document.object));
    else return {{Severity::Error, "kind", "\"" + kind + "\" is not a vto kind; use TrainingRun or RetrainingPolicy"}};
    if (document.name().empty())
      findings.insert(findings.begin(), {Severity::Error, "metadata.name", "required: the object's name"});
    return findings;
  } catch (const DecodeError& e) {
    return {{Severity::Error, e.path(), e.message()}};
  }
}

}  // namespace vto::crd
