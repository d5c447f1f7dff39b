#pragma once
// Stored objects moved to the storage version (controller/storage_migration.h) for both of vto's
// kinds: at the operator's start on the leader, and as the one-off `vto migrate`.
#include <functional>
#include <string>

#include "controller/kube_client.h"
#include "controller/manager.h"
#include "controller/storage_migration.h"

namespace vto::cmd {

// Migrates TrainingRuns, then RetrainingPolicies; `report` is told of each kind's outcome. Throws on
// the first failure (run it again: objects already written are written again, cheaply).
void migrateStoredObjects(controller::KubeClient& kube,
                          const std::function<void(const std::string& crd, const controller::StorageMigration&)>& report);

// `vto run`: the same once on the leader, tried again every minute until it succeeds (RBAC, CRDs not
// upgraded yet). An operator that watches some namespaces only cannot see every object: it says that
// `vto migrate` is for an admin to run instead.
void addStorageMigration(controller::Manager& manager, controller::KubeClient& kube, bool watchesAllNamespaces);

}  // namespace vto::cmd
