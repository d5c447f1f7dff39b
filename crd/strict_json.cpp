#include "crd/strict_json.h"

#include <algorithm>
#include <set>

namespace vto::crd {

namespace {
thread_local DecodeErrorCollector* activeCollector = nullptr;
}  // namespace

DecodeErrorCollector::DecodeErrorCollector() : previous_(activeCollector) { activeCollector = this; }
DecodeErrorCollector::~DecodeErrorCollector() { activeCollector = previous_; }

void reportDecodeError(DecodeError error) {
  if (!activeCollector) throw error;
  activeCollector->errors_.push_back(std::move(error));
}

std::string joinPath(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

std::string indexPath(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::string describeType(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "a list";
    case json::value_t::string: return "a string (\"" + value.get<std::string>().substr(0, 40) + "\")";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

std::string readString(const json& value, const std::string& path) {
  if (!value.is_string()) throw DecodeError(path, "must be a string, not " + describeType(value) + " (quote it)");
  return value.get<std::string>();
}

Usd readUsd(const json& value, const std::string& path) {
  auto usd = Usd::parse(readString(value, path));
  if (!usd) throw DecodeError(path, "must be US dollars as a string with at most 2 decimals, e.g. \"41.27\"");
  return *usd;
}

bool readBool(const json& value, const std::string& path) {
  if (!value.is_boolean()) throw DecodeError(path, "must be true or false, not " + describeType(value));
  return value.get<bool>();
}

double readNumber(const json& value, const std::string& path) {
  if (!value.is_number()) throw DecodeError(path, "must be a number, not " + describeType(value));
  return value.get<double>();
}

int64_t readInteger(const json& value, const std::string& path, int64_t min, int64_t max) {
  int64_t n = 0;
  if (value.is_number_unsigned()) {
    auto u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      throw DecodeError(path, "must be <= " + std::to_string(max));
    n = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    n = value.get<int64_t>();
  } else {
    throw DecodeError(path, "must be an integer, not " + describeType(value));
  }
  if (n < min) throw DecodeError(path, "must be >= " + std::to_string(min));
  if (n > max) throw DecodeError(path, "must be <= " + std::to_string(max));
  return n;
}

std::vector<std::string> readStringList(const json& value, const std::string& path) {
  return readList<std::string>(value, path, readString);
}

std::map<std::string, std::string> readStringMap(const json& value, const std::string& path) {
  if (!value.is_object()) throw DecodeError(path, "must be a map of strings, not " + describeType(value));
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : value.items()) {
    if (v.is_null()) continue;
    decodeField([&, &k = k, &v = v] { out[k] = readString(v, joinPath(path, k)); });
  }
  return out;
}

ObjectReader::ObjectReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {
  if (!object_.is_object()) throw DecodeError(path_.empty() ? "(document)" : path_, "must be an object, not " + describeType(object_));
}

bool ObjectReader::has(const std::string& key) {
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

const json* ObjectReader::get(const std::string& key) {
  known_.push_back(key);
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

// The well-typed value is read directly; only a bad one pays for its path (an error message).
void ObjectReader::string(const std::string& key, std::string& out) {
  auto* v = get(key);
  if (v == nullptr) return;
  if (v->is_string()) {
    out = v->get_ref<const std::string&>();
  } else {
    decodeField([&] { out = readString(*v, pathOf(key)); });
  }
}
void ObjectReader::boolean(const std::string& key, bool& out) {
  auto* v = get(key);
  if (v == nullptr) return;
  if (v->is_boolean()) {
    out = v->get<bool>();
  } else {
    decodeField([&] { out = readBool(*v, pathOf(key)); });
  }
}
void ObjectReader::number(const std::string& key, double& out) {
  if (auto* v = get(key)) decodeField([&] { out = readNumber(*v, pathOf(key)); });
}
void ObjectReader::number(const std::string& key, std::optional<double>& out) {
  if (auto* v = get(key)) decodeField([&] { out = readNumber(*v, pathOf(key)); });
}
void ObjectReader::stringList(const std::string& key, std::vector<std::string>& out) {
  if (auto* v = get(key)) decodeField([&] { out = readStringList(*v, pathOf(key)); });
}
void ObjectReader::stringMap(const std::string& key, std::map<std::string, std::string>& out) {
  if (auto* v = get(key)) decodeField([&] { out = readStringMap(*v, pathOf(key)); });
}
void ObjectReader::raw(const std::string& key, json& out) {
  if (auto* v = get(key)) out = *v;
}

void ObjectReader::finish() const {
  for (const auto& [key, value] : object_.items()) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::set<std::string> sorted(known_.begin(), known_.end());
    std::string list;
    for (const auto& n : sorted) list += (list.empty() ? "" : ", ") + n;
    reportDecodeError(DecodeError(pathOf(key), "unknown field; the known fields here are: " + list));
  }
}

}  // namespace vto::crd
