#pragma once
// What the emulated training code of a CustomJob leaves in AIP_MODEL_DIR
// (<jobSpec.baseOutputDirectory.outputUriPrefix>/model/) when it succeeds, for Model Registry uploads
// to find: model.txt (a stand-in for a saved model) and metrics.json. Computed from the job's
// resource when its last step ends, so nothing is held per job in between.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emulator/job_store.h"

namespace vto::emulator {

// The environment variables of the first worker pool that steer the model files.
inline constexpr const char* kModelMetricsEnv = "EMULATOR_MODEL_METRICS";  // metrics.json, a JSON object
inline constexpr const char* kNoModelEnv = "EMULATOR_NO_MODEL";            // "1": no model files

struct ModelArtifacts {
  // model.txt then metrics.json (the last completes the job); empty when the job has no
  // baseOutputDirectory or sets EMULATOR_NO_MODEL=1.
  std::vector<CheckpointWrite> writes;
  // Set when EMULATOR_MODEL_METRICS is not a JSON object: the training code crashes with this.
  std::string error;
};

// `customJob`: a CustomJob resource (canonical JSON, with its name); `steps`: the steps it ran.
ModelArtifacts modelArtifactsOf(const nlohmann::json& customJob, int steps);

// {"auc": x} with x in [0.80, 0.95], the same for the same job name and different from job to job.
nlohmann::json defaultModelMetrics(const std::string& jobName);

}  // namespace vto::emulator
