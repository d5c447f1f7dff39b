#pragma once
// Which accelerators a Vertex machine type can carry, and how many: the table in
// third_party/vertex-api/machine-accelerators.json (compiled in), read once.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vto::crd {

// The AcceleratorType names of the Vertex v1 API (accelerator_type.proto), UNSPECIFIED excluded.
const std::vector<std::string>& vertexAcceleratorTypes();
// Names Vertex no longer accepts for new jobs.
bool isRetiredAccelerator(const std::string& acceleratorType);

struct CompatibilityProblem {
  bool certain = true;     // false: the table does not know, so the caller should only warn
  bool aboutCount = false;  // the accelerator fits but not in this number
  std::string message;  // says what to use instead
};

// The accelerators a machine type carries by itself: accelerator-optimized GPU machines (a2-highgpu-8g,
// g2-standard-8, ...) and TPU machines (cloud-tpu, ct5lp-hightpu-4t, ...).
struct BuiltInAccelerators {
  std::string acceleratorType;  // "" when neither the table nor the name says which (cloud-tpu: TPU_V2 or TPU_V3)
  int64_t count = 0;            // per machine; 0 when neither the table nor the name says
};

// The chips of a TPU slice topology ("2x2" -> 4, "2x2x4" -> 16), or nullopt when `topology` is not
// two or three whole numbers joined by 'x'.
std::optional<int64_t> tpuSliceChips(const std::string& topology);

// What one replica of a worker pool holds while it runs: its accelerators (a TPU slice's chips) and
// the machines (hosts) they sit on. The accelerators are the most of the declared count, what the
// machine type carries by itself (ct5lp-hightpu-4t: 4 chips even with no acceleratorType) and the
// chips of its tpuTopology; a slice larger than one machine spans chips / chips-per-machine hosts
// (a 4x4 slice of ct5lp-hightpu-4t: 16 chips on 4 hosts). The accelerator cap counts these chips
// and the price table prices these hosts and chips: one answer for both.
struct ReplicaUse {
  int64_t accelerators = 0;
  int64_t hosts = 1;
  bool operator==(const ReplicaUse&) const = default;
};
ReplicaUse replicaUseOf(const std::string& machineType, int64_t declaredCount, const std::string& tpuTopology);

// The longest expression the catalog writes into one rule when it joins rules: the API server refuses
// one over 100,000 code points, and the pieces stay well under that.
inline constexpr size_t kMaxJoinedCelExpression = 60000;

// One x-kubernetes-validations rule for the CRD's resources object (self = spec.resources).
struct CelRule {
  std::string rule;
  std::string messageExpression;  // gives the same advice as check()
  std::string fieldPath;          // ".acceleratorType" or ".acceleratorCount", where check() reports it
  // When set, rule is `!(guard) || (body)`: rules that share a guard are joined under one test of it,
  // so that a run the guard excludes pays for one test, not one per rule.
  std::string guard, body;
};
// A rule that only applies when `guard` holds.
CelRule guardedCelRule(const std::string& guard, const std::string& body, std::string messageExpression,
                       std::string fieldPath);

class MachineCatalog {
 public:
  // The compiled-in table.
  static const MachineCatalog& builtIn();
  explicit MachineCatalog(const nlohmann::json& document);

  // nullopt when `machineType` can carry `count` x `acceleratorType` ("" and 0 for none).
  std::optional<CompatibilityProblem> check(const std::string& machineType, const std::string& acceleratorType,
                                            int count) const;

  // What `machineType` carries by itself, from the table or, for machine types it does not list, from
  // the name's family and size (a*-*gpu-Ng: N GPUs; ct*-Nt: N TPU chips; g*-: GPUs, count unknown);
  // nullopt for machines without accelerators of their own (n1-standard-8, ...).
  std::optional<BuiltInAccelerators> builtInAccelerators(const std::string& machineType) const;

  // check()'s certain problems as CEL rules, so the API server refuses them at `kubectl apply`
  // (see crd_yaml.h). Assumes at most one entry per (machine type, accelerator) pair, as in the table.
  std::vector<CelRule> celRules() const;
  // The same rules judged at spec level on each capacity fallback as merged over spec.resources,
  // joined into a few rules (one pass over the fallbacks each).
  std::vector<CelRule> fallbackCelRules() const;

 private:
  struct Offer {
    std::vector<std::string> machineTypes;     // exact names
    std::vector<std::string> machinePrefixes;  // "n1-standard-" for "n1-standard-*"
    std::vector<std::string> acceleratorTypes;
    std::vector<int> counts;  // empty: counts not confirmed, any accepted
    std::map<int, int> maxVcpusPerCount;
    bool matches(const std::string& machineType) const;
    std::string machinesText() const;
  };
  // "a2-highgpu-1g, a2-highgpu-2g, n1-standard-*": the machine types that carry `acceleratorType`.
  std::string machinesFor(const std::string& acceleratorType) const;
  std::vector<Offer> offers_;
};

}  // namespace vto::crd
