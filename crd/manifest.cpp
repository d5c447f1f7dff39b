#include "crd/manifest.h"

#include <algorithm>
#include <cctype>

#include "base/json_fields.h"
#include "crd/retraining_policy.h"
#include "crd/strict_json.h"
#include "crd/training_run.h"
#include "crd/yaml_json.h"

namespace vto::crd {

std::string ManifestDocument::kind() const { return stringField(object, "kind"); }

std::string ManifestDocument::name() const { return metadataField(object, "name"); }

std::string ManifestDocument::label() const {
  std::string k = kind(), n = name();
  std::string out = "document " + std::to_string(number);
  if (!k.empty() || !n.empty()) out += " (" + (k.empty() ? "?" : k) + "/" + (n.empty() ? "?" : n) + ")";
  return out;
}

std::vector<ManifestDocument> parseManifests(const std::string& text) {
  std::vector<ManifestDocument> out;
  for (auto& object : parseYamlDocuments(text)) {
    // What `kubectl get -o yaml` prints: a List whose items are the objects, linted one by one.
    bool list = stringField(object, "kind") == "List" && stringField(object, "apiVersion") == "v1" &&
                object.contains("items") && object["items"].is_array();
    if (!list) {
      out.push_back({out.size() + 1, std::move(object)});
      continue;
    }
    for (auto& item : object["items"]) out.push_back({out.size() + 1, std::move(item)});
  }
  return out;
}

namespace {

// Whether `path` is `parent` or lies under it ("spec.a" is under "spec", "spec.ab" is not).
bool isUnder(const std::string& path, const std::string& parent) {
  if (path.rfind(parent, 0) != 0) return false;
  return path.size() == parent.size() || path[parent.size()] == '.' || path[parent.size()] == '[';
}

// Path order as the API server lists field errors: segment by segment, list indices as numbers
// ("spec.args[2]" before "spec.args[10]").
bool pathBefore(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    bool digitA = std::isdigit(static_cast<unsigned char>(a[i])), digitB = std::isdigit(static_cast<unsigned char>(b[j]));
    if (digitA && digitB && i > 0 && j > 0 && a[i - 1] == '[' && b[j - 1] == '[') {
      size_t endA = a.find_first_not_of("0123456789", i), endB = b.find_first_not_of("0123456789", j);
      std::string na = a.substr(i, endA - i), nb = b.substr(j, endB - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = endA == std::string::npos ? a.size() : endA;
      j = endB == std::string::npos ? b.size() : endB;
      continue;
    }
    // A separator sorts before any name character, so "spec.a.b" comes before "spec.ab".
    auto rank = [](char c) { return c == '.' || c == '[' ? 0 : static_cast<unsigned char>(c) + 1; };
    if (a[i] != b[j]) return rank(a[i]) < rank(b[j]);
    ++i, ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

std::vector<Finding> lintDocument(const ManifestDocument& document) {
  if (!document.object.is_object()) return {{Severity::Error, "(document)", "must be a Kubernetes object with apiVersion, kind, metadata and spec"}};
  std::string kind = document.kind();
  if (kind != kTrainingRunKind && kind != kRetrainingPolicyKind)
    return {{Severity::Error, "kind", "\"" + kind + "\" is not a vto kind; use TrainingRun or RetrainingPolicy"}};
  // Decode in collect mode, then validate what decoded: every problem in one pass, as `kubectl apply`
  // reports them. A rule about a field that failed to decode would only repeat that error, so it is dropped.
  DecodeErrorCollector collector;
  std::vector<Finding> semantic;
  bool specDecoded = decodeField([&] {
    if (kind == kTrainingRunKind) semantic = validate(decodeTrainingRun(document.object));
    else semantic = validate(decodeRetrainingPolicy(document.object));
  });
  std::vector<Finding> findings;
  auto decodeErrors = collector.take();
  for (const auto& e : decodeErrors) findings.push_back({Severity::Error, e.path(), e.message()});
  if (specDecoded)
    for (auto& f : semantic)
      if (std::none_of(decodeErrors.begin(), decodeErrors.end(), [&](const DecodeError& e) { return isUnder(f.path, e.path()); }))
        findings.push_back(std::move(f));
  if (document.name().empty()) findings.push_back({Severity::Error, "metadata.name", "required: the object's name"});
  if (stringField(document.object, "apiVersion") == kDeprecatedApiVersion)
    findings.push_back({Severity::Warning, "apiVersion",
                        std::string(kDeprecatedApiVersion) + " is deprecated: write " + kApiVersion + " (the same fields)"});
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) { return pathBefore(a.path, b.path); });
  return findings;
}

}  // namespace vto::crd
