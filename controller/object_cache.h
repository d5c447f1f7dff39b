#pragma once
// The informer's thread-safe copy of the objects it watches, keyed by namespace/name, with an
// optional index on one label's value (e.g. all objects owned by one parent). Objects are stored
// compactly, as CBOR (about a sixth of a parsed nlohmann tree: a cached TrainingRun is ~2 KiB, not
// ~15), and decoded on each read into an object of the reader's own; what the indexes need (uid,
// label, resourceVersion) is kept beside it, so no index operation decodes anything.
#include <map>
#include <memory>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "controller/object_key.h"

namespace vto::controller {

ObjectKey keyOf(const nlohmann::json& object);
// The object's metadata.resourceVersion; empty when it has none.
std::string versionOf(const nlohmann::json& object);

// One cached object; null where there is none.
using CachedObject = std::shared_ptr<const nlohmann::json>;

class ObjectCache {
 public:
  // `indexedLabel`: a label key whose values byLabel() can look up; empty for no index.
  explicit ObjectCache(std::string indexedLabel = "");

  CachedObject get(const ObjectKey& key) const;
  // Objects of namespace `ns`, or of all namespaces when `ns` is empty.
  std::vector<CachedObject> list(const std::string& ns = "") const;
  std::vector<CachedObject> byLabel(const std::string& value) const;
  // The key of the object with metadata.uid `uid` (an index: no walk over the cache).
  std::optional<ObjectKey> keyByUid(const std::string& uid) const;
  size_t size() const;

  // The uid of the object at `key`, without decoding it; empty when there is none.
  std::string uidAt(const ObjectKey& key) const;

  // Mutations, for the informer.
  void upsert(const nlohmann::json& object);
  void erase(const ObjectKey& key);
  // Makes the cache for namespace `ns` (all when empty) hold exactly `items`; returns every object
  // that is new, changed (by resourceVersion) or gone (its last known state).
  std::vector<CachedObject> replace(const std::string& ns, nlohmann::json items);
  // replace() in pieces, for a paged list: merge() each page as it arrives (recording its keys in
  // `seen`), then dropUnseen(); only one page is ever held parsed.
  std::vector<CachedObject> merge(nlohmann::json items, std::set<ObjectKey>& seen);
  std::vector<CachedObject> dropUnseen(const std::string& ns, const std::set<ObjectKey>& seen);

 private:
  struct Stored {
    std::vector<std::uint8_t> cbor;
    std::string resourceVersion;
    std::string uid;
    std::string label;  // the indexed label's value; empty when absent
  };
  Stored store(const nlohmann::json& object) const;
  static CachedObject decode(const Stored& stored);
  void indexLocked(const ObjectKey& key, const Stored* before, const Stored* after);

  std::string indexedLabel_;
  mutable std::shared_mutex mutex_;
  std::map<ObjectKey, Stored> objects_;
  std::map<std::string, std::set<ObjectKey>> byLabel_;
  std::map<std::string, ObjectKey> byUid_;
};

}  // namespace vto::controller
