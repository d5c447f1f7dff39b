#pragma once
// Hyperparameter tuning trials without a real tuner: trial N's parameters are a deterministic point
// of the study's search space and its metric a deterministic function of them, so the best trial of
// a finished job can be predicted and checked.
#include <nlohmann/json.hpp>

namespace vto::emulator {

// [{"parameterId": ..., "value": ...}] for trial `index` (0-based) of `studySpec` (canonical JSON).
nlohmann::json trialParameters(const nlohmann::json& studySpec, int index);

// The value of every study metric for those parameters: the mean over parameters of where each
// value sits in its range (0 at the minimum or first category, 1 at the maximum or last), so higher
// parameter values score higher for every metric.
double trialMetric(const nlohmann::json& studySpec, const nlohmann::json& parameters);

}  // namespace vto::emulator
