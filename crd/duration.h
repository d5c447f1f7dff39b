#pragma once
// Durations as manifests write them: Kubernetes/Go style ("90s", "30m", "24h", "1h30m") or a plain
// number of seconds (3600 or "3600"). Vertex wants whole seconds, so sub-second units are refused.
#include <cstdint>
#include <optional>
#include <string>

#include "crd/strict_json.h"

namespace vto::crd {

// Longer durations are refused: no training needs them, and the bound keeps arithmetic safe.
inline constexpr int64_t kMaxDurationSeconds = 10LL * 366 * 24 * 3600;

// Seconds, or nullopt when `text` is not a duration or longer than kMaxDurationSeconds. A leading '-' gives a negative value (so that
// validation, not parsing, can say "must be positive").
std::optional<int64_t> parseDurationSeconds(const std::string& text);
// Decodes a JSON integer or duration string; throws DecodeError naming `path` otherwise.
// The result is within +-kMaxDurationSeconds.
int64_t readDuration(const json& value, const std::string& path);
// The shortest Go-style form: 5400 -> "1h30m", 90 -> "1m30s", 0 -> "0s".
std::string formatDuration(int64_t seconds);
// The protobuf JSON form Vertex expects: 3600 -> "3600s".
std::string protoDuration(int64_t seconds);

}  // namespace vto::crd
