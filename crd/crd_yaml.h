#pragma once
// The CustomResourceDefinitions of both kinds, from the checked-in files under helm/vto/files/crds/
// (compiled in), as one multi-document YAML stream for `kubectl apply -f -` (server-side or client-side:
// the deprecated version carries no CEL rules, so the TrainingRun CRD fits client-side apply's annotation).
#include <string>

#include "crd/machine_catalog.h"

namespace vto::crd {
std::string customResourceDefinitionsYaml();

// The TrainingRun CRD's machine/accelerator rules are generated from the machine catalog (the table
// `vto lint` uses) into a marked block of helm/vto/files/crds/trainingruns.vto.dev.yaml; `vto crd
// --update-catalog-rules FILE` rewrites the block and a unit test checks that the file is current.
inline constexpr const char* kCatalogRulesBegin = "# BEGIN machine catalog rules";
inline constexpr const char* kCatalogRulesEnd = "# END machine catalog rules";
// The same rules on each capacity fallback as merged over spec.resources, in spec's own list.
inline constexpr const char* kFallbackCatalogRulesBegin = "# BEGIN fallback machine catalog rules";
inline constexpr const char* kFallbackCatalogRulesEnd = "# END fallback machine catalog rules";
// `crdYaml` with both blocks replaced by `catalog`'s rules, each indented like its BEGIN marker.
// Throws std::runtime_error when the markers are missing.
std::string withCatalogRules(const std::string& crdYaml, const MachineCatalog& catalog);
// The checked-in TrainingRun CRD, as compiled in.
std::string trainingRunCrdYaml();
}  // namespace vto::crd
