#include "controller/object_cache.h"

namespace vto::controller {

ObjectKey keyOf(const nlohmann::json& object) {
  return ObjectKey{object.value("/metadata/namespace"_json_pointer, std::string()),
                   object.value("/metadata/name"_json_pointer, std::string())};
}

namespace {
std::string resourceVersionOf(const nlohmann::json& object) {
  return object.value("/metadata/resourceVersion"_json_pointer, std::string());
}
std::string uidOf(const nlohmann::json& object) {
  return object.value("/metadata/uid"_json_pointer, std::string());
}
}  // namespace

ObjectCache::ObjectCache(std::string indexedLabel) : indexedLabel_(std::move(indexedLabel)) {}

std::optional<nlohmann::json> ObjectCache::get(const ObjectKey& key) const {
  std::shared_lock lock(mutex_);
  auto found = objects_.find(key);
  if (found == objects_.end()) return std::nullopt;
  return found->second;
}

std::vector<nlohmann::json> ObjectCache::list(const std::string& ns) const {
  std::shared_lock lock(mutex_);
  std::vector<nlohmann::json> out;
  for (const auto& [key, object] : objects_) {
    if (ns.empty() || key.ns == ns) out.push_back(object);
  }
  return out;
}

std::vector<nlohmann::json> ObjectCache::byLabel(const std::string& value) const {
  std::shared_lock lock(mutex_);
  std::vector<nlohmann::json> out;
  auto found = byLabel_.find(value);
  if (found == byLabel_.end()) return out;
  for (const auto& key : found->second) out.push_back(objects_.at(key));
  return out;
}

std::optional<ObjectKey> ObjectCache::keyByUid(const std::string& uid) const {
  std::shared_lock lock(mutex_);
  auto found = byUid_.find(uid);
  if (found == byUid_.end()) return std::nullopt;
  return found->second;
}

size_t ObjectCache::size() const {
  std::shared_lock lock(mutex_);
  return objects_.size();
}

std::string ObjectCache::labelValue(const nlohmann::json& object) const {
  if (indexedLabel_.empty()) return "";
  const auto* labels = object.contains("metadata") && object["metadata"].contains("labels")
                           ? &object["metadata"]["labels"]
                           : nullptr;
  if (!labels || !labels->contains(indexedLabel_) || !(*labels)[indexedLabel_].is_string()) return "";
  return (*labels)[indexedLabel_].get<std::string>();
}

void ObjectCache::indexLocked(const ObjectKey& key, const nlohmann::json* before,
                              const nlohmann::json* after) {
  if (before) {
    auto found = byUid_.find(uidOf(*before));
    if (found != byUid_.end() && found->second == key) byUid_.erase(found);
  }
  if (after && !uidOf(*after).empty()) byUid_[uidOf(*after)] = key;
  if (indexedLabel_.empty()) return;
  if (before) {
    auto value = labelValue(*before);
    if (!value.empty()) {
      auto& keys = byLabel_[value];
      keys.erase(key);
      if (keys.empty()) byLabel_.erase(value);
    }
  }
  if (after) {
    auto value = labelValue(*after);
    if (!value.empty()) byLabel_[value].insert(key);
  }
}

std::optional<nlohmann::json> ObjectCache::upsert(const nlohmann::json& object) {
  std::unique_lock lock(mutex_);
  auto key = keyOf(object);
  std::optional<nlohmann::json> before;
  auto found = objects_.find(key);
  if (found != objects_.end()) before = std::move(found->second);
  indexLocked(key, before ? &*before : nullptr, &object);
  objects_[key] = object;
  return before;
}

std::optional<nlohmann::json> ObjectCache::erase(const ObjectKey& key) {
  std::unique_lock lock(mutex_);
  auto found = objects_.find(key);
  if (found == objects_.end()) return std::nullopt;
  auto before = std::move(found->second);
  objects_.erase(found);
  indexLocked(key, &before, nullptr);
  return before;
}

std::vector<nlohmann::json> ObjectCache::replace(const std::string& ns, const nlohmann::json& items) {
  std::unique_lock lock(mutex_);
  std::vector<nlohmann::json> changed;
  std::set<ObjectKey> present;
  for (const auto& object : items) {
    auto key = keyOf(object);
    present.insert(key);
    auto found = objects_.find(key);
    if (found != objects_.end() && resourceVersionOf(found->second) == resourceVersionOf(object)) {
      continue;
    }
    indexLocked(key, found != objects_.end() ? &found->second : nullptr, &object);
    objects_[key] = object;
    changed.push_back(object);
  }
  for (auto it = objects_.begin(); it != objects_.end();) {
    bool inScope = ns.empty() || it->first.ns == ns;
    if (inScope && !present.count(it->first)) {
      indexLocked(it->first, &it->second, nullptr);
      changed.push_back(std::move(it->second));
      it = objects_.erase(it);
    } else {
      ++it;
    }
  }
  return changed;
}

}  // namespace vto::controller
