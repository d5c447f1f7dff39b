#pragma once
// Moving stored objects of a CustomResourceDefinition to its storage version, so that a later
// release may stop serving an older one. As kube-storage-version-migrator does: a write that changes
// nothing still makes the API server encode the object at the current storage version. Every object
// stored before the CRD's storage version changed is written once (a merge patch that names only
// its resourceVersion: no field changes, and `patch` is all the RBAC it needs), then the CRD's
// `status.storedVersions` is set to the storage version alone. Knows nothing about vto's kinds.
#include <cstddef>
#include <string>
#include <vector>

#include "controller/kube_client.h"

namespace vto::controller {

struct StorageMigration {
  std::vector<std::string> storedBefore;  // status.storedVersions as found
  bool needed = false;                    // something other than the storage version was stored
  size_t rewritten = 0;                   // objects written once
  size_t alreadyNewer = 0;                // written by someone since they were listed (so re-encoded anyway), or gone
  bool recorded = false;                  // storedVersions now holds the storage version alone
};

// `resource` is the kind at the version this process speaks, which must be the CRD's storage
// version (else std::runtime_error: the CRDs are older than this vto, upgrade them first). Lists in
// pages of `pageSize`. Throws on any other failure (nothing is recorded then; run it again).
StorageMigration migrateStorage(KubeClient& kube, const std::string& crdName, const Resource& resource, int pageSize = 500);

// apiextensions.k8s.io/v1 customresourcedefinitions (cluster-scoped).
const Resource& customResourceDefinitions();

}  // namespace vto::controller
