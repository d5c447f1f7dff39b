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
                            std::string_view finalizer, const std::map<std::string, std::string>& annotations) {
  const auto* meta = object.contains("metadata") ? &object["metadata"] : nullptr;
  auto changed = nlohmann::json::object();
  for (const auto& [key, value] : annotations) {
    const auto* current = meta != nullptr && meta->contains("annotations") && (*meta)["annotations"].is_object()
                              ? &(*meta)["annotations"] : nullptr;
    if (current == nullptr || !current->contains(key) || (*current)[key] != value) changed[key] = value;
  }
  bool add = !containsFinalizer(object, finalizer);
  if (!add && changed.empty()) return object;
  auto finalizers = finalizersOf(object);
  if (add) finalizers.push_back(std::string(finalizer));
  auto key = keyOf(object);
  auto patch = finalizerPatch(object, finalizers);
  if (!changed.empty()) patch["metadata"]["annotations"] = changed;
  // The patch holds only on the version sent, and neither changes metadata.generation: the object is
  // what was sent, at the answer's resourceVersion.
  auto written = object;
  written["metadata"]["finalizers"] = finalizers;
  for (const auto& [name, value] : changed.items()) written["metadata"]["annotations"][name] = value;
  written["metadata"]["resourceVersion"] = kube.mergePatchVersion(resource, key.ns, key.name, patch);
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
