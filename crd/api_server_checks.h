#pragma once
// What the API server refuses before vto ever sees an object, checked offline so `vto lint` does
// not pass a manifest that `kubectl apply` would reject: string lengths (maxLength), list sizes
// (maxItems) and map sizes (maxProperties) from the CRD's own schema (helm/vto/files/crds/, compiled
// in), and unknown fields in metadata (strict field validation). Duplicate keys are refused
// earlier, by the YAML reader.
#include <vector>

#include <nlohmann/json.hpp>

#include "crd/validation.h"

namespace vto::crd {

// `object` is a whole TrainingRun or RetrainingPolicy; other kinds give no findings.
std::vector<Finding> apiServerFindings(const nlohmann::json& object);

}  // namespace vto::crd
