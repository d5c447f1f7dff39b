#include "crd/accelerators.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "crd/machine_catalog.h"
#include "crd/raw_pool.h"
#include "crd/strict_json.h"

namespace vto::crd {
namespace {

// What one machine (a TPU slice: all its hosts) of a pool holds: the chips the price table prices too.
int64_t acceleratorsPerMachine(const std::string& machineType, int64_t declared, const std::string& tpuTopology) {
  return replicaUseOf(machineType, declared, tpuTopology).accelerators;
}

// (field, type) for a machine that names no accelerator type but carries some by itself.
std::optional<std::pair<std::string, std::string>> builtInTypeOf(const std::string& field, const std::string& machineType) {
  auto builtIn = MachineCatalog::builtIn().builtInAccelerators(machineType);
  if (!builtIn) return std::nullopt;
  return std::make_pair(field, builtIn->acceleratorType.empty() ? "accelerators of machine type " + machineType
                                                               : builtIn->acceleratorType);
}

}  // namespace

int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<int64_t>::max() : sum;
}

int64_t saturatingMultiply(int64_t a, int64_t b) {
  int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<int64_t>::max() : product;
}

int64_t parallelTrialsOf(const TrainingRunSpec& spec) {
  return spec.hyperparameterTuning ? std::max<int64_t>(spec.hyperparameterTuning->parallelTrialCount, 1) : 1;
}

int64_t acceleratorsOf(const TrainingRunSpec& spec) {
  int64_t total = 0;
  for (const auto& pool : spec.workerPoolSpecs) {  // the expert form: every pool's machines count
    auto read = readRawPool(pool);
    total = saturatingAdd(total, saturatingMultiply(acceleratorsPerMachine(read.machineType, read.acceleratorCount,
                                                                           read.tpuTopology),
                                                    std::max<int64_t>(read.replicaCount, 0)));
  }
  if (const auto& r = spec.resources) {
    int64_t machines = spec.distribution ? std::max<int64_t>(spec.distribution->workerCount, 1) : 1;
    total = saturatingAdd(total, saturatingMultiply(acceleratorsPerMachine(r->machineType, r->acceleratorCount, r->tpuTopology),
                                                    machines));
  }
  if (const auto& d = spec.distribution) {  // CPU pools, unless their machine type carries accelerators
    for (const auto* pool : {d->parameterServers ? &*d->parameterServers : nullptr, d->evaluator ? &*d->evaluator : nullptr}) {
      if (pool)
        total = saturatingAdd(total, saturatingMultiply(acceleratorsPerMachine(pool->machineType, 0, ""),
                                                        std::max<int64_t>(pool->replicaCount, 0)));
    }
  }
  return saturatingMultiply(total, parallelTrialsOf(spec));
}

std::vector<std::pair<std::string, std::string>> acceleratorTypesOf(const TrainingRunSpec& spec) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](const std::string& at, const std::string& type, const std::string& machineType) {
    if (!type.empty()) out.emplace_back(at + ".acceleratorType", type);
    else if (auto builtIn = builtInTypeOf(at + ".machineType", machineType)) out.push_back(std::move(*builtIn));
  };
  if (const auto& r = spec.resources) add("spec.resources", r->acceleratorType, r->machineType);
  if (const auto& d = spec.distribution) {
    if (d->parameterServers) add("spec.distribution.parameterServers", "", d->parameterServers->machineType);
    if (d->evaluator) add("spec.distribution.evaluator", "", d->evaluator->machineType);
  }
  for (size_t i = 0; i < spec.workerPoolSpecs.size(); ++i) {
    auto read = readRawPool(spec.workerPoolSpecs[i]);
    add(indexPath("spec.workerPoolSpecs", i) + ".machineSpec", read.acceleratorType, read.machineType);
  }
  return out;
}

}  // namespace vto::crd
