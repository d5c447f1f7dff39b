#include "controller/storage_migration.h"

#include <algorithm>
#include <stdexcept>

#include "base/json_fields.h"
#include "controller/api_error.h"

namespace vto::controller {

namespace {
std::string storageVersionOf(const nlohmann::json& crd) {
  const auto& spec = crd.value("spec", nlohmann::json::object());
  for (const auto& version : spec.value("versions", nlohmann::json::array())) {
    if (version.is_object() && version.value("storage", false)) return stringField(version, "name");
  }
  return "";
}

std::vector<std::string> storedVersionsOf(const nlohmann::json& crd) {
  std::vector<std::string> stored;
  auto status = crd.find("status");
  if (status == crd.end() || !status->is_object()) return stored;
  auto versions = status->find("storedVersions");
  if (versions == status->end() || !versions->is_array()) return stored;
  for (const auto& v : *versions) {
    if (v.is_string()) stored.push_back(v.get<std::string>());
  }
  return stored;
}
}  // namespace

const Resource& customResourceDefinitions() {
  static const Resource crds{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
  return crds;
}

StorageMigration migrateStorage(KubeClient& kube, const std::string& crdName, const Resource& resource, int pageSize) {
  StorageMigration result;
  auto crd = kube.get(customResourceDefinitions(), "", crdName);
  auto storage = storageVersionOf(crd);
  if (storage != resource.version) {
    throw std::runtime_error("the CustomResourceDefinition " + crdName + " stores version \"" + storage + "\", not " +
                             resource.version + " as this vto writes: upgrade the CRDs first (helm upgrade, or `vto crd | "
                             "kubectl apply --server-side -f -`)");
  }
  result.storedBefore = storedVersionsOf(crd);
  result.needed = result.storedBefore != std::vector<std::string>{storage};
  if (!result.needed) return result;

  ListOptions options;
  options.limit = pageSize;
  do {
    auto page = kube.list(resource, "", options);
    for (const auto& item : page.items) {
      const auto& metadata = item.value("metadata", nlohmann::json::object());
      auto ns = stringField(metadata, "namespace");
      auto name = stringField(metadata, "name");
      auto version = stringField(metadata, "resourceVersion");
      try {
        // Conditional on the version listed: a 409 means someone wrote it since, at the storage version.
        kube.patch(resource, ns, name, PatchType::Merge, {{"metadata", {{"resourceVersion", version}}}});
        ++result.rewritten;
      } catch (const ApiError& e) {
        if (e.httpStatus() != 409 && e.httpStatus() != 404) throw;
        ++result.alreadyNewer;
      }
    }
    options.continueToken = page.continueToken;
  } while (!options.continueToken.empty());

  // Recorded only now, and only if the CRD still stores what it stored when the rewrite began.
  auto current = kube.get(customResourceDefinitions(), "", crdName);
  if (storageVersionOf(current) != storage) throw std::runtime_error("the storage version of " + crdName + " changed during the migration");
  kube.patch(customResourceDefinitions(), "", crdName, PatchType::Merge,
             {{"metadata", {{"resourceVersion", stringField(current.value("metadata", nlohmann::json::object()), "resourceVersion")}}},
              {"status", {{"storedVersions", nlohmann::json::array({storage})}}}},
             "", false, "status");
  result.recorded = true;
  return result;
}

}  // namespace vto::controller
