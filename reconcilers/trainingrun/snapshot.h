#pragma once
// What metrics::TrainingRunObserver needs from a TrainingRun object in the informer cache: the
// machines its job occupies (from the same renderJob() that builds the Vertex request), its phase,
// creation, first start and completion times, and the failure class of each failed attempt.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "crd/training_run.h"
#include "metrics/trainingrun_observer.h"

namespace vto::reconcilers {

// The names of every TrainingRun phase, for metrics::TrainingRunObserver.
std::vector<std::string> trainingRunPhases();

// Never throws: a run that does not decode still counts by phase, with no machines. With
// readPools false the machine pools are left unread (the observer keeps those it has for the
// same generation: see TrainingRunObserver::hasPools).
metrics::RunSnapshot trainingRunSnapshot(const nlohmann::json& object, bool readPools = true);
// The same from a run already decoded from `object` (null: it does not decode), so that one watch
// event is decoded once for all its handlers.
metrics::RunSnapshot trainingRunSnapshot(const nlohmann::json& object, const crd::TrainingRun* decoded, bool readPools);

}  // namespace vto::reconcilers
