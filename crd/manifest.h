#pragma once
// A manifest file as `vto lint` and `vto render` see it: one or more YAML/JSON documents, each a
// TrainingRun or a RetrainingPolicy.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crd/validation.h"

namespace vto::crd {

struct ManifestDocument {
  size_t number = 0;  // 1-based, counting non-empty documents
  nlohmann::json object;
  std::string kind() const;
  std::string name() const;
  // "document 2 (TrainingRun/resnet)", for messages about multi-document files.
  std::string label() const;
};

// Each document of `text`, the items of a v1 List (`kubectl get -o yaml`) each as one.
// Throws std::runtime_error on a YAML syntax error.
std::vector<ManifestDocument> parseManifests(const std::string& text);

// Decodes and validates one document; a decoding error or an unknown kind becomes an error finding.
std::vector<Finding> lintDocument(const ManifestDocument& document);

}  // namespace vto::crd
