#pragma once
// Every rule of docs/API.md "Invalid specs", in one place: used by the reconciler (an error sets
// phase Invalid) and by `vto lint`. The CRD's CEL rules repeat the subset the API server can check;
// the messages here and there say the same thing.
#include <string>
#include <vector>

#include "crd/retraining_policy.h"
#include "crd/training_run.h"

namespace vto::crd {

enum class Severity { Error, Warning };

struct Finding {
  Severity severity = Severity::Error;
  std::string path;     // "spec.distribution.workerCount"
  std::string message;  // what is wrong and what to do instead
};

// Environment variables Vertex sets itself; a user value would break distributed training.
const std::vector<std::string>& reservedEnvNames();

std::vector<Finding> validate(const TrainingRun& run);
std::vector<Finding> validate(const RetrainingPolicy& policy);
// The spec rules alone; `path` is where the spec sits ("spec", "spec.template.spec").
std::vector<Finding> validateTrainingRunSpec(const TrainingRunSpec& spec, const std::string& path);

// Where registration reads a run's metrics file (spec.model.evaluation.metricsFile): `uri`, under the
// artifact directory the tenancy rules checked, or `problem` saying why nothing may be read (the
// directory or the path fails the rules validation holds them to). Checked again where it is read:
// a spec edited after its run succeeded is not validated again before registration.
struct MetricsFileLocation {
  std::string uri;      // gs://BUCKET/ARTIFACT_DIR/FILE
  std::string problem;  // non-empty: read nothing
};
MetricsFileLocation metricsFileOf(const TrainingRunSpec& spec);

bool hasErrors(const std::vector<Finding>& findings);
// "ERROR spec.x: message" / "WARNING spec.x: message".
std::string formatFinding(const Finding& finding);

}  // namespace vto::crd
