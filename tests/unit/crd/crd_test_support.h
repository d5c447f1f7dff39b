#pragma once
// Helpers for the crd unit tests: where the repository's data files are, and loading them.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "crd/training_run.h"
#include "crd/yaml_json.h"

namespace vto::crd::testing {

// The repository root: $VTO_SOURCE_DIR, else three levels above this file (tests/unit/crd/).
inline std::filesystem::path repoRoot() {
  if (const char* dir = std::getenv("VTO_SOURCE_DIR")) return dir;
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
}

inline std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every *.yaml file directly in `dir`, sorted.
inline std::vector<std::filesystem::path> yamlFiles(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".yaml") out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The error parseYamlDocuments gives for `text`, or "" when it accepts it.
inline std::string yamlErrorOf(const std::string& text) {
  try {
    parseYamlDocuments(text);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// A TrainingRun from YAML text (one document).
inline TrainingRun runFromYaml(const std::string& yaml) { return decodeTrainingRun(parseYamlDocuments(yaml).at(0)); }

// A minimal valid run; tests change the part they are about.
inline const char* kMinimalRun = R"(
apiVersion: vto.dev/v1beta1
kind: TrainingRun
metadata: {name: demo, namespace: team-a, uid: 0b6c1f4e-1111-2222-3333-444455556666}
spec:
  trainer:
    container: {imageUri: us-central1-docker.pkg.dev/p/r/img:1, args: [--epochs=1]}
  resources: {machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}
  baseOutputDirectory: gs://bucket/demo
)";

// kMinimalRun with the spec fields in `extraSpecYaml` (indented by two, as under `spec:`) put in
// place of the minimal run's own (a manifest may not repeat a key).
inline TrainingRun runWithSpec(const std::string& extraSpecYaml) {
  auto doc = parseYamlDocuments(kMinimalRun).at(0);
  auto extra = parseYamlDocuments("spec:\n" + extraSpecYaml);
  if (!extra.empty() && extra[0]["spec"].is_object()) {
    for (const auto& [key, value] : extra[0]["spec"].items()) doc["spec"][key] = value;
  }
  return decodeTrainingRun(doc);
}

}  // namespace vto::crd::testing
