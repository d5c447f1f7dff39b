#pragma once
// Vertex AI list prices per hour (API.md "Cost and budgets"): per location, each machine type's and
// each accelerator's, for Standard, Spot and FlexStart. The table in
// third_party/vertex-api/training-prices.yaml is compiled in; `vto run --price-catalog FILE` replaces
// it with a file of the same shape. A price the table does not hold is missing: never another
// strategy's price, never a guess.
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/money.h"
#include "crd/training_run.h"

namespace vto::governance {

struct StrategyPrices {
  std::optional<Usd> standard, spot, flexStart;  // per hour
  std::optional<Usd> of(crd::SchedulingStrategy strategy) const;
};

struct LocationPrices {
  std::map<std::string, StrategyPrices> machines;      // machine type -> prices per machine
  std::map<std::string, StrategyPrices> accelerators;  // Vertex AcceleratorType -> prices per accelerator
};

class PriceCatalog {
 public:
  // The compiled-in table; its id is its date.
  static const PriceCatalog& builtIn();
  // Strictly decodes a price file (YAML or JSON, one document); throws DecodeError naming the field.
  // `id` is what status.cost.priceCatalog says of it ("custom:<sha256 prefix>" for a --price-catalog
  // file, the date for the built-in table).
  static PriceCatalog parse(const std::string& text, std::string id);

  const std::string& id() const { return id_; }
  const std::string& date() const { return date_; }
  const std::string& source() const { return source_; }
  const std::map<std::string, LocationPrices>& locations() const { return locations_; }

  // nullopt: the table does not price it at that location for that strategy.
  std::optional<Usd> machine(const std::string& location, const std::string& machineType,
                                crd::SchedulingStrategy strategy) const;
  std::optional<Usd> accelerator(const std::string& location, const std::string& acceleratorType,
                                    crd::SchedulingStrategy strategy) const;

 private:
  std::string id_, date_, source_;
  std::map<std::string, LocationPrices> locations_;
};

// "standard" | "spot" | "flexStart": the price file's key for a strategy.
const char* priceKeyOf(crd::SchedulingStrategy strategy);

}  // namespace vto::governance
