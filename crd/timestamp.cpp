#include "crd/timestamp.h"

#include <stdexcept>

namespace vto::crd {

Clock::time_point readTimestamp(const json& value, const std::string& path) {
  auto text = readString(value, path);
  try {
    return parseRfc3339(text);
  } catch (const std::invalid_argument& e) {
    throw DecodeError(path, e.what());
  }
}

void readTime(ObjectReader& r, const std::string& key, std::optional<Clock::time_point>& out) {
  r.with(key, [&](const json& v, const std::string& p) { out = readTimestamp(v, p); });
}

void writeTime(json& out, const char* key, const std::optional<Clock::time_point>& t) {
  if (t) out[key] = rfc3339Exact(*t);
}

}  // namespace vto::crd
