#pragma once
// The price table the operator and `vto prices` use: the built-in one, or a --price-catalog file.
#include <string>

#include "governance/price_catalog.h"

namespace vto::cmd {

// Reads and strictly decodes `path` (throws UsageError naming the file and the field); its id is
// "custom:" + the first 12 hex digits of the file's SHA-256, so a status says which file priced it.
governance::PriceCatalog readPriceCatalog(const std::string& path);

}  // namespace vto::cmd
