#pragma once
// Files compiled into the library (vto_embed in governance/CMakeLists.txt), so the binary needs none at runtime.
#include <string_view>

namespace vto::governance::embedded {
extern const std::string_view trainingPricesYaml;  // third_party/vertex-api/training-prices.yaml
}  // namespace vto::governance::embedded
