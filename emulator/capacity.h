#pragma once
// Where Vertex has accelerators, and how many a project may hold. Tests and the demo describe it with
// entries (POST /emulator/v1/capacity, --capacity FILE):
//   {"location": "us-central1", "acceleratorType": "NVIDIA_TESLA_A100", "machineType": "", "strategy": "",
//    "available": false, "mode": "fail"}        a job placed there fails after its queue time (or, with
//                                               "hold", stays PENDING until an entry makes it available)
//   {"location": "us-central1", "acceleratorType": "NVIDIA_TESLA_A100", "quota": 8}
//                                               a job beyond 8 such accelerators in unfinished jobs stays
//                                               QUEUED until they free (Vertex's documented behaviour);
//                                               with "quotaMode": "refuse", its create gets a 429 instead
// Empty or absent selector fields match anything; for each worker pool of a job the last entry that
// matches it (and says `available`, or `quota`) decides.
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "emulator/job_store.h"
#include "vertex/vertex_client.h"

namespace vto::emulator {

// The message Vertex writes into a job's error (code 8) when a region has no capacity for it.
std::string stockoutMessage(const std::string& location);

// The quota metric Vertex names in a 429 for this accelerator and scheduling strategy, e.g.
// aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus (preemptible_ for SPOT and FLEX_START).
std::string acceleratorQuotaMetric(const std::string& acceleratorType, const std::string& strategy);

// A Vertex scheduling strategy name (STANDARD, SPOT, FLEX_START; the deprecated ON_DEMAND and
// LOW_COST and STRATEGY_UNSPECIFIED map to STANDARD, SPOT, STANDARD) or vto's spelling (Standard,
// Spot, FlexStart), as one of STANDARD, SPOT, FLEX_START. Throws vertex::ApiError(400) otherwise.
std::string canonicalStrategy(const std::string& name);

// What one worker pool of a job asks for where it is placed.
struct PoolDemand {
  std::string location, machineType, acceleratorType, strategy;  // strategy: STANDARD, SPOT or FLEX_START
  long long accelerators = 0;  // acceleratorCount x replicaCount (x parallelTrialCount for tuning jobs)
};
// The worker pools of `job` (canonical JSON) placed in `location`; empty pools are skipped.
std::vector<PoolDemand> demandOf(const nlohmann::json& job, vertex::JobKind kind, const std::string& location);

struct CapacityEntry {
  std::string location, acceleratorType, machineType, strategy;  // selector; strategy canonical
  std::optional<bool> available;
  bool hold = false;  // mode "hold": a job without capacity stays PENDING instead of failing
  std::optional<long long> quota;
  bool refuseOverQuota = false;  // quotaMode "refuse": a create over the quota gets a 429 (else it queues)
  bool matches(const PoolDemand& demand) const;
  nlohmann::json toJson() const;
  // Throws vertex::ApiError(400) saying what is wrong.
  static CapacityEntry fromJson(const nlohmann::json& body);
};

class Capacity {
 public:
  // `entries`: one entry (an object) or a list of them; a new entry replaces one with the same
  // selector (its other fields are kept unless the new entry sets them) and goes last. Throws
  // vertex::ApiError(400) and changes nothing when any entry is invalid.
  void add(const nlohmann::json& entries);
  void clear();
  nlohmann::json entries() const;  // in the order they apply

  // A job that waited its queue time: Start unless a pool has no capacity (Fail wins over Hold).
  StartDecision decide(const std::vector<PoolDemand>& demand) const;
  // Counts the accelerators of a job being created and returns true; when that would exceed a quota,
  // counts nothing and returns false (the job waits QUEUED for its quota), or, when that quota's entry
  // says quotaMode "refuse", throws vertex::ApiError(429 RESOURCE_EXHAUSTED) naming the quota metric.
  // `refuse` false: never throws (a queued job asking again).
  bool reserve(const std::vector<PoolDemand>& demand, bool refuse = true);
  // The job ended (or was never created): its accelerators are free.
  void release(const std::vector<PoolDemand>& demand);

 private:
  using UsageKey = std::tuple<std::string, std::string, std::string, std::string>;  // location, machine, accelerator, strategy
  static PoolDemand demandAt(const UsageKey& key, long long accelerators);

  mutable std::mutex mutex_;
  std::vector<CapacityEntry> entries_;  // at most kMaxEntries
  std::map<UsageKey, long long> inUse_;  // accelerators of unfinished jobs
};

}  // namespace vto::emulator
