#pragma once
// Finalizers on any object, as controller-runtime's controllerutil does them. The patches carry the
// object's resourceVersion, so they are conditional: written from a stale cache they fail with 409
// and the reconcile is retried on fresh data instead of overwriting someone else's finalizer list.
#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <string_view>

#include "controller/kube_client.h"

namespace vto::controller {

bool containsFinalizer(const nlohmann::json& object, std::string_view finalizer);

// Adds `finalizer` and sets `annotations`, in one patch (a no-op when the finalizer is there and every
// annotation has its value); returns the object as stored afterwards.
nlohmann::json addFinalizer(KubeClient& kube, const Resource& resource, const nlohmann::json& object,
                            std::string_view finalizer, const std::map<std::string, std::string>& annotations = {});
// Removes `finalizer` (a no-op when absent). An object already gone (404) is not an error: once the
// last finalizer goes the API server deletes it, and a retried removal finds nothing.
void removeFinalizer(KubeClient& kube, const Resource& resource, const nlohmann::json& object,
                     std::string_view finalizer);

}  // namespace vto::controller
