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

CachedObject ObjectCache::get(const ObjectKey& key) const {
  std::shared_lock lock(mutex_);
  auto found = objects_.find(key);
  return found == objects_.end() ? nullptr : found->second;
}

std::vector<CachedObject> ObjectCache::list(const std::string& ns) const {
  std::shared_lock lock(mutex_);
  std::vector<CachedObject> out;
  for (const auto& [key, object] : objects_) {
    if (ns.empty() || key.ns == ns) out.push_back(object);
  }
  return out;
}

std::vector<CachedObject> ObjectCache::byLabel(const std::string& value) const {
  std::shared_lock lock(mutex_);
  std::vector<CachedObject> out;
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

CachedObject ObjectCache::upsert(nlohmann::json object) {
  auto stored = std::make_shared<const nlohmann::json>(std::move(object));
  auto key = keyOf(*stored);
  std::unique_lock lock(mutex_);
  auto& slot = objects_[key];
  CachedObject before = std::move(slot);
  indexLocked(key, before.get(), stored.get());
  slot = std::move(stored);
  return before;
}

CachedObject ObjectCache::erase(const ObjectKey& key) {
  std::unique_lock lock(mutex_);
  auto found = objects_.find(key);
  if (found == objects_.end()) return nullptr;
  auto before = std::move(found->second);
  objects_.erase(found);
  indexLocked(key, before.get(), nullptr);
  return before;
}

std::vector<CachedObject> ObjectCache::replace(const std::string& ns, nlohmann::json items) {
  std::unique_lock lock(mutex_);
  std::vector<CachedObject> changed;
  std::set<ObjectKey> present;
  for (auto& item : items) {
    auto key = keyOf(item);
    present.insert(key);
    auto found = objects_.find(key);
    if (found != objects_.end() && resourceVersionOf(*found->second) == resourceVersionOf(item)) continue;
    auto stored = std::make_shared<const nlohmann::json>(std::move(item));
    indexLocked(key, found != objects_.end() ? found->second.get() : nullptr, stored.get());
    objects_[key] = stored;
    changed.push_back(std::move(stored));
  }
  for (auto it = objects_.begin(); it != objects_.end();) {
    bool inScope = ns.empty() || it->first.ns == ns;
    if (inScope && !present.count(it->first)) {
      indexLocked(it->first, it->second.get(), nullptr);
      changed.push_back(std::move(it->second));
      it = objects_.erase(it);
    } else {
      ++it;
    }
  }
  return changed;
}

}  // namespace vto::controller
