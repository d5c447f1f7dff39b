#include "controller/finalizers.h"

#include <algorithm>

#include "controller/object_cache.h"

namespace vto::controller {

namespace {
nlohmann::json finalizersOf(const nlohmann::json& object) {
  const auto* found = object.contains("metadata") ? &object["metadata"] : nullptr;
  if (found == nullptr || !found->contains("finalizers") || !(*found)["finalizers"].is_array()) {
    return nlohmann::json::array();
  }
  return (*found)["finalizers"];
}

nlohmann::json finalizerPatch(const nlohmann::json& object, nlohmann::json finalizers) {
  return {{"metadata",
           {{"finalizers", std::move(finalizers)},
            {"resourceVersion", versionOf(object)}}}};
}
}  // namespace

bool containsFinalizer(const nlohmann::json& object, std::string_view finalizer) {
  auto finalizers = finalizersOf(object);
  return std::find(finalizers.begin(), finalizers.end(), finalizer) != finalizers.end();
}

nlohmann::json addFinalizer(KubeClient& kube, const Resource& resource, const nlohmann::json& object,
                            std::string_view finalizer) {
  if (containsFinalizer(object, finalizer)) return object;
  auto finalizers = finalizersOf(object);
  finalizers.push_back(std::string(finalizer));
  auto key = keyOf(object);
  // The patch holds only on the version sent, and a finalizer changes nothing else (not even
  // metadata.generation): the object is what was sent, at the answer's resourceVersion.
  auto written = object;
  written["metadata"]["finalizers"] = finalizers;
  written["metadata"]["resourceVersion"] =
      kube.mergePatchVersion(resource, key.ns, key.name, finalizerPatch(object, std::move(finalizers)));
  return written;
}

void removeFinalizer(KubeClient& kube, const Resource& resource, const nlohmann::json& object,
                     std::string_view finalizer) {
  if (!containsFinalizer(object, finalizer)) return;
  auto finalizers = finalizersOf(object);
  finalizers.erase(std::remove(finalizers.begin(), finalizers.end(), finalizer), finalizers.end());
  auto key = keyOf(object);
  try {
    kube.patch(resource, key.ns, key.name, PatchType::Merge, finalizerPatch(object, std::move(finalizers)));
  } catch (const ApiError& e) {
    if (!e.isNotFound()) throw;
  }
}

}  // namespace vto::controller
