#include "crd/crd_yaml.h"

#include "crd/embedded.h"

namespace vto::crd {
std::string customResourceDefinitionsYaml() {
  std::string out(embedded::trainingRunCrdYaml);
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += "---\n";
  out += embedded::retrainingPolicyCrdYaml;
  return out;
}
}  // namespace vto::crd
