#pragma once
// From a TrainingRun to the exact Vertex AI REST body: pure functions, no I/O, no clock.
//
// Worker pools (docs/API.md): None/Mirrored/TPU -> [primary]; MultiWorkerMirrored/PyTorchDDP ->
// [primary, workers, reduction server]; ParameterServer -> [chief, workers, parameter servers,
// evaluator]. A skipped middle pool is {} as Vertex expects. Every pool gets VTO_TRAININGRUN,
// VTO_ATTEMPT and, on a resumed attempt, VTO_RESUME_FROM; a run a RetrainingPolicy created also gets
// the env of its trigger annotations (runEnvAnnotations); the job gets the operator's labels.
#include <map>
#include <utility>
#include <vector>
#include <string>

#include <nlohmann/json.hpp>

#include "base/gcp_names.h"
#include "crd/training_run.h"
#include "vertex/job_kind.h"

namespace vto::crd {

// Labels the operator puts on every Vertex job; the exactly-once lookup filters on the first and
// the attempt.
inline constexpr const char* kRunUidLabel = "vto-run-uid";
inline constexpr const char* kNamespaceLabel = "vto-namespace";
inline constexpr const char* kNameLabel = "vto-name";
inline constexpr const char* kAttemptLabel = "vto-attempt";
inline constexpr const char* kManagedByLabel = "managed-by";
inline constexpr const char* kManagedByValue = "vto";
// The RetrainingPolicy that made the run, and the budget rule that governs it (reconcilers add it).
inline constexpr const char* kPolicyLabel = "vto-policy";
inline constexpr const char* kTeamLabel = "vto-team";
// What the job holds, for the accelerator caps (which count what Vertex runs, whatever becomes of
// the run): its accelerators in all (every pool's count x replicas x parallel trials) and the type
// of its first pool that has any.
inline constexpr const char* kAcceleratorsLabel = "vto-accelerators";
inline constexpr const char* kAcceleratorTypeLabel = "vto-accelerator-type";

// Which kind of Vertex job the run becomes (vertex::collectionName and kindName give its names).
vertex::JobKind jobKindOf(const TrainingRunSpec& spec);

// Where the run's next job goes: the spec's project/location, else the operator's configured defaults.
// (Where a job already runs is read from its name: vertex::locationOf.)
Location locationOf(const TrainingRunSpec& spec, const Location& defaults);
// "projects/P/locations/L"; throws std::invalid_argument naming the missing field.
std::string parentOf(const Location& where);

// attempt >= 1; resumeFrom is the checkpoint URI to resume from, "" on a fresh start.
nlohmann::json renderCustomJob(const TrainingRun& run, int attempt, const std::string& resumeFrom);
nlohmann::json renderHyperparameterTuningJob(const TrainingRun& run, int attempt, const std::string& resumeFrom);
// Chooses between the two by spec.hyperparameterTuning.
nlohmann::json renderJob(const TrainingRun& run, int attempt, const std::string& resumeFrom);
// The labels of the job for this attempt.
std::map<std::string, std::string> jobLabels(const TrainingRun& run, int attempt);

// Annotations a RetrainingPolicy writes on the runs it creates (beside vto.dev/trigger-reason and
// vto.dev/trigger-time), carried into the jobs' env: user env may not set VTO_* variables.
inline constexpr const char* kWarmStartFromAnnotation = "vto.dev/warm-start-from";
inline constexpr const char* kDataWatermarkAnnotation = "vto.dev/data-watermark";
// Each annotation that becomes env, and its variable: VTO_TRIGGER_REASON, VTO_TRIGGER_TIME,
// VTO_WARM_START_FROM, VTO_DATA_WATERMARK.
const std::vector<std::pair<const char*, const char*>>& runEnvAnnotations();

}  // namespace vto::crd
