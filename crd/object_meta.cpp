#include "crd/object_meta.h"

#include <algorithm>

#include "crd/strict_json.h"

namespace vto::crd {

ObjectMeta decodeObjectMeta(const json& value, const std::string& path) {
  if (!value.is_object()) throw DecodeError(path, "must be an object, not " + describeType(value));
  ObjectMeta meta;
  meta.raw = value;
  auto str = [&](const char* key, std::string& out) {
    if (auto it = value.find(key); it != value.end() && !it->is_null()) out = readString(*it, joinPath(path, key));
  };
  str("name", meta.name);
  str("namespace", meta.namespace_);
  str("uid", meta.uid);
  str("resourceVersion", meta.resourceVersion);
  str("creationTimestamp", meta.creationTimestamp);
  str("deletionTimestamp", meta.deletionTimestamp);
  if (auto it = value.find("generation"); it != value.end() && !it->is_null())
    meta.generation = readInteger(*it, joinPath(path, "generation"), 0);
  if (auto it = value.find("labels"); it != value.end() && !it->is_null())
    meta.labels = readStringMap(*it, joinPath(path, "labels"));
  if (auto it = value.find("annotations"); it != value.end() && !it->is_null())
    meta.annotations = readStringMap(*it, joinPath(path, "annotations"));
  return meta;
}

json encodeObjectMeta(const ObjectMeta& meta) {
  json out = meta.raw.is_object() ? meta.raw : json::object();
  auto put = [&](const char* key, const std::string& v) {
    if (v.empty()) out.erase(key);
    else out[key] = v;
  };
  put("name", meta.name);
  put("namespace", meta.namespace_);
  put("uid", meta.uid);
  put("resourceVersion", meta.resourceVersion);
  put("creationTimestamp", meta.creationTimestamp);
  put("deletionTimestamp", meta.deletionTimestamp);
  if (meta.generation) out["generation"] = meta.generation;
  if (meta.labels.empty()) out.erase("labels");
  else out["labels"] = meta.labels;
  if (meta.annotations.empty()) out.erase("annotations");
  else out["annotations"] = meta.annotations;
  return out;
}

namespace {
bool isUid(const std::string& text) {
  if (text.empty() || text.size() > 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-')) return false;
  }
  return true;
}
}  // namespace

std::vector<std::string> runUidsOf(const ObjectMeta& meta) {
  std::vector<std::string> uids;
  auto found = meta.annotations.find(kRunUidsAnnotation);
  if (found == meta.annotations.end() || found->second.size() > kMaxRunUids * 65) return uids;
  const auto& text = found->second;
  for (size_t start = 0; start <= text.size();) {
    auto end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    auto uid = text.substr(start, end - start);
    if (isUid(uid) && std::find(uids.begin(), uids.end(), uid) == uids.end()) uids.push_back(uid);
    start = end + 1;
  }
  if (uids.size() > kMaxRunUids) uids.erase(uids.begin(), uids.end() - kMaxRunUids);
  return uids;
}

std::optional<std::string> runUidsWithOwn(const ObjectMeta& meta) {
  if (!isUid(meta.uid)) return std::nullopt;  // not an API server's uid: nothing could find its jobs by it
  auto uids = runUidsOf(meta);
  if (!uids.empty() && uids.back() == meta.uid) return std::nullopt;
  std::erase(uids, meta.uid);
  uids.push_back(meta.uid);
  if (uids.size() > kMaxRunUids) uids.erase(uids.begin(), uids.end() - kMaxRunUids);
  std::string value;
  for (const auto& uid : uids) value += (value.empty() ? "" : ",") + uid;
  auto found = meta.annotations.find(kRunUidsAnnotation);
  if (found != meta.annotations.end() && found->second == value) return std::nullopt;
  return value;
}

}  // namespace vto::crd
