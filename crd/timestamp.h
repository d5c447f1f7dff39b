#pragma once
// Times in manifests and status: RFC 3339 (metav1.Time) on the wire, Clock::time_point in C++. The
// text forms are base/rfc3339.h's; status times vto writes use rfc3339Exact, so writing a decoded
// time back gives the same text (a data watermark keeps GCS's fraction).
#include <string>

#include "base/clock.h"
#include "base/rfc3339.h"
#include "crd/strict_json.h"

namespace vto::crd {

// Decodes a JSON string with parseRfc3339; throws DecodeError naming `path`.
Clock::time_point readTimestamp(const json& value, const std::string& path);

}  // namespace vto::crd
