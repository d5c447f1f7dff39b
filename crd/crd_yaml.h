#pragma once
// The CustomResourceDefinitions of both kinds, from the checked-in files under helm/vto/crds/
// (compiled in), as one multi-document YAML stream for `kubectl apply -f -`.
#include <string>

namespace vto::crd {
std::string customResourceDefinitionsYaml();
}
