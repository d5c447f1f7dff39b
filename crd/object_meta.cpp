#include "crd/object_meta.h"

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

}  // namespace vto::crd
