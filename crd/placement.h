#pragma once
// Where a run may run (API.md "Capacity failover"). Placement 0 is the spec's own location, resources
// and scheduling; spec.capacity.fallbacks[i] is placement i+1: the spec with the fallback's fields
// merged over it (location replaced; resources and scheduling field by field, a maxWaitDuration
// inherited only while the strategy stays FlexStart). Every placement is validated like the spec.
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "crd/training_run.h"
#include "crd/validation.h"

namespace vto::crd {

// 1 + the number of fallbacks.
size_t placementCount(const TrainingRunSpec& spec);
// The spec as placement `index` makes it (0: the spec itself; any other has no capacity of its own).
// Throws DecodeError naming spec.capacity.fallbacks[index-1] when the merged spec is not a spec.
TrainingRunSpec specAt(const TrainingRunSpec& spec, size_t index);
// Whether any placement asks for accelerators (a CPU-only spec may fall back to GPUs): what the
// accelerator cap must look at before any attempt. A fallback that does not merge into a spec
// counts as asking (validation refuses the run anyway).
bool anyPlacementWantsAccelerators(const TrainingRunSpec& spec);
// "spec.capacity.fallbacks[1]" for placement 2; "spec" for placement 0.
std::string placementPath(size_t index);

// The fallbacks' own problems: an empty entry, a merged spec that does not decode, and every finding
// of the spec rules on placement i that placement 0 does not have (`own`), named under
// spec.capacity.fallbacks[i-1] (e.g. an accelerator the fallback's machine cannot take). `path` is
// where the spec sits ("spec", "spec.template.spec"). validateTrainingRunSpec includes these.
std::vector<Finding> validatePlacements(const TrainingRunSpec& spec, const std::string& path,
                                        const std::vector<Finding>& own);

}  // namespace vto::crd
