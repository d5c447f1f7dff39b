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

}  // namespace vto::crd
