#pragma once
// Times in manifests and status: RFC 3339 (metav1.Time) on the wire, Clock::time_point in C++. The
// text forms are base/rfc3339.h's; status times vto writes use rfc3339Exact, so writing a decoded
// time back gives the same text (a data watermark keeps GCS's fraction).
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/rfc3339.h"
#include "crd/strict_json.h"

namespace vto::crd {

// Decodes a JSON string with parseRfc3339; throws DecodeError naming `path`.
Clock::time_point readTimestamp(const json& value, const std::string& path);
// The optional time at `key` of the object `r` reads.
void readTime(ObjectReader& r, const std::string& key, std::optional<Clock::time_point>& out);
// Writes `t` at `key` (rfc3339Exact) when it is set.
void writeTime(json& out, const char* key, const std::optional<Clock::time_point>& t);

}  // namespace vto::crd
