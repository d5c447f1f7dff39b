#include "crd/duration.h"

#include <cctype>
#include <limits>

namespace vto::crd {

std::optional<int64_t> parseDurationSeconds(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t i = 0;
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    i = 1;
  }
  if (i == text.size()) return std::nullopt;
  constexpr int64_t kLimit = kMaxDurationSeconds;
  int64_t total = 0;
  bool sawUnit = false, sawPlainNumber = false;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    int64_t n = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      n = n * 10 + (text[i] - '0');
      if (n > kLimit) return std::nullopt;
      ++i;
    }
    if (i == text.size()) {
      // A bare number is seconds, but only on its own ("90"), never after a unit ("1h30").
      if (sawUnit) return std::nullopt;
      total = n;
      sawPlainNumber = true;
      break;
    }
    int64_t unit = 0;
    switch (text[i]) {
      case 'h': unit = 3600; break;
      case 'm': unit = 60; break;
      case 's': unit = 1; break;
      default: return std::nullopt;
    }
    // "ms" would parse as minutes followed by garbage; refuse sub-second units explicitly.
    if (text[i] == 'm' && i + 1 < text.size() && text[i + 1] == 's') return std::nullopt;
    ++i;
    total += n * unit;
    if (total > kLimit) return std::nullopt;
    sawUnit = true;
  }
  if (!sawUnit && !sawPlainNumber) return std::nullopt;
  return negative ? -total : total;
}

int64_t readDuration(const json& value, const std::string& path) {
  if (value.is_number_integer()) {
    bool tooLong = value.is_number_unsigned()
                       ? value.get<uint64_t>() > static_cast<uint64_t>(kMaxDurationSeconds)
                       : value.get<int64_t>() > kMaxDurationSeconds || value.get<int64_t>() < -kMaxDurationSeconds;
    if (tooLong)
      throw DecodeError(path, "must be at most " + std::to_string(kMaxDurationSeconds) + " seconds (10 years)");
    return value.get<int64_t>();
  }
  if (value.is_string()) {
    if (auto seconds = parseDurationSeconds(value.get<std::string>())) return *seconds;
    throw DecodeError(path, "\"" + value.get<std::string>() +
                                "\" is not a duration; write whole seconds or a duration like 90s, 30m, 24h or 1h30m");
  }
  throw DecodeError(path, "must be a duration like 90s, 30m, 24h or 1h30m, or a number of seconds, not " +
                              describeType(value));
}

std::string formatDuration(int64_t seconds) {
  if (seconds == 0) return "0s";
  std::string out;
  if (seconds < 0) {
    out = "-";
    seconds = -seconds;
  }
  if (seconds >= 3600) out += std::to_string(seconds / 3600) + "h";
  if (seconds % 3600 >= 60) out += std::to_string(seconds % 3600 / 60) + "m";
  if (seconds % 60) out += std::to_string(seconds % 60) + "s";
  return out;
}

std::string protoDuration(int64_t seconds) { return std::to_string(seconds) + "s"; }

}  // namespace vto::crd
