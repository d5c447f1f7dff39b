#include "controller/object_cache.h"

namespace vto::controller {

ObjectKey keyOf(const nlohmann::json& object) {
  return ObjectKey{object.value("/metadata/namespace"_json_pointer, std::string()),
                   object.value("/metadata/name"_json_pointer, std::string())};
}

std::string versionOf(const nlohmann::json& object) {
  return object.value("/metadata/resourceVersion"_json_pointer, std::string());
}

ObjectCache::ObjectCache(std::string indexedLabel) : indexedLabel_(std::move(indexedLabel)) {}

ObjectCache::Stored ObjectCache::store(const nlohmann::json& object) const {
  Stored stored;
  stored.cbor = nlohmann::json::to_cbor(object);
  stored.cbor.shrink_to_fit();
  stored.resourceVersion = versionOf(object);
  stored.uid = object.value("/metadata/uid"_json_pointer, std::string());
  if (!indexedLabel_.empty()) {
    auto metadata = object.find("metadata");
    if (metadata != object.end() && metadata->is_object()) {
      auto labels = metadata->find("labels");
      if (labels != metadata->end() && labels->is_object()) {
        auto value = labels->find(indexedLabel_);
        if (value != labels->end() && value->is_string()) stored.label = value->get<std::string>();
      }
    }
  }
  return stored;
}

CachedObject ObjectCache::decode(const Stored& stored) {
  return std::make_shared<const nlohmann::json>(nlohmann::json::from_cbor(stored.cbor));
}

CachedObject ObjectCache::get(const ObjectKey& key) const {
  std::shared_lock lock(mutex_);
  auto found = objects_.find(key);
  return found == objects_.end() ? nullptr : decode(found->second);
}

std::string ObjectCache::uidAt(const ObjectKey& key) const {
  std::shared_lock lock(mutex_);
  auto found = objects_.find(key);
  return found == objects_.end() ? std::string() : found->second.uid;
}

std::vector<CachedObject> ObjectCache::list(const std::string& ns) const {
  std::shared_lock lock(mutex_);
  std::vector<CachedObject> out;
  for (const auto& [key, stored] : objects_) {
    if (ns.empty() || key.ns == ns) out.push_back(decode(stored));
  }
  return out;
}

std::vector<CachedObject> ObjectCache::byLabel(const std::string& value) const {
  std::shared_lock lock(mutex_);
  std::vector<CachedObject> out;
  auto found = byLabel_.find(value);
  if (found == byLabel_.end()) return out;
  for (const auto& key : found->second) out.push_back(decode(objects_.at(key)));
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

void ObjectCache::indexLocked(const ObjectKey& key, const Stored* before, const Stored* after) {
  if (before) {
    auto found = byUid_.find(before->uid);
    if (found != byUid_.end() && found->second == key) byUid_.erase(found);
  }
  if (after && !after->uid.empty()) byUid_[after->uid] = key;
  if (indexedLabel_.empty()) return;
  if (before && !before->label.empty()) {
    auto& keys = byLabel_[before->label];
    keys.erase(key);
    if (keys.empty()) byLabel_.erase(before->label);
  }
  if (after && !after->label.empty()) byLabel_[after->label].insert(key);
}

void ObjectCache::upsert(const nlohmann::json& object) {
  auto key = keyOf(object);
  auto stored = store(object);  // encoded before the lock is taken
  std::unique_lock lock(mutex_);
  auto found = objects_.find(key);
  if (found == objects_.end()) {
    indexLocked(key, nullptr, &stored);
    objects_.emplace(key, std::move(stored));
  } else {
    indexLocked(key, &found->second, &stored);
    found->second = std::move(stored);
  }
}

void ObjectCache::erase(const ObjectKey& key) {
  std::unique_lock lock(mutex_);
  auto found = objects_.find(key);
  if (found == objects_.end()) return;
  indexLocked(key, &found->second, nullptr);
  objects_.erase(found);
}

std::vector<CachedObject> ObjectCache::replace(const std::string& ns, nlohmann::json items) {
  std::set<ObjectKey> seen;
  auto changed = merge(std::move(items), seen);
  for (auto& gone : dropUnseen(ns, seen)) changed.push_back(std::move(gone));
  return changed;
}

std::vector<CachedObject> ObjectCache::merge(nlohmann::json items, std::set<ObjectKey>& seen) {
  std::vector<CachedObject> changed;
  for (auto& item : items) {
    auto key = keyOf(item);
    seen.insert(key);
    auto version = versionOf(item);
    {
      std::shared_lock lock(mutex_);
      auto found = objects_.find(key);
      if (found != objects_.end() && found->second.resourceVersion == version) continue;
    }
    upsert(item);
    changed.push_back(std::make_shared<const nlohmann::json>(std::move(item)));
  }
  return changed;
}

std::vector<CachedObject> ObjectCache::dropUnseen(const std::string& ns, const std::set<ObjectKey>& seen) {
  std::unique_lock lock(mutex_);
  std::vector<CachedObject> gone;
  for (auto it = objects_.begin(); it != objects_.end();) {
    bool inScope = ns.empty() || it->first.ns == ns;
    if (inScope && !seen.count(it->first)) {
      indexLocked(it->first, &it->second, nullptr);
      gone.push_back(decode(it->second));  // its last known state
      it = objects_.erase(it);
    } else {
      ++it;
    }
  }
  return gone;
}

}  // namespace vto::controller
