#pragma once
// Google Cloud label rules: keys start with a lowercase letter; keys and values use lowercase
// letters, digits, '_' and '-', at most 63 characters; at most 64 labels on a resource.
#include <string>

#include "base/gcp_names.h"

namespace vto::crd {

inline constexpr size_t kMaxGcpLabelLength = 63;
inline constexpr size_t kMaxGcpLabels = 64;

// isValidGcpLabelKey and isValidGcpLabelValue are in base/gcp_names.h (the Vertex client checks them too).
// Turns any text (a Kubernetes name, namespace, uid) into a valid label value, deterministically and
// without failing: lowercase, other characters become '-', and text longer than 63 characters is cut
// and suffixed with a hash of the whole, so two long names stay distinct.
std::string sanitizeLabelValue(const std::string& text);

}  // namespace vto::crd
