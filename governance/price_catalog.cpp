#include "governance/price_catalog.h"

#include <cmath>

#include "crd/strict_json.h"
#include "crd/yaml_json.h"
#include "governance/embedded.h"

namespace vto::governance {
// What this file reads of the API.
using crd::DecodeError;
using crd::ObjectReader;
using crd::SchedulingStrategy;
using crd::describeType;
using crd::joinPath;
using crd::parseYamlDocuments;
using crd::readNumber;
using nlohmann::json;

namespace {

// Far above anything Vertex charges per machine or accelerator (the built-in table's dearest is under
// $7; tests price a machine at $1 a second): a larger figure is a typo, and one near 1e17 would swamp
// every sum a budget makes.
constexpr double kMaxHourlyPriceUsd = 10000;

Usd readPrice(const json& value, const std::string& path) {
  double price = readNumber(value, path);
  if (!std::isfinite(price) || price < 0) throw DecodeError(path, "must be a price in USD per hour, 0 or more");
  if (price > kMaxHourlyPriceUsd)
    throw DecodeError(path, "is more than $10,000 an hour, far above what Vertex charges for one machine or accelerator; "
                            "prices are USD per hour for one machine (or one accelerator): check the figure");
  return *Usd::fromDollars(price);  // at most $10,000: always in range
}

std::map<std::string, StrategyPrices> readPrices(const json& value, const std::string& path) {
  if (!value.is_object()) throw DecodeError(path, "must be a map of names to prices, not " + describeType(value));
  std::map<std::string, StrategyPrices> out;
  for (const auto& [name, entry] : value.items()) {
    auto entryPath = joinPath(path, name);
    if (!entry.is_object()) throw DecodeError(entryPath, "must be {standard, spot, flexStart}, not " + describeType(entry));
    ObjectReader r(entry, entryPath);
    StrategyPrices p;
    r.with("standard", [&](const json& v, const std::string& q) { p.standard = readPrice(v, q); });
    r.with("spot", [&](const json& v, const std::string& q) { p.spot = readPrice(v, q); });
    r.with("flexStart", [&](const json& v, const std::string& q) { p.flexStart = readPrice(v, q); });
    r.finish();
    out.emplace(name, p);
  }
  return out;
}

template <typename Pick>
std::optional<Usd> lookUp(const std::map<std::string, LocationPrices>& locations, const std::string& location,
                             const std::string& name, SchedulingStrategy strategy, Pick pick) {
  auto where = locations.find(location);
  if (where == locations.end()) return std::nullopt;
  const auto& table = pick(where->second);
  auto found = table.find(name);
  if (found == table.end()) return std::nullopt;
  return found->second.of(strategy);
}

}  // namespace

std::optional<Usd> StrategyPrices::of(SchedulingStrategy strategy) const {
  switch (strategy) {
    case SchedulingStrategy::Standard: return standard;
    case SchedulingStrategy::Spot: return spot;
    case SchedulingStrategy::FlexStart: return flexStart;
  }
  return std::nullopt;
}

const char* priceKeyOf(SchedulingStrategy strategy) {
  switch (strategy) {
    case SchedulingStrategy::Standard: return "standard";
    case SchedulingStrategy::Spot: return "spot";
    case SchedulingStrategy::FlexStart: return "flexStart";
  }
  return "standard";
}

PriceCatalog PriceCatalog::parse(const std::string& text, std::string id) {
  auto documents = parseYamlDocuments(text);
  if (documents.size() != 1) throw DecodeError("", "a price file holds exactly one document");
  const json& document = documents.front();
  if (!document.is_object()) throw DecodeError("", "a price file is a map with date, source and locations");
  PriceCatalog catalog;
  catalog.id_ = std::move(id);
  ObjectReader r(document, "");
  r.string("date", catalog.date_);
  r.string("source", catalog.source_);
  r.with("locations", [&](const json& v, const std::string& path) {
    if (!v.is_object()) throw DecodeError(path, "must be a map of locations, not " + describeType(v));
    for (const auto& [location, entry] : v.items()) {
      auto entryPath = joinPath(path, location);
      if (!entry.is_object()) throw DecodeError(entryPath, "must be {machines, accelerators}, not " + describeType(entry));
      ObjectReader l(entry, entryPath);
      LocationPrices prices;
      l.with("machines", [&](const json& m, const std::string& p) { prices.machines = readPrices(m, p); });
      l.with("accelerators", [&](const json& a, const std::string& p) { prices.accelerators = readPrices(a, p); });
      l.finish();
      catalog.locations_.emplace(location, std::move(prices));
    }
  });
  r.finish();
  if (catalog.date_.empty()) throw DecodeError("date", "is required (the day the prices were taken, e.g. \"2026-11-01\")");
  if (catalog.id_.empty()) catalog.id_ = catalog.date_;
  return catalog;
}

const PriceCatalog& PriceCatalog::builtIn() {
  static const PriceCatalog catalog = parse(std::string(embedded::trainingPricesYaml), "");
  return catalog;
}

std::optional<Usd> PriceCatalog::machine(const std::string& location, const std::string& machineType,
                                            SchedulingStrategy strategy) const {
  return lookUp(locations_, location, machineType, strategy, [](const LocationPrices& l) -> const auto& { return l.machines; });
}

std::optional<Usd> PriceCatalog::accelerator(const std::string& location, const std::string& acceleratorType,
                                                SchedulingStrategy strategy) const {
  return lookUp(locations_, location, acceleratorType, strategy,
                [](const LocationPrices& l) -> const auto& { return l.accelerators; });
}

}  // namespace vto::governance
