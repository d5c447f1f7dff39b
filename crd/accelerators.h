#pragma once
// The accelerators a TrainingRun spec asks for: how many it holds at once and of which types. A fact
// of the spec, read by validation (the per-run ceiling), rendering and placement, and by the tenancy
// rules and the cost model, which must count the same chips.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "crd/training_run.h"

namespace vto::crd {

// The most accelerators one run may hold at once: the largest slice Vertex's accelerator types can
// name (a TPU v4 pod, 4096 chips). Validation refuses a run that needs more, so no count computed
// from a valid spec comes near overflowing; the sums below saturate anyway.
inline constexpr int64_t kMaxAcceleratorsPerRun = 4096;

// a + b and a * b for non-negative counts, saturating at INT64_MAX instead of wrapping negative.
int64_t saturatingAdd(int64_t a, int64_t b);
int64_t saturatingMultiply(int64_t a, int64_t b);

// Trials that run at once: a tuning run's parallelTrialCount (at least 1), else 1. Every count of what
// a run holds at once (accelerators, Kueue's pod sets) is per trial times this.
int64_t parallelTrialsOf(const TrainingRunSpec& spec);

// Accelerators a run holds while its job runs: per machine x machines x parallel trials (with
// workerPoolSpecs, each pool's per-machine count x replicaCount, summed). A machine holds the most
// of: its acceleratorCount, what its machine type carries by itself (MachineCatalog::
// builtInAccelerators: ct5lp-hightpu-4t holds 4 chips even with no acceleratorType), and the
// chips of its tpuTopology. Saturates at INT64_MAX.
int64_t acceleratorsOf(const TrainingRunSpec& spec);

// The accelerator types the run asks for, as (field path, type): resources or every raw pool. A
// machine type that carries accelerators by itself but names none contributes the type it carries
// (or "accelerators of machine type X" when the catalog cannot say which).
std::vector<std::pair<std::string, std::string>> acceleratorTypesOf(const TrainingRunSpec& spec);

}  // namespace vto::crd
