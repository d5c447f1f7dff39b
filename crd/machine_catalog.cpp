#include "crd/machine_catalog.h"

#include <algorithm>

#include "crd/embedded.h"

namespace vto::crd {
namespace {

using nlohmann::json;

std::vector<std::string> splitAlternatives(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t bar = text.find('|', start);
    std::string part = text.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
    part.erase(0, part.find_first_not_of(' '));
    part.erase(part.find_last_not_of(' ') + 1);
    if (!part.empty()) out.push_back(part);
    if (bar == std::string::npos) break;
    start = bar + 1;
  }
  return out;
}

// The vCPU count at the end of an N1 machine name ("n1-standard-16" -> 16), or 0.
int trailingNumber(const std::string& machineType) {
  size_t dash = machineType.rfind('-');
  if (dash == std::string::npos) return 0;
  try {
    return std::stoi(machineType.substr(dash + 1));
  } catch (...) {
    return 0;
  }
}

std::string joinInts(const std::vector<int>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i)
    out += (i == 0 ? "" : (i + 1 == values.size() ? " or " : ", ")) + std::to_string(values[i]);
  return out;
}

}  // namespace

const std::vector<std::string>& vertexAcceleratorTypes() {
  static const std::vector<std::string> names = {
      "NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P4",   "NVIDIA_TESLA_T4",
      "NVIDIA_TESLA_A100", "NVIDIA_A100_80GB", "NVIDIA_L4",         "NVIDIA_H100_80GB",  "NVIDIA_H100_MEGA_80GB",
      "NVIDIA_H200_141GB", "NVIDIA_B200",      "NVIDIA_GB200",      "NVIDIA_RTX_PRO_6000", "TPU_V2",
      "TPU_V3",            "TPU_V4_POD",       "TPU_V5_LITEPOD"};
  return names;
}

bool isRetiredAccelerator(const std::string& acceleratorType) { return acceleratorType == "NVIDIA_TESLA_K80"; }

bool MachineCatalog::Offer::matches(const std::string& machineType) const {
  if (std::find(machineTypes.begin(), machineTypes.end(), machineType) != machineTypes.end()) return true;
  return std::any_of(machinePrefixes.begin(), machinePrefixes.end(),
                     [&](const std::string& p) { return machineType.rfind(p, 0) == 0; });
}

std::string MachineCatalog::Offer::machinesText() const {
  std::string out;
  for (const auto& m : machineTypes) out += (out.empty() ? "" : ", ") + m;
  for (const auto& p : machinePrefixes) out += (out.empty() ? "" : ", ") + p + "*";
  return out;
}

MachineCatalog::MachineCatalog(const json& document) {
  for (const auto& entry : document.at("entries")) {
    Offer offer;
    if (auto it = entry.find("machineType"); it != entry.end() && it->is_string())
      offer.machineTypes = splitAlternatives(it->get<std::string>());
    if (auto it = entry.find("machineTypePattern"); it != entry.end() && it->is_string())
      for (auto pattern : splitAlternatives(it->get<std::string>())) {
        if (!pattern.empty() && pattern.back() == '*') pattern.pop_back();
        offer.machinePrefixes.push_back(pattern);
      }
    const json& types = entry.at("acceleratorType");
    if (types.is_array()) offer.acceleratorTypes = types.get<std::vector<std::string>>();
    else offer.acceleratorTypes = {types.get<std::string>()};
    if (auto it = entry.find("acceleratorCounts"); it != entry.end() && it->is_array())
      offer.counts = it->get<std::vector<int>>();
    if (auto it = entry.find("maxVcpusPerCount"); it != entry.end() && it->is_object())
      for (const auto& [count, vcpus] : it->items()) offer.maxVcpusPerCount[std::stoi(count)] = vcpus.get<int>();
    offers_.push_back(std::move(offer));
  }
}

const MachineCatalog& MachineCatalog::builtIn() {
  static const MachineCatalog catalog(json::parse(embedded::machineAcceleratorsJson));
  return catalog;
}

std::optional<CompatibilityProblem> MachineCatalog::check(const std::string& machineType,
                                                          const std::string& acceleratorType, int count) const {
  std::vector<const Offer*> forMachine;
  for (const auto& o : offers_)
    if (o.matches(machineType)) forMachine.push_back(&o);

  if (acceleratorType.empty()) {
    // Accelerator-optimized machines come with fixed GPUs, and Vertex wants them spelled out.
    for (const Offer* o : forMachine)
      if (!o->machineTypes.empty() && o->counts.size() == 1)
        return CompatibilityProblem{true, false, "machine type " + machineType + " comes with " + std::to_string(o->counts[0]) +
                                              " x " + o->acceleratorTypes[0] + "; set acceleratorType: " +
                                              o->acceleratorTypes[0] + " and acceleratorCount: " +
                                              std::to_string(o->counts[0])};
    return std::nullopt;
  }

  for (const Offer* o : forMachine) {
    if (std::find(o->acceleratorTypes.begin(), o->acceleratorTypes.end(), acceleratorType) == o->acceleratorTypes.end())
      continue;
    if (!o->counts.empty() && std::find(o->counts.begin(), o->counts.end(), count) == o->counts.end())
      return CompatibilityProblem{true, true,
                                  machineType + " with " + acceleratorType + " allows acceleratorCount " +
                                      joinInts(o->counts) + ", not " + std::to_string(count)};
    if (auto limit = o->maxVcpusPerCount.find(count); limit != o->maxVcpusPerCount.end()) {
      int vcpus = trailingNumber(machineType);
      if (vcpus > limit->second)
        return CompatibilityProblem{true, true, machineType + " has " + std::to_string(vcpus) + " vCPUs, but " +
                                              std::to_string(count) + " x " + acceleratorType + " allow at most " +
                                              std::to_string(limit->second) +
                                              "; choose a smaller machine type or more accelerators"};
    }
    return std::nullopt;
  }

  std::string fits;
  for (const auto& o : offers_)
    if (std::find(o.acceleratorTypes.begin(), o.acceleratorTypes.end(), acceleratorType) != o.acceleratorTypes.end())
      fits += (fits.empty() ? "" : ", ") + o.machinesText();
  if (fits.empty())
    return CompatibilityProblem{false, false, "vto does not know which machine types carry " + acceleratorType +
                                           "; check the Vertex AI configure-compute page before submitting"};
  return CompatibilityProblem{true, false, "Accelerator \"" + acceleratorType + "\" is not supported for machine type \"" +
                                        machineType + "\"; " + acceleratorType + " fits: " + fits};
}

}  // namespace vto::crd
