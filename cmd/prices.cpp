// vto prices: the price table cost estimates use (governance/price_catalog.h), as a table; and the
// --price-catalog file reader the operator shares with it.
#include <openssl/sha.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cmd/commands.h"
#include "cmd/flags.h"
#include "cmd/price_file.h"
#include "crd/strict_json.h"

namespace vto::cmd {

governance::PriceCatalog readPriceCatalog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("--price-catalog: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto content = text.str();
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(content.data()), content.size(), digest);
  char hex[13];
  for (int i = 0; i < 6; ++i) std::snprintf(hex + 2 * i, 3, "%02x", digest[i]);
  try {
    return governance::PriceCatalog::parse(content, std::string("custom:") + hex);
  } catch (const crd::DecodeError& e) {
    throw UsageError("--price-catalog " + path + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw UsageError("--price-catalog " + path + ": " + e.what());
  }
}

namespace {

std::string priceText(const std::optional<Usd>& price) { return price ? price->plain(4) : "-"; }

void printRows(const std::string& location, const char* kind, const std::map<std::string, governance::StrategyPrices>& rows,
               const std::string& only) {
  for (const auto& [name, p] : rows) {
    if (!only.empty() && name != only) continue;
    std::printf("%-24s %-12s %-28s %10s %10s %10s\n", location.c_str(), kind, name.c_str(), priceText(p.standard).c_str(),
                priceText(p.spot).c_str(), priceText(p.flexStart).c_str());
  }
}

}  // namespace

int prices(const Args& args) {
  Flags flags("prices",
              "Prints the price table vto's cost estimates use, USD per hour: per location, each machine type\n"
              "(per machine, GPUs not included) and each accelerator (per accelerator), for Standard, Spot and\n"
              "FlexStart. \"-\" is a missing price: a run that needs it shows no cost, never a guess.",
              {{"location", 0, "", "only this location, e.g. us-central1"},
               {"machine", 0, "", "only this machine type or accelerator, e.g. n1-standard-8 or NVIDIA_TESLA_T4"},
               {"price-catalog", 0, "", "a price file to print instead of the built-in table (the shape of docs/cost.md)"}});
  if (!flags.parse(args)) return 0;
  const auto& file = flags.get("price-catalog");
  auto catalog = file.empty() ? governance::PriceCatalog::builtIn() : readPriceCatalog(file);
  std::printf("# price table %s (%s), source %s\n", catalog.id().c_str(), catalog.date().c_str(), catalog.source().c_str());
  std::printf("%-24s %-12s %-28s %10s %10s %10s\n", "LOCATION", "KIND", "NAME", "STANDARD", "SPOT", "FLEXSTART");
  bool any = false;
  for (const auto& [location, table] : catalog.locations()) {
    if (!flags.get("location").empty() && location != flags.get("location")) continue;
    any = true;
    printRows(location, "machine", table.machines, flags.get("machine"));
    printRows(location, "accelerator", table.accelerators, flags.get("machine"));
  }
  if (!any && !flags.get("location").empty())
    std::cerr << "vto prices: the table prices nothing in " << flags.get("location") << "\n";
  return 0;
}

}  // namespace vto::cmd
