#include "controller/kube_json.h"

#include <string>
#include <utility>
#include <vector>

namespace vto::controller {
namespace {

using nlohmann::json;

// nlohmann's SAX interface, building the document as json::parse does, except for the values it is
// told to skip (and everything inside them).
class DomWithoutManagedFields {
 public:
  explicit DomWithoutManagedFields(json& root) : root_(root) {}

  bool null() { return put(nullptr); }
  bool boolean(bool value) { return put(value); }
  bool number_integer(json::number_integer_t value) { return put(value); }
  bool number_unsigned(json::number_unsigned_t value) { return put(value); }
  bool number_float(json::number_float_t value, const json::string_t&) { return put(value); }
  bool string(json::string_t& value) { return put(std::move(value)); }
  bool binary(json::binary_t& value) { return put(json::binary(std::move(value))); }
  bool start_object(std::size_t) { return open(json::value_t::object); }
  bool start_array(std::size_t) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(json::string_t& name) {
    if (skipping_ > 0) return true;
    skipNext_ = name == "managedFields" && !names_.empty() && names_.back() == "metadata";
    key_ = std::move(name);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  // Where the next value goes: the root, a new item of the open array, or the open object's key.
  json& slot() {
    if (open_.empty()) return root_;
    json& parent = *open_.back();
    if (parent.is_array()) return parent.emplace_back();
    return (*parent.get_ptr<json::object_t*>())[key_];
  }
  // True when the value that starts now is to be left out (it, or what holds it).
  bool skipped() {
    if (skipping_ > 0) return true;
    if (!skipNext_) return false;
    skipNext_ = false;
    return true;
  }
  template <typename Value>
  bool put(Value&& value) {
    if (!skipped()) slot() = json(std::forward<Value>(value));
    return true;
  }
  bool open(json::value_t type) {
    if (skipped()) {
      ++skipping_;
      return true;
    }
    bool inObject = !open_.empty() && open_.back()->is_object();
    std::string name = inObject ? key_ : std::string();
    json& value = slot();
    value = json(type);
    open_.push_back(&value);
    names_.push_back(std::move(name));
    return true;
  }
  bool close() {
    if (skipping_ > 0) {
      --skipping_;
    } else {
      open_.pop_back();
      names_.pop_back();
    }
    return true;
  }

  json& root_;
  std::vector<json*> open_;         // the containers being filled, innermost last
  std::vector<std::string> names_;  // the key each of them sits under ("" in an array or at the root)
  std::string key_;                 // the open object's key whose value comes next
  bool skipNext_ = false;           // that value is a metadata.managedFields
  int skipping_ = 0;                // depth inside a value being left out
};

// Finds metadata.resourceVersion of the root object, then stops the parse (returns false): the full
// parse, for texts the quick scan in resourceVersionOf leaves to it.
class ResourceVersionFinder {
 public:
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(json::number_integer_t) { return true; }
  bool number_unsigned(json::number_unsigned_t) { return true; }
  bool number_float(json::number_float_t, const json::string_t&) { return true; }
  bool string(json::string_t& value) {
    if (depth_ != 2 || !inMetadata_ || key_ != "resourceVersion") return true;
    version = std::move(value);
    return false;  // found: the rest of the text is not read
  }
  bool binary(json::binary_t&) { return true; }
  bool start_object(std::size_t) {
    inMetadata_ = depth_ == 1 ? key_ == "metadata" : depth_ > 1 && inMetadata_;
    ++depth_;
    return true;
  }
  bool start_array(std::size_t) {
    if (depth_ == 1) inMetadata_ = false;
    ++depth_;
    return true;
  }
  bool end_object() { return --depth_, true; }
  bool end_array() { return --depth_, true; }
  bool key(json::string_t& name) {
    if (depth_ <= 2) key_ = std::move(name);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  std::string version;

 private:
  int depth_ = 0;
  bool inMetadata_ = false;  // inside the root's "metadata" object
  std::string key_;          // the last key at depth 1 or 2
};

}  // namespace

std::string resourceVersionOf(std::string_view text) {
  // A scan that knows only strings and nesting: the API server writes a custom resource's keys
  // sorted, so metadata.managedFields (half of the bytes) comes before resourceVersion, and a SAX
  // parse would lex all of it. Anything unusual (an escaped key near the root) takes the full parse.
  auto isSpace = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };  // JSON's four
  auto parsed = [&text] {
    ResourceVersionFinder finder;
    json::sax_parse(text.begin(), text.end(), &finder);
    return std::move(finder.version);
  };
  const size_t n = text.size();
  size_t i = 0;
  int depth = 0;
  bool inMetadata = false;  // inside the root's "metadata" object
  std::string_view rootKey, metadataKey;
  while (i < n) {
    char c = text[i];
    if (c == '"') {
      size_t start = ++i;
      bool escaped = false;
      while (i < n && text[i] != '"') {
        if (text[i] == '\\') {
          escaped = true;
          ++i;
        }
        ++i;
      }
      if (i >= n) return "";
      auto string = text.substr(start, i - start);
      ++i;
      while (i < n && isSpace(text[i])) ++i;
      if (escaped && depth <= 2) return parsed();
      if (i < n && text[i] == ':') {  // a key
        if (depth == 1) rootKey = string;
        if (depth == 2 && inMetadata) metadataKey = string;
        ++i;
      } else if (depth == 2 && inMetadata && metadataKey == "resourceVersion") {
        return std::string(string);
      }
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth == 0 && c != '{') return "";
      if (depth == 1) inMetadata = c == '{' && rootKey == "metadata";
      if (depth == 2 && inMetadata) metadataKey = {};  // a nested value: its strings are not the version
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth <= 0) return "";
      if (depth == 1) inMetadata = false;
    } else if (depth == 2 && inMetadata && c != ',' && !isSpace(c)) {
      metadataKey = {};  // a number, true, false or null: not a version
    }
    ++i;
  }
  return "";
}

json parseWithoutManagedFields(std::string_view text) {
  json root;
  DomWithoutManagedFields builder(root);
  if (!json::sax_parse(text.begin(), text.end(), &builder)) return json(json::value_t::discarded);
  return root;
}

}  // namespace vto::controller
