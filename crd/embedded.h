#pragma once
// Files compiled into the library (vto_embed in crd/CMakeLists.txt), so the binary needs none at runtime.
#include <string_view>

namespace vto::crd::embedded {
extern const std::string_view machineAcceleratorsJson;  // third_party/vertex-api/machine-accelerators.json
extern const std::string_view trainingRunCrdYaml;       // helm/vto/files/crds/trainingruns.vto.dev.yaml
extern const std::string_view retrainingPolicyCrdYaml;  // helm/vto/files/crds/retrainingpolicies.vto.dev.yaml
}  // namespace vto::crd::embedded
