#pragma once
// The parts of metav1.ObjectMeta that vto reads. The full object is kept in `raw`, so writing an
// object back never drops what the API server put there (managedFields, ownerReferences, ...).
#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vto::crd {

// The version vto writes (the CRDs' storage version) and the older one still served, deprecated:
// their schemas are the same, so the API server converts between them with conversion None.
inline constexpr const char* kApiVersion = "vto.dev/v1beta1";
inline constexpr const char* kDeprecatedApiVersion = "vto.dev/v1alpha1";
inline bool isServedApiVersion(const std::string& apiVersion) {
  return apiVersion == kApiVersion || apiVersion == kDeprecatedApiVersion;
}

struct ObjectMeta {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::string resourceVersion;
  int64_t generation = 0;
  std::string creationTimestamp;
  std::string deletionTimestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  nlohmann::json raw = nlohmann::json::object();
};

// The uids a run has had, oldest first and its own last, kept in its metadata: a restore (Velero) drops
// status and uid but keeps annotations, and the jobs labelled with those uids are the run's history.
// A manifest re-applied from Git has no such annotation, so it is a new run.
inline constexpr const char* kRunUidsAnnotation = "vto.dev/run-uids";
inline constexpr size_t kMaxRunUids = 8;
// The annotation's uids: at most kMaxRunUids (the newest), each a Kubernetes uid (lowercase letters, digits and
// '-', at most 64 characters); anything else in it is ignored, since anyone who may edit the run may write it.
std::vector<std::string> runUidsOf(const ObjectMeta& meta);
// The annotation's value once `meta.uid` is in it (appended last, the oldest dropped past the bound);
// nullopt when it already ends with it.
std::optional<std::string> runUidsWithOwn(const ObjectMeta& meta);

// Metadata is the API server's, not the user's, so it is read leniently: only the types of the fields
// above are checked.
ObjectMeta decodeObjectMeta(const nlohmann::json& value, const std::string& path);
nlohmann::json encodeObjectMeta(const ObjectMeta& meta);

}  // namespace vto::crd
