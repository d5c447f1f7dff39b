#include "crd/machine_catalog.h"

#include <algorithm>
#include <cctype>

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

std::string celString(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string celIntList(const std::vector<int>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string joinInts(const std::vector<int>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i)
    out += (i == 0 ? "" : (i + 1 == values.size() ? " or " : ", ")) + std::to_string(values[i]);
  return out;
}

// The advice of check() and of the CRD's CEL rules, in one place. CEL's cost estimate treats
// string(int) as unbounded, so the CEL messages carry only what the rule knows statically (and the
// machine type): lint appends ", not N" to the count advice.
std::string countAdvice(const std::string& machineType, const std::string& acceleratorType, const std::vector<int>& counts) {
  return machineType + " with " + acceleratorType + " allows acceleratorCount " + joinInts(counts);
}
std::string vcpuAdvice(const std::string& machineType, const std::string& acceleratorType, int count, int maxVcpus) {
  return machineType + " has more vCPUs than " + std::to_string(count) + " x " + acceleratorType + " allow (at most " +
         std::to_string(maxVcpus) + "); choose a smaller machine type or more accelerators";
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

std::string MachineCatalog::machinesFor(const std::string& acceleratorType) const {
  std::string fits;
  for (const auto& o : offers_)
    if (std::find(o.acceleratorTypes.begin(), o.acceleratorTypes.end(), acceleratorType) != o.acceleratorTypes.end()) {
      std::string machines = o.machinesText();
      if (!machines.empty()) fits += (fits.empty() ? "" : ", ") + machines;
    }
  return fits;
}

namespace {
// The number before `unit` at the end of `name` ("ct5lp-hightpu-4t", 't' -> 4), or 0.
int64_t sizeBefore(const std::string& name, char unit, size_t from) {
  size_t end = name.size();
  if (end <= from + 1 || name[end - 1] != unit) return 0;
  size_t start = end - 1;
  while (start > from && std::isdigit(static_cast<unsigned char>(name[start - 1]))) --start;
  if (start == end - 1 || end - 1 - start > 4 || name[start - 1] != '-') return 0;
  return std::stoll(name.substr(start, end - 1 - start));
}
// "a3" / "ct5lp" / "g2": a letter family followed by a generation digit.
bool isFamily(const std::string& machineType, const std::string& letters) {
  return machineType.size() > letters.size() && machineType.compare(0, letters.size(), letters) == 0 &&
         std::isdigit(static_cast<unsigned char>(machineType[letters.size()]));
}
}  // namespace

std::optional<int64_t> tpuSliceChips(const std::string& topology) {
  int64_t chips = 1;
  size_t dimensions = 0, start = 0;
  while (start <= topology.size()) {
    size_t end = std::min(topology.find('x', start), topology.size());
    auto part = topology.substr(start, end - start);
    if (part.empty() || part.size() > 4 || part.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    chips *= std::stoll(part);  // at most 3 parts of 4 digits: no overflow
    ++dimensions;
    start = end + 1;
  }
  if (dimensions < 2 || dimensions > 3) return std::nullopt;
  return chips;
}

ReplicaUse replicaUseOf(const std::string& machineType, int64_t declaredCount, const std::string& tpuTopology) {
  int64_t perMachine = std::max<int64_t>(declaredCount, 0);
  if (auto builtIn = MachineCatalog::builtIn().builtInAccelerators(machineType)) perMachine = std::max(perMachine, builtIn->count);
  ReplicaUse use{perMachine, 1};
  if (auto chips = tpuTopology.empty() ? std::nullopt : tpuSliceChips(tpuTopology); chips && *chips > perMachine) {
    use.accelerators = *chips;
    if (perMachine > 0) use.hosts = (*chips + perMachine - 1) / perMachine;
  }
  return use;
}

std::optional<BuiltInAccelerators> MachineCatalog::builtInAccelerators(const std::string& machineType) const {
  std::optional<BuiltInAccelerators> out;
  for (const auto& o : offers_) {
    if (std::find(o.machineTypes.begin(), o.machineTypes.end(), machineType) == o.machineTypes.end()) continue;
    out = BuiltInAccelerators{o.acceleratorTypes.size() == 1 ? o.acceleratorTypes[0] : "",
                              o.counts.size() == 1 ? o.counts[0] : 0};
    break;
  }
  // The family's naming says what the table may not: a*-*gpu-8g[-suffix] carries 8 GPUs, ct*-4t 4 chips.
  int64_t named = 0;
  if (isFamily(machineType, "ct")) {
    named = sizeBefore(machineType, 't', 0);
  } else if (isFamily(machineType, "a") && machineType.find("gpu-") != std::string::npos) {
    size_t size = machineType.find("gpu-") + 4;
    size_t end = machineType.find('-', size);
    named = sizeBefore(machineType.substr(0, end), 'g', size - 1);
  }
  // g1-small is a shared-core machine of old; GPU machines are g2 and later.
  bool gpuG = isFamily(machineType, "g") && machineType[1] >= '2';
  bool family = isFamily(machineType, "ct") || gpuG ||
                (isFamily(machineType, "a") && machineType.find("gpu-") != std::string::npos);
  if (!out && !family) return std::nullopt;
  if (!out) out = BuiltInAccelerators{};
  out->count = std::max(out->count, named);
  return out;
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
    // So do TPU machines and machine families the table does not list: without the type, the
    // tenancy rules could neither check nor count what the machine holds.
    if (auto builtIn = builtInAccelerators(machineType)) {
      std::string what = builtIn->count ? std::to_string(builtIn->count) + " x " : "";
      what += builtIn->acceleratorType.empty() ? "accelerators" : builtIn->acceleratorType;
      // The CRD's CEL rule for TPU machines says the same up to the parenthesis.
      return CompatibilityProblem{true, false, "machine type " + machineType + " comes with accelerators (" + what +
                                               "); set acceleratorType and acceleratorCount to what it carries"};
    }
    return std::nullopt;
  }

  for (const Offer* o : forMachine) {
    if (std::find(o->acceleratorTypes.begin(), o->acceleratorTypes.end(), acceleratorType) == o->acceleratorTypes.end())
      continue;
    if (!o->counts.empty() && std::find(o->counts.begin(), o->counts.end(), count) == o->counts.end())
      return CompatibilityProblem{true, true, countAdvice(machineType, acceleratorType, o->counts) + ", not " + std::to_string(count)};
    if (auto limit = o->maxVcpusPerCount.find(count); limit != o->maxVcpusPerCount.end()) {
      int vcpus = trailingNumber(machineType);
      if (vcpus > limit->second)
        return CompatibilityProblem{true, true, vcpuAdvice(machineType, acceleratorType, count, limit->second)};
    }
    return std::nullopt;
  }

  std::string fits = machinesFor(acceleratorType);
  if (fits.empty())
    return CompatibilityProblem{false, false, "vto does not know which machine types carry " + acceleratorType +
                                           "; check the Vertex AI configure-compute page before submitting"};
  return CompatibilityProblem{true, false, "Accelerator \"" + acceleratorType + "\" is not supported for machine type \"" +
                                        machineType + "\"; " + acceleratorType + " fits: " + fits};
}

CelRule guardedCelRule(const std::string& guard, const std::string& body, std::string messageExpression,
                       std::string fieldPath) {
  return {"!(" + guard + ") || (" + body + ")", std::move(messageExpression), std::move(fieldPath), guard, body};
}

std::vector<CelRule> MachineCatalog::celRules() const {
  // check() runs only when type and count are both set or both absent (validation reports the rest),
  // and CEL sees a retired type only as an enum error, so rules skip retired types.
  const std::string both = "has(self.acceleratorType) && has(self.acceleratorCount)";
  const std::string neither = "!has(self.acceleratorType) && !has(self.acceleratorCount)";
  auto machineIn = [](const std::vector<std::string>& machines, const std::vector<std::string>& prefixes) {
    std::vector<std::string> terms;
    if (!machines.empty()) {
      std::string list;
      for (const auto& m : machines) list += (list.empty() ? "" : ", ") + celString(m);
      terms.push_back("self.machineType in [" + list + "]");
    }
    for (const auto& p : prefixes) terms.push_back("self.machineType.startsWith(" + celString(p) + ")");
    std::string out;
    for (const auto& t : terms) out += (out.empty() ? "" : " || ") + t;
    return terms.empty() ? std::string("false") : "(" + out + ")";
  };
  std::vector<CelRule> rules;

  // Machines that come with fixed GPUs need them spelled out.
  std::map<std::string, std::string> fixed;  // machine -> "N x TYPE; set ..."
  for (const auto& o : offers_)
    if (!o.machineTypes.empty() && o.counts.size() == 1)
      for (const auto& m : o.machineTypes)
        fixed.emplace(m, std::to_string(o.counts[0]) + " x " + o.acceleratorTypes[0] + "; set acceleratorType: " +
                             o.acceleratorTypes[0] + " and acceleratorCount: " + std::to_string(o.counts[0]));
  if (!fixed.empty()) {
    std::string map;
    std::vector<std::string> machines;
    for (const auto& [m, text] : fixed) {
      map += (map.empty() ? "" : ", ") + celString(m) + ": " + celString(text);
      machines.push_back(m);
    }
    rules.push_back(guardedCelRule(neither, "!" + machineIn(machines, {}),
                                   "'machine type ' + self.machineType + ' comes with ' + {" + map + "}[self.machineType]",
                                   ".acceleratorType"));
  }

  std::vector<std::string> types;
  for (const auto& o : offers_)
    for (const auto& t : o.acceleratorTypes)
      if (!isRetiredAccelerator(t) && std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
  for (const auto& type : types) {
    std::string fits = machinesFor(type);
    if (fits.empty()) continue;  // check() only warns: the table does not know this accelerator's machines
    std::string isType = "self.acceleratorType == " + celString(type);  // under `both`
    std::vector<std::string> machines, prefixes;
    std::map<std::string, std::vector<int>> exactCounts;
    for (const auto& o : offers_) {
      if (std::find(o.acceleratorTypes.begin(), o.acceleratorTypes.end(), type) == o.acceleratorTypes.end()) continue;
      machines.insert(machines.end(), o.machineTypes.begin(), o.machineTypes.end());
      prefixes.insert(prefixes.end(), o.machinePrefixes.begin(), o.machinePrefixes.end());
      if (!o.counts.empty())
        for (const auto& m : o.machineTypes) exactCounts[m] = o.counts;
      if (o.machinePrefixes.empty()) continue;
      std::string onThese = isType + " && " + machineIn({}, o.machinePrefixes);
      // The advice starts with the machine type, its one dynamic part: built for "", it is the rest.
      auto afterMachineType = [](const std::string& advice) { return "self.machineType + " + celString(advice); };
      if (!o.counts.empty())
        rules.push_back(guardedCelRule(both, "!(" + onThese + ") || self.acceleratorCount in " + celIntList(o.counts),
                                       afterMachineType(countAdvice("", type, o.counts)), ".acceleratorCount"));
      // One rule per count, so that each message is static but for the machine type.
      const std::string vcpus = "int(self.machineType.substring(self.machineType.lastIndexOf('-') + 1))";
      for (const auto& [count, maxVcpus] : o.maxVcpusPerCount)
        rules.push_back(guardedCelRule(both,
                                       "!(" + onThese + " && self.acceleratorCount == " + std::to_string(count) +
                                           " && self.machineType.matches('-[0-9]{1,4}$')) || " + vcpus +
                                           " <= " + std::to_string(maxVcpus),
                                       afterMachineType(vcpuAdvice("", type, count, maxVcpus)), ".acceleratorCount"));
    }
    rules.push_back(guardedCelRule(both, "!(" + isType + ") || " + machineIn(machines, prefixes),
                                   "'Accelerator \"" + type + "\" is not supported for machine type \"' + self.machineType + '\"; " +
                                       type + " fits: " + fits + "'",
                                   ".acceleratorType"));
    if (!exactCounts.empty()) {
      std::string map, text;
      for (const auto& [m, counts] : exactCounts) {
        map += (map.empty() ? "" : ", ") + celString(m) + ": " + celIntList(counts);
        text += (text.empty() ? "" : ", ") + celString(m) + ": " + celString(joinInts(counts));
      }
      rules.push_back(guardedCelRule(both,
                                     "!(" + isType + " && self.machineType in {" + map + "}) || self.acceleratorCount in {" +
                                         map + "}[self.machineType]",
                                     "self.machineType + ' with " + type + " allows acceleratorCount ' + {" + text +
                                         "}[self.machineType]",
                                     ".acceleratorCount"));
    }
  }
  return rules;
}

namespace {
void replaceAll(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
}

// A rule written for one resources object, rewritten for the placement fallback `f` makes: each field
// is the fallback's when it names it, else the spec's (as crd::placementsOf merges them).
std::string onMergedFallback(std::string expression) {
  for (const std::string field : {"machineType", "acceleratorType", "acceleratorCount"}) {
    const std::string own = "has(f.resources) && has(f.resources." + field + ")";
    replaceAll(expression, "has(self." + field + ")", "(" + own + " || has(self.resources." + field + "))");
    replaceAll(expression, "self." + field, "(" + own + " ? f.resources." + field + " : self.resources." + field + ")");
  }
  return expression;
}
}  // namespace

std::vector<CelRule> MachineCatalog::fallbackCelRules() const {
  // A fallback that names only a machine keeps the spec's accelerators (and the reverse): a rule on
  // the fallback alone cannot see them, so each catalog rule is judged at spec level on every merged
  // placement; the message is the first offending fallback's, for the first rule it breaks.
  // The API server evaluates these on every write of every run (status writes too), each rule as its
  // own program: they are joined, one pass over the fallbacks per piece, and the first test is the
  // one most runs stop at (no capacity), one field lookup.
  const std::string applies = "!has(self.capacity) || !has(self.capacity.fallbacks) || !has(self.resources) || "
                              "(has(self.workerPoolSpecs) && size(self.workerPoolSpecs) > 0) || ";
  const std::string prefix = "'a capacity fallback, merged over spec.resources: ' + (";
  std::vector<CelRule> pieces;
  std::string rule, messages;
  auto flush = [&] {
    if (rule.empty()) return;
    pieces.push_back({applies + "self.capacity.fallbacks.all(f, " + rule + ")", prefix + messages + ")[0]",
                      ".capacity.fallbacks", "", ""});
    rule.clear();
    messages.clear();
  };
  for (const auto& r : celRules()) {
    std::string merged = "(";  // appended, not `"(" + ...`: g++ 12 warns falsely (-Wrestrict) on that here
    merged += onMergedFallback(r.rule) + ")";
    // The fallbacks that break this rule, each with its message; listed rule by rule, so [0] is the
    // first rule's first offender.
    auto offenders = "self.capacity.fallbacks.filter(f, !" + merged + ").map(f, " + onMergedFallback(r.messageExpression) + ")";
    if (!rule.empty() && messages.size() + offenders.size() + 3 > kMaxJoinedCelExpression) flush();
    rule += (rule.empty() ? "" : " && ") + merged;
    messages += (messages.empty() ? "" : " + ") + offenders;
  }
  flush();
  return pieces;
}

}  // namespace vto::crd
