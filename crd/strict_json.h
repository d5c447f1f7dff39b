#pragma once
// Strict decoding of JSON into C++ types: every error names the field path ("spec.distribution.workerCount")
// and says what is expected, and a field the type does not know is an error instead of being ignored.
// Kubernetes treats `null` like an absent field, so these helpers do too.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/money.h"

namespace vto::crd {

using nlohmann::json;

class DecodeError : public std::runtime_error {
 public:
  DecodeError(std::string path, std::string message)
      : std::runtime_error(path + ": " + message), path_(std::move(path)), message_(std::move(message)) {}
  const std::string& path() const { return path_; }
  const std::string& message() const { return message_; }

 private:
  std::string path_;
  std::string message_;
};

// Collect mode, for `vto lint`: while a DecodeErrorCollector is alive on this thread, a field that fails
// to decode is recorded and keeps its default, and decoding goes on with the next field, so one pass
// finds every problem (as the API server reports them all at once). Without one, the first error throws.
class DecodeErrorCollector {
 public:
  DecodeErrorCollector();
  ~DecodeErrorCollector();
  DecodeErrorCollector(const DecodeErrorCollector&) = delete;
  DecodeErrorCollector& operator=(const DecodeErrorCollector&) = delete;
  std::vector<DecodeError> take() { return std::move(errors_); }

 private:
  friend void reportDecodeError(DecodeError error);
  std::vector<DecodeError> errors_;
  DecodeErrorCollector* previous_;
};

// Records `error` in the active collector, or throws it when none is active.
void reportDecodeError(DecodeError error);
// Runs decode(); a DecodeError it throws is reported as above. False when decode() did not complete.
// A template, not std::function: decoding runs on every reconcile, and a std::function per field
// was a heap allocation per field.
template <typename Decode>
bool decodeField(Decode&& decode) {
  try {
    decode();
    return true;
  } catch (DecodeError& e) {
    reportDecodeError(std::move(e));
    return false;
  }
}

// "spec" + "trainer" -> "spec.trainer"; "" + "spec" -> "spec".
std::string joinPath(const std::string& parent, const std::string& key);
// "spec.args" + 2 -> "spec.args[2]".
std::string indexPath(const std::string& parent, size_t index);
// The JSON type name used in error messages ("a string", "an object", ...).
std::string describeType(const json& value);

std::string readString(const json& value, const std::string& path);
// A dollar string of the status figures and dollar fields ("41.27": Usd::parse).
Usd readUsd(const json& value, const std::string& path);
bool readBool(const json& value, const std::string& path);
double readNumber(const json& value, const std::string& path);
int64_t readInteger(const json& value, const std::string& path,
                    int64_t min = std::numeric_limits<int64_t>::min(),
                    int64_t max = std::numeric_limits<int64_t>::max());
std::vector<std::string> readStringList(const json& value, const std::string& path);
std::map<std::string, std::string> readStringMap(const json& value, const std::string& path);

// Reads one JSON object field by field. Each field read is remembered; finish() then refuses any
// field nobody asked for, so a typo like `workercount` is an error, not a silently ignored field.
class ObjectReader {
 public:
  ObjectReader(const json& object, std::string path);
  const std::string& path() const { return path_; }
  std::string pathOf(const std::string& key) const { return joinPath(path_, key); }

  // Present and not null.
  bool has(const std::string& key);
  // The value of `key` when present and not null (marking it known), else nullptr.
  const json* get(const std::string& key);
  // Calls decode(value, path) when `key` is present and not null.
  template <typename Decode>
  void with(const std::string& key, Decode&& decode) {
    if (auto* v = get(key)) decodeField([&] { decode(*v, pathOf(key)); });
  }

  void string(const std::string& key, std::string& out);
  void boolean(const std::string& key, bool& out);
  void number(const std::string& key, double& out);
  void number(const std::string& key, std::optional<double>& out);
  template <typename Int>
  void integer(const std::string& key, Int& out, int64_t min = std::numeric_limits<Int>::min(),
               int64_t max = std::numeric_limits<Int>::max()) {
    if (auto* v = get(key)) decodeField([&] { out = static_cast<Int>(readInteger(*v, pathOf(key), min, max)); });
  }
  template <typename Int>
  void integer(const std::string& key, std::optional<Int>& out, int64_t min = std::numeric_limits<Int>::min(),
               int64_t max = std::numeric_limits<Int>::max()) {
    if (auto* v = get(key)) decodeField([&] { out = static_cast<Int>(readInteger(*v, pathOf(key), min, max)); });
  }
  void stringList(const std::string& key, std::vector<std::string>& out);
  void stringMap(const std::string& key, std::map<std::string, std::string>& out);
  // Accepts any JSON for `key` without looking inside (pass-through fields).
  void raw(const std::string& key, json& out);
  // Marks keys as known without decoding them (fields decoded elsewhere).
  void ignore(const std::string& key) { known_.push_back(key); }

  // Reports every field that was never asked for (throws on the first outside collect mode).
  void finish() const;

 private:
  const json& object_;
  std::string path_;
  std::vector<std::string> known_;  // a few per object: a vector, searched only by finish()
};

// Decodes each element of a JSON array with decode(element, "path[i]"); in collect mode an element
// that fails is reported and left out.
template <typename T, typename Decode>
std::vector<T> readList(const json& value, const std::string& path, Decode&& decode) {
  if (!value.is_array()) throw DecodeError(path, "must be a list, not " + describeType(value));
  std::vector<T> out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) decodeField([&] { out.push_back(decode(value[i], indexPath(path, i))); });
  return out;
}

}  // namespace vto::crd
