#pragma once
// Raw Vertex WorkerPoolSpec objects (spec.workerPoolSpecs, the expert form), read as Vertex reads
// them. Vertex's proto3 JSON parser also accepts the snake_case proto names (`machine_spec`,
// `accelerator_count`, ...), enum numbers and digit strings for integers: a pool the tenancy checks
// read one way must not reach Vertex meaning another. So a raw pool, and every object nested in it,
// may hold only Vertex's camelCase JSON names of WorkerPoolSpec and its nested messages (the field
// lists of the discovery document, third_party/vertex-api/), each of the JSON type Vertex
// expects; anything else is a problem that validation refuses, whether or not tenancy rules exist.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vto::crd {

// Bounds of a raw pool's counts (the CRD's maximums say the same). A replica count like
// distribution.workerCount's; an accelerator count no larger than a whole run may hold.
inline constexpr int64_t kMaxRawReplicaCount = 10000;
inline constexpr int64_t kMaxRawAcceleratorCount = 4096;

struct RawPool {
  struct Unreadable {
    std::string field;     // under the pool, e.g. "machineSpec.acceleratorCount", "machine_spec"
    std::string expected;  // e.g. "must be a whole number from 0 to 4096, e.g. 1"
  };
  struct NfsMount {
    std::string server;  // "" when absent
    std::string path;
  };
  struct ReservationAffinity {
    std::string type;  // reservationAffinityType: NO_RESERVATION, ANY_RESERVATION, SPECIFIC_RESERVATION, ...
    std::string key;
    std::vector<std::string> values;
  };
  std::string machineType;               // machineSpec.machineType
  std::string acceleratorType;           // machineSpec.acceleratorType; "" for none (and for ACCELERATOR_TYPE_UNSPECIFIED)
  int64_t acceleratorCount = 0;          // machineSpec.acceleratorCount
  std::string tpuTopology;               // machineSpec.tpuTopology
  int64_t replicaCount = 1;              // replicaCount (absent: 1)
  std::vector<std::string> packageUris;  // pythonPackageSpec.packageUris
  std::string containerImageUri;         // containerSpec.imageUri
  std::string executorImageUri;          // pythonPackageSpec.executorImageUri
  std::vector<NfsMount> nfsMounts;
  std::optional<ReservationAffinity> reservationAffinity;  // machineSpec.reservationAffinity
  size_t lustreMounts = 0;                                 // how many lustreMounts entries
  // Keys that are not Vertex's camelCase names, and values not of the type Vertex reads.
  std::vector<Unreadable> unreadable;
};

// Never throws: what it cannot read is in `unreadable` (and keeps its default).
RawPool readRawPool(const nlohmann::json& pool);

// The table readRawPool holds pools to, for the unit test that compares it with the discovery
// document: message ("WorkerPoolSpec", "MachineSpec", ...: the schema name without its
// GoogleCloudAiplatformV1 prefix) -> field -> its type as the document gives it: "string", "int32",
// "int64", "[]string", a message name ("MachineSpec") or a list of one ("[]EnvVar").
std::map<std::string, std::map<std::string, std::string>> rawPoolSchema();

}  // namespace vto::crd
