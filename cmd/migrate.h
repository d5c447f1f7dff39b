#pragma once
// Stored objects moved to the storage version (controller/storage_migration.h) for both of vto's
// kinds: at the operator's start on the leader, and as the one-off `vto migrate`.
#include <functional>
#include <string>

#include "controller/kube_client.h"
#include "controller/storage_migration.h"

namespace vto::cmd {

// Migrates TrainingRuns, then RetrainingPolicies; `report` is told of each kind's outcome. Throws on
// the first failure (run it again: objects already written are written again, cheaply).
void migrateStoredObjects(controller::KubeClient& kube,
                          const std::function<void(const std::string& crd, const controller::StorageMigration&)>& report);

}  // namespace vto::cmd
