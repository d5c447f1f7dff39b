#include "emulator/capacity.h"

#include <set>

#include "emulator/schema_validator.h"
#include "vertex/api_error.h"
#include "vertex/json_codec.h"

namespace vto::emulator {
namespace {

using nlohmann::json;
using vertex::ApiError;

constexpr std::size_t kMaxEntries = 1000;
constexpr const char* kEntryForm =
    "a capacity entry is {\"location\", \"acceleratorType\", \"machineType\", \"strategy\" (selectors; empty or "
    "absent: any), \"available\": true|false, \"mode\": \"fail\"|\"hold\", \"quota\": N, \"quotaMode\": "
    "\"queue\"|\"refuse\"}, with available and/or quota";

ApiError invalid(const std::string& message) { return ApiError(400, "INVALID_ARGUMENT", message + "; " + kEntryForm); }

std::string stringField(const json& body, const char* name) {
  if (!body.contains(name) || body[name].is_null()) return "";
  if (!body[name].is_string()) throw invalid(std::string("\"") + name + "\" must be a string");
  return body[name].get<std::string>();
}

long long countOf(const json& value) {
  try {
    return value.is_null() ? 0 : vertex::int64FromJson(value);
  } catch (const std::invalid_argument&) {
    return 0;  // the schema walk already refused anything else
  }
}

}  // namespace

std::string stockoutMessage(const std::string& location) {
  return "Resources are insufficient in region: " + location +
         ". Please try a different region. If you use K80, please consider using P100 or V100 instead.";
}

std::string acceleratorQuotaMetric(const std::string& acceleratorType, const std::string& strategy) {
  // Metric names seen in quota errors and Google's samples (H200, B200, GB200, RTX PRO 6000 and the
  // TPUs other than v3 and v5e follow the same pattern, unconfirmed).
  static const std::map<std::string, std::string> kSuffix = {
      {"NVIDIA_TESLA_K80", "nvidia_k80_gpus"},         {"NVIDIA_TESLA_P100", "nvidia_p100_gpus"},
      {"NVIDIA_TESLA_V100", "nvidia_v100_gpus"},       {"NVIDIA_TESLA_P4", "nvidia_p4_gpus"},
      {"NVIDIA_TESLA_T4", "nvidia_t4_gpus"},           {"NVIDIA_TESLA_A100", "nvidia_a100_gpus"},
      {"NVIDIA_A100_80GB", "nvidia_a100_80gb_gpus"},   {"NVIDIA_L4", "nvidia_l4_gpus"},
      {"NVIDIA_H100_80GB", "nvidia_h100_gpus"},        {"NVIDIA_H100_MEGA_80GB", "nvidia_h100_mega_gpus"},
      {"NVIDIA_H200_141GB", "nvidia_h200_gpus"},       {"NVIDIA_B200", "nvidia_b200_gpus"},
      {"NVIDIA_GB200", "nvidia_gb200_gpus"},           {"NVIDIA_RTX_PRO_6000", "nvidia_rtx_pro_6000_gpus"},
      {"TPU_V2", "tpu_v2"},                            {"TPU_V3", "tpu_v3"},
      {"TPU_V4_POD", "tpu_v4_pod"},                    {"TPU_V5_LITEPOD", "tpu_v5e"}};
  auto found = kSuffix.find(acceleratorType);
  std::string suffix = found != kSuffix.end() ? found->second : "accelerators";
  // Spot VMs and Dynamic Workload Scheduler (FLEX_START) draw on the preemptible quota.
  bool preemptible = strategy == "SPOT" || strategy == "FLEX_START";
  return "aiplatform.googleapis.com/custom_model_training_" + std::string(preemptible ? "preemptible_" : "") + suffix;
}

std::string canonicalStrategy(const std::string& name) {
  static const std::map<std::string, std::string> kNames = {
      {"", "STANDARD"},        {"STRATEGY_UNSPECIFIED", "STANDARD"}, {"ON_DEMAND", "STANDARD"},
      {"LOW_COST", "SPOT"},    {"STANDARD", "STANDARD"},             {"SPOT", "SPOT"},
      {"FLEX_START", "FLEX_START"}, {"Standard", "STANDARD"},        {"Spot", "SPOT"},
      {"FlexStart", "FLEX_START"}};
  auto found = kNames.find(name);
  if (found == kNames.end()) {
    throw ApiError(400, "INVALID_ARGUMENT",
                   "strategy \"" + name + "\" is unknown; use STANDARD, SPOT or FLEX_START (or Standard, Spot, FlexStart)");
  }
  return found->second;
}

std::vector<PoolDemand> demandOf(const json& job, vertex::JobKind kind, const std::string& location) {
  bool tuning = kind == vertex::JobKind::HyperparameterTuning;
  const auto& spec = job.value(tuning ? "trialJobSpec" : "jobSpec", json::object());
  auto strategyName = spec.value("scheduling", json::object()).value("strategy", std::string());
  auto strategy = canonicalStrategy(strategyName);
  long long parallel = tuning ? std::max<long long>(1, countOf(job.value("parallelTrialCount", json(1)))) : 1;
  std::vector<PoolDemand> demand;
  for (const auto& pool : spec.value("workerPoolSpecs", json::array())) {
    if (!pool.contains("machineSpec")) continue;  // an empty pool: "can be skipped by providing an empty value"
    const auto& machine = pool["machineSpec"];
    auto accelerator = machine.value("acceleratorType", std::string());
    if (accelerator == "ACCELERATOR_TYPE_UNSPECIFIED") accelerator.clear();
    long long count = accelerator.empty() ? 0 : countOf(machine.value("acceleratorCount", json(0)));
    long long replicas = countOf(pool.value("replicaCount", json("1")));
    demand.push_back({location, machine.value("machineType", std::string()), accelerator, strategy,
                      count * replicas * parallel});
  }
  return demand;
}

bool CapacityEntry::matches(const PoolDemand& demand) const {
  return (location.empty() || location == demand.location) &&
         (acceleratorType.empty() || acceleratorType == demand.acceleratorType) &&
         (machineType.empty() || machineType == demand.machineType) && (strategy.empty() || strategy == demand.strategy);
}

json CapacityEntry::toJson() const {
  json body = {{"location", location}, {"acceleratorType", acceleratorType}, {"machineType", machineType},
               {"strategy", strategy}};
  if (available) {
    body["available"] = *available;
    body["mode"] = hold ? "hold" : "fail";
  }
  if (quota) {
    body["quota"] = *quota;
    body["quotaMode"] = refuseOverQuota ? "refuse" : "queue";
  }
  return body;
}

CapacityEntry CapacityEntry::fromJson(const json& body) {
  if (!body.is_object()) throw invalid("expected a JSON object, got " + body.dump().substr(0, 80));
  static const std::set<std::string> kFields = {"location", "acceleratorType", "machineType", "strategy",
                                                "available", "mode",            "quota",
                                                "quotaMode"};
  for (const auto& [key, value] : body.items()) {
    if (!kFields.count(key)) throw invalid("unknown field \"" + key + "\"");
  }
  CapacityEntry entry;
  entry.location = stringField(body, "location");
  entry.machineType = stringField(body, "machineType");
  entry.acceleratorType = stringField(body, "acceleratorType");
  if (entry.acceleratorType == "ACCELERATOR_TYPE_UNSPECIFIED") {
    throw invalid("acceleratorType ACCELERATOR_TYPE_UNSPECIFIED matches nothing; leave it empty to match any");
  }
  if (!entry.acceleratorType.empty()) {
    try {  // the accelerator names of the discovery document
      SchemaValidator::vertexV1().normalize({{"acceleratorType", entry.acceleratorType}}, "GoogleCloudAiplatformV1MachineSpec");
    } catch (const ValidationError& error) {
      throw invalid(error.what());
    }
  }
  auto strategy = stringField(body, "strategy");
  if (!strategy.empty()) {
    try {
      entry.strategy = canonicalStrategy(strategy);
    } catch (const ApiError& error) {
      throw invalid(error.message());
    }
  }
  if (body.contains("available")) {
    if (!body["available"].is_boolean()) throw invalid("\"available\" must be true or false");
    entry.available = body["available"].get<bool>();
  }
  auto mode = stringField(body, "mode");
  if (!mode.empty() && mode != "fail" && mode != "hold") throw invalid("mode \"" + mode + "\" is unknown; use fail or hold");
  entry.hold = mode == "hold";
  if (body.contains("quota")) {
    if (!body["quota"].is_number_integer() || body["quota"].get<long long>() < 0) {
      throw invalid("\"quota\" must be a whole number of accelerators >= 0");
    }
    entry.quota = body["quota"].get<long long>();
  }
  auto quotaMode = stringField(body, "quotaMode");
  if (!quotaMode.empty() && quotaMode != "queue" && quotaMode != "refuse") {
    throw invalid("quotaMode \"" + quotaMode + "\" is unknown; use queue or refuse");
  }
  entry.refuseOverQuota = quotaMode == "refuse";
  if (!entry.available && !entry.quota) throw invalid("the entry sets neither available nor quota");
  return entry;
}

void Capacity::add(const json& body) {
  std::vector<CapacityEntry> added;
  if (body.is_array()) {
    for (const auto& item : body) added.push_back(CapacityEntry::fromJson(item));
  } else {
    added.push_back(CapacityEntry::fromJson(body));
  }
  std::lock_guard lock(mutex_);
  auto entries = entries_;
  for (auto& entry : added) {
    auto same = std::find_if(entries.begin(), entries.end(), [&](const CapacityEntry& old) {
      return std::tie(old.location, old.acceleratorType, old.machineType, old.strategy) ==
             std::tie(entry.location, entry.acceleratorType, entry.machineType, entry.strategy);
    });
    if (same != entries.end()) {
      if (!entry.available) entry.available = same->available, entry.hold = same->hold;
      if (!entry.quota) entry.quota = same->quota, entry.refuseOverQuota = same->refuseOverQuota;
      entries.erase(same);
    }
    entries.push_back(std::move(entry));
  }
  if (entries.size() > kMaxEntries) {
    throw ApiError(400, "INVALID_ARGUMENT",
                   "At most " + std::to_string(kMaxEntries) +
                       " capacity entries; DELETE /emulator/v1/capacity removes them all.");
  }
  entries_ = std::move(entries);
}

void Capacity::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

json Capacity::entries() const {
  std::lock_guard lock(mutex_);
  json list = json::array();
  for (const auto& entry : entries_) list.push_back(entry.toJson());
  return list;
}

StartDecision Capacity::decide(const std::vector<PoolDemand>& demand) const {
  std::lock_guard lock(mutex_);
  auto decision = StartDecision::Start;
  for (const auto& pool : demand) {
    for (auto entry = entries_.rbegin(); entry != entries_.rend(); ++entry) {
      if (!entry->available || !entry->matches(pool)) continue;
      if (!*entry->available) {
        if (!entry->hold) return StartDecision::Fail;
        decision = StartDecision::Hold;
      }
      break;
    }
  }
  return decision;
}

PoolDemand Capacity::demandAt(const UsageKey& key, long long accelerators) {
  return {std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), accelerators};
}

bool Capacity::reserve(const std::vector<PoolDemand>& demand, bool refuse) {
  std::lock_guard lock(mutex_);
  // The entry that governs each pool's quota: the last one with a quota that matches it.
  std::map<std::size_t, const PoolDemand*> governing;
  for (const auto& pool : demand) {
    if (pool.accelerators <= 0) continue;
    for (auto i = entries_.size(); i-- > 0;) {
      if (entries_[i].quota && entries_[i].matches(pool)) {
        governing.emplace(i, &pool);
        break;
      }
    }
  }
  for (const auto& [index, pool] : governing) {
    const auto& entry = entries_[index];
    long long used = 0, requested = 0;
    for (const auto& [key, count] : inUse_) {
      if (entry.matches(demandAt(key, count))) used += count;
    }
    for (const auto& other : demand) {
      if (entry.matches(other)) requested += other.accelerators;
    }
    if (used + requested > *entry.quota) {
      if (!refuse || !entry.refuseOverQuota) return false;
      throw ApiError(429, "RESOURCE_EXHAUSTED",
                     "The following quota metrics exceed quota limits: " +
                         acceleratorQuotaMetric(pool->acceleratorType, pool->strategy));
    }
  }
  for (const auto& pool : demand) {
    if (pool.accelerators > 0) inUse_[{pool.location, pool.machineType, pool.acceleratorType, pool.strategy}] += pool.accelerators;
  }
  return true;
}

void Capacity::release(const std::vector<PoolDemand>& demand) {
  std::lock_guard lock(mutex_);
  for (const auto& pool : demand) {
    if (pool.accelerators <= 0) continue;
    auto found = inUse_.find({pool.location, pool.machineType, pool.acceleratorType, pool.strategy});
    if (found == inUse_.end()) continue;
    found->second -= pool.accelerators;
    if (found->second <= 0) inUse_.erase(found);
  }
}

}  // namespace vto::emulator
